// A stand-in for libcuda.so.1 that the purego loader's ABI test builds with
// the C compiler: every symbol the loader resolves, with the C signatures of
// CUDA 11.8's cuda.h, working on host memory ("device" pointers are malloc'd).
// It records what the last launch received so the test can check how Go
// values reached C, including cuLaunchKernel's arguments passed on the stack.
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef uint64_t CUdeviceptr;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream, *CUevent;

static uint64_t last_launch[16];
static uint64_t last_wait[3];
static CUcontext current;

// Streams are 0x5757, 0x5758, ... in creation order.
static uintptr_t streams;
static int stream_ok(CUstream s) { return (uintptr_t)s >= 0x5757 && (uintptr_t)s < 0x5757 + streams; }

// fake_last_launch copies what the last cuLaunchKernel received: the
// function, grid, block, shared bytes, stream, and three parameter values.
void fake_last_launch(uint64_t *out) { memcpy(out, last_launch, sizeof last_launch); }

// fake_last_wait copies what the last cuStreamWaitEvent received: the stream, the event, the flags.
void fake_last_wait(uint64_t *out) { memcpy(out, last_wait, sizeof last_wait); }

CUresult cuInit(unsigned flags) { return flags == 0 ? 0 : 1; }
CUresult cuDriverGetVersion(int *v) { *v = 12040; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
CUresult cuDeviceGet(CUdevice *d, int ordinal) { *d = 7; return ordinal == 0 ? 0 : 101; }
CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
	strncpy(name, "Fake C GPU", len);
	return d == 7 ? 0 : 101;
}
CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
	switch (attr) {
	case 16: *v = 84; return 0;
	case 75: *v = 8; return 0;
	case 76: *v = 6; return 0;
	}
	return 1;
}
CUresult cuDeviceTotalMem_v2(size_t *n, CUdevice d) { *n = (size_t)3 << 30; return 0; }
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) { *c = (CUcontext)0xc0c0; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { return d == 7 ? 0 : 101; }
CUresult cuCtxSetCurrent(CUcontext c) { current = c; return 0; }

// cuModuleLoadDataEx rejects an image containing "bogus", writing the error
// log and its length as the real JIT does; otherwise it writes an info log.
CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned n, int *opts, void **vals) {
	int bad = strstr((const char *)image, "bogus") != NULL;
	for (unsigned i = 0; i + 1 < n; i++) {
		if ((opts[i] == 5 && bad) || (opts[i] == 3 && !bad)) {
			const char *msg = bad ? "ptxas application ptx input, line 2; error   : Unknown symbol 'bogus'" : "info: loaded";
			size_t size = (size_t)vals[i + 1];
			strncpy((char *)vals[i], msg, size);
			vals[i + 1] = (void *)strlen(msg);
		}
	}
	if (bad)
		return 218;
	*m = (CUmodule)0x5678;
	return current == (CUcontext)0xc0c0 ? 0 : 201;
}
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
	if (strcmp(name, "k") != 0)
		return 500;
	*f = (CUfunction)0x9abc;
	return 0;
}
CUresult cuModuleUnload(CUmodule m) { return m == (CUmodule)0x5678 ? 0 : 400; }
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
	if (n > ((size_t)1 << 30))
		return 2;
	*p = (CUdeviceptr)(uintptr_t)calloc(1, n);
	return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p) { free((void *)(uintptr_t)p); return 0; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) { memcpy((void *)(uintptr_t)dst, src, n); return 0; }
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) { memcpy(dst, (void *)(uintptr_t)src, n); return 0; }
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
	memcpy((void *)(uintptr_t)dst, src, n);
	return stream_ok(s) ? 0 : 400;
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s) {
	memcpy(dst, (void *)(uintptr_t)src, n);
	return s ? 0 : 400;
}
CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char v, size_t n) { memset((void *)(uintptr_t)p, v, n); return 0; }
CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, CUstream s) {
	memset((void *)(uintptr_t)p, v, n);
	return s ? 0 : 400;
}
CUresult cuMemHostAlloc(void **p, size_t n, unsigned flags) { *p = malloc(n); return flags == 1 ? 0 : 1; }
CUresult cuMemFreeHost(void *p) { free(p); return 0; }
CUresult cuMemGetInfo_v2(size_t *free, size_t *total) { *free = (size_t)1 << 30; *total = (size_t)3 << 30; return 0; }
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
		unsigned shared, CUstream s, void **params, void **extra) {
	uint64_t rec[16] = {(uint64_t)(uintptr_t)f, gx, gy, gz, bx, by, bz, shared, (uint64_t)(uintptr_t)s};
	for (int i = 0; i < 3; i++)
		rec[9 + i] = *(uint64_t *)params[i];
	rec[12] = extra == NULL;
	memcpy(last_launch, rec, sizeof rec);
	return f == (CUfunction)0x9abc ? 0 : 400;
}

// cuLaunchKernelEx records as cuLaunchKernel does, and in rec[13..15] the number of attributes,
// the first one's id and its value's first int (programmaticStreamSerializationAllowed).
typedef struct {
	int id;
	char pad[4];
	union {
		char pad[64];
		int programmaticStreamSerializationAllowed;
	} value;
} CUlaunchAttribute;
typedef struct {
	unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
	CUstream hStream;
	CUlaunchAttribute *attrs;
	unsigned numAttrs;
} CUlaunchConfig;
CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
	uint64_t rec[16] = {(uint64_t)(uintptr_t)f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
		c->blockDimZ, c->sharedMemBytes, (uint64_t)(uintptr_t)c->hStream};
	for (int i = 0; i < 3; i++)
		rec[9 + i] = *(uint64_t *)params[i];
	rec[12] = extra == NULL;
	rec[13] = c->numAttrs;
	if (c->numAttrs > 0) {
		rec[14] = (uint64_t)c->attrs[0].id;
		rec[15] = (uint64_t)c->attrs[0].value.programmaticStreamSerializationAllowed;
	}
	memcpy(last_launch, rec, sizeof rec);
	return f == (CUfunction)0x9abc ? 0 : 400;
}
CUresult cuStreamCreate(CUstream *s, unsigned flags) { *s = (CUstream)(0x5757 + streams++); return flags == 1 ? 0 : 1; }

// Host functions queue per library and run at the next cuStreamSynchronize, each on a thread
// of its own, as the driver runs them on threads Go did not create.
typedef void (*CUhostFn)(void *);
static struct { CUhostFn fn; void *data; } hostfns[16];
static int nhostfns;
CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void *data) {
	if (!stream_ok(s) || fn == NULL || nhostfns == 16)
		return 400;
	hostfns[nhostfns].fn = fn;
	hostfns[nhostfns].data = data;
	nhostfns++;
	return 0;
}
static void *run_hostfn(void *i) {
	hostfns[(intptr_t)i].fn(hostfns[(intptr_t)i].data);
	return NULL;
}
CUresult cuStreamSynchronize(CUstream s) {
	if (!stream_ok(s))
		return 400;
	for (intptr_t i = 0; i < nhostfns; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, run_hostfn, (void *)i) != 0 || pthread_join(t, NULL) != 0)
			return 999;
	}
	nhostfns = 0;
	return 0;
}
CUresult cuStreamDestroy_v2(CUstream s) { return stream_ok(s) ? 0 : 400; }
CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags) {
	last_wait[0] = (uint64_t)(uintptr_t)s;
	last_wait[1] = (uint64_t)(uintptr_t)e;
	last_wait[2] = flags;
	return stream_ok(s) && flags == 0 ? 0 : 400;
}
CUresult cuEventCreate(CUevent *e, unsigned flags) {
	static uintptr_t next = 0xe0;
	*e = (CUevent)next++;
	return flags == 0 ? 0 : 1;
}
CUresult cuEventRecord(CUevent e, CUstream s) { return stream_ok(s) ? 0 : 400; }
CUresult cuEventSynchronize(CUevent e) { return 0; }
CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) { *ms = 2.5f; return (uintptr_t)end == (uintptr_t)start + 1 ? 0 : 400; }
CUresult cuEventDestroy_v2(CUevent e) { return 0; }
static const char *errors[][3] = {
	{"2", "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	{"218", "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
	{"500", "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
};
static CUresult describe(CUresult r, const char **s, int which) {
	for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
		if (atoi(errors[i][0]) == r) {
			*s = errors[i][which];
			return 0;
		}
	}
	return 1;
}
CUresult cuGetErrorName(CUresult r, const char **s) { return describe(r, s, 1); }
CUresult cuGetErrorString(CUresult r, const char **s) { return describe(r, s, 2); }
