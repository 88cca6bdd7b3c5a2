//go:build gorgonia

package cuda

// cuLaunchKernelEx for the gorgonia.org/cu driver, which does not wrap it (pdl.go).

/*
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <cuda.h>

// gcompLaunchDependent launches f with programmatic stream serialization allowed; params holds
// n parameter values, each passed by pointer.
static CUresult gcompLaunchDependent(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
		unsigned bx, unsigned by, unsigned bz, unsigned shared, CUstream s, uint64_t *params, int n) {
	CUlaunchAttribute attr;
	memset(&attr, 0, sizeof attr);
	attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
	attr.value.programmaticStreamSerializationAllowed = 1;
	CUlaunchConfig cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.gridDimX = gx; cfg.gridDimY = gy; cfg.gridDimZ = gz;
	cfg.blockDimX = bx; cfg.blockDimY = by; cfg.blockDimZ = bz;
	cfg.sharedMemBytes = shared;
	cfg.hStream = s;
	cfg.attrs = &attr;
	cfg.numAttrs = 1;
	void *ptrs[n > 0 ? n : 1];
	for (int i = 0; i < n; i++)
		ptrs[i] = &params[i];
	return cuLaunchKernelEx(&cfg, f, ptrs, NULL);
}
*/
import "C"

import "unsafe"

func (g *gorgoniaDriver) LaunchKernelDependent(f Function, grid, block [3]uint32, sharedBytes uint32, s Stream, params []uint64) error {
	fn := get(g, g.funcs, uintptr(f))
	// cu.Function holds the driver's CUfunction as its one field, unexported.
	cf := *(*C.CUfunction)(unsafe.Pointer(&fn))
	vals := (*C.uint64_t)(C.malloc(C.size_t(8 * max(len(params), 1))))
	defer C.free(unsafe.Pointer(vals))
	for i, p := range params {
		*(*C.uint64_t)(unsafe.Add(unsafe.Pointer(vals), 8*i)) = C.uint64_t(p)
	}
	r := C.gcompLaunchDependent(cf, C.uint(grid[0]), C.uint(grid[1]), C.uint(grid[2]), C.uint(block[0]), C.uint(block[1]), C.uint(block[2]),
		C.uint(sharedBytes), g.cStream(s), vals, C.int(len(params)))
	return newError(g, "cuLaunchKernelEx", Result(r))
}
