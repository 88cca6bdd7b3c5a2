// A stand-in for libnccl.so.2 with nccl.h's signatures, for the loader's
// tests: "device" pointers are host pointers, streams are ignored, and the
// collectives compute their results for real once every rank of a
// communicator has called (one thread may issue all ranks' calls). Every
// call is appended to a log the test reads with stub_log.
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int ncclResult_t;
typedef struct { char internal[128]; } ncclUniqueId;
enum { ncclSuccess, ncclUnhandledCudaError, ncclSystemError, ncclInternalError,
       ncclInvalidArgument, ncclInvalidUsage, ncclRemoteError, ncclInProgress };
enum { OP_ALLREDUCE, OP_BROADCAST, OP_REDUCESCATTER, OP_ALLGATHER };

#define MAXRANKS 8

struct pending {
	int kind, set, dtype, op, root;
	const void *send;
	void *recv;
	size_t count;
};

struct clique {
	ncclUniqueId id;
	int nranks;
	struct pending p[MAXRANKS];
};

struct ncclComm {
	struct clique *c;
	int rank, aborted, async;
};
typedef struct ncclComm *ncclComm_t;

static char logbuf[1 << 16];
static size_t loglen;
static int depth;
static int idseq;
static struct clique *cliques[64];
static int ncliques;
static char lasterr[256];

static void logf_(const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(logbuf + loglen, sizeof logbuf - loglen, fmt, ap);
	va_end(ap);
	if (n > 0 && loglen + n < sizeof logbuf) loglen += n;
}

// The test's hooks.
const char *stub_log(void) { logbuf[loglen] = 0; return logbuf; }
void stub_reset(void) { loglen = 0; depth = 0; }
void stub_set_async(ncclComm_t c, int r) { c->async = r; }
void *stub_alloc(size_t n) { return calloc(1, n); }
int stub_depth(void) { return depth; }

const char *ncclGetErrorString(ncclResult_t r) {
	switch (r) {
	case ncclSuccess: return "no error";
	case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
	case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
	case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
	case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
	case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
	case ncclRemoteError: return "remote process exited or there was a network error";
	case ncclInProgress: return "NCCL operation in progress";
	}
	return "unknown result code";
}

const char *ncclGetLastError(ncclComm_t c) { (void)c; return lasterr; }

static ncclResult_t fail(ncclResult_t r, const char *msg) {
	snprintf(lasterr, sizeof lasterr, "%s", msg);
	return r;
}

ncclResult_t ncclGetVersion(int *v) { logf_("ncclGetVersion\n"); *v = 22304; return ncclSuccess; }

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
	memset(id, 0, sizeof *id);
	snprintf(id->internal, sizeof id->internal, "stub-id-%d", ++idseq);
	id->internal[127] = (char)0x7f; // the last byte travels too
	logf_("ncclGetUniqueId %s\n", id->internal);
	return ncclSuccess;
}

static struct clique *find(const ncclUniqueId *id, int nranks) {
	for (int i = 0; i < ncliques; i++)
		if (!memcmp(&cliques[i]->id, id, sizeof *id)) return cliques[i];
	struct clique *c = calloc(1, sizeof *c);
	c->id = *id;
	c->nranks = nranks;
	return cliques[ncliques++] = c;
}

ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nid, ncclUniqueId *ids, void *config) {
	logf_("ncclCommInitRankScalable nranks=%d rank=%d nid=%d id=%s last=%d config=%s depth=%d\n",
	      nranks, rank, nid, ids[0].internal, ids[0].internal[127], config ? "set" : "NULL", depth);
	if (nranks < 1 || nranks > MAXRANKS || rank < 0 || rank >= nranks || nid != 1)
		return fail(ncclInvalidArgument, "bad nranks or rank");
	struct ncclComm *c = calloc(1, sizeof *c);
	c->c = find(&ids[0], nranks);
	c->rank = rank;
	*comm = c;
	return ncclSuccess;
}

ncclResult_t ncclCommInitAll(ncclComm_t *comms, int n, const int *devs) {
	logf_("ncclCommInitAll n=%d devs=", n);
	for (int i = 0; i < n; i++) logf_("%s%d", i ? "," : "", devs[i]);
	logf_("\n");
	if (n < 1 || n > MAXRANKS) return fail(ncclInvalidArgument, "ncclCommInitAll: bad device count");
	ncclUniqueId id;
	memset(&id, 0, sizeof id);
	snprintf(id.internal, sizeof id.internal, "stub-all-%d", ++idseq);
	struct clique *cl = find(&id, n);
	for (int i = 0; i < n; i++) {
		comms[i] = calloc(1, sizeof **comms);
		comms[i]->c = cl;
		comms[i]->rank = i;
	}
	return ncclSuccess;
}

ncclResult_t ncclGroupStart(void) { depth++; logf_("ncclGroupStart depth=%d\n", depth); return ncclSuccess; }

ncclResult_t ncclGroupEnd(void) {
	if (depth == 0) { logf_("ncclGroupEnd unmatched\n"); return fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart"); }
	logf_("ncclGroupEnd depth=%d\n", depth);
	depth--;
	return ncclSuccess;
}

static size_t dsize(int dt) {
	switch (dt) { case 2: case 3: case 7: return 4; case 4: case 5: case 8: return 8; case 6: case 9: return 2; }
	return 1;
}

// reduce applies op over every rank's element i of f32 or i32 data; the stub
// reduces only those (the Go side passes every type through unchanged).
static void reduce(struct clique *c, size_t off, size_t n, void *dst, int dtype, int op) {
	for (size_t i = 0; i < n; i++) {
		if (dtype == 7) {
			float acc = 0;
			for (int r = 0; r < c->nranks; r++) acc += ((const float *)c->p[r].send)[off + i];
			if (op == 4) acc /= c->nranks;
			((float *)dst)[i] = acc;
		} else if (dtype == 2) {
			int32_t acc = 0;
			for (int r = 0; r < c->nranks; r++) acc += ((const int32_t *)c->p[r].send)[off + i];
			if (op == 4) acc /= c->nranks;
			((int32_t *)dst)[i] = acc;
		}
	}
}

static ncclResult_t enqueue(ncclComm_t comm, int kind, const void *send, void *recv, size_t count, int dtype, int op, int root) {
	if (comm->aborted) return fail(ncclInvalidUsage, "communicator aborted");
	if (comm->async) return fail(comm->async, "communicator has an asynchronous error");
	if (dtype < 0 || dtype > 9) return fail(ncclInvalidArgument, "invalid data type");
	if (op < 0 || op > 4) return fail(ncclInvalidArgument, "invalid reduction operation");
	struct clique *c = comm->c;
	struct pending *p = &c->p[comm->rank];
	if (p->set) return fail(ncclInvalidUsage, "rank already has a pending call");
	*p = (struct pending){kind, 1, dtype, op, root, send, recv, count};
	for (int r = 0; r < c->nranks; r++)
		if (!c->p[r].set) return ncclSuccess;
	for (int r = 1; r < c->nranks; r++)
		if (c->p[r].kind != kind || c->p[r].count != count || c->p[r].dtype != dtype) {
			memset(c->p, 0, sizeof c->p);
			return fail(ncclInvalidArgument, "ranks disagree on the call, count or type");
		}
	size_t es = dsize(dtype), n = count;
	for (int r = 0; r < c->nranks; r++) {
		struct pending *q = &c->p[r];
		switch (kind) {
		case OP_ALLREDUCE: break;
		case OP_BROADCAST: memmove(q->recv, c->p[root].send, n * es); break;
		case OP_REDUCESCATTER: break;
		case OP_ALLGATHER:
			for (int s = 0; s < c->nranks; s++) memcpy((char *)q->recv + s * n * es, c->p[s].send, n * es);
			break;
		}
	}
	if (kind == OP_ALLREDUCE || kind == OP_REDUCESCATTER) {
		// Reduce into scratch first: recv may alias another rank's send.
		void *tmp[MAXRANKS];
		for (int r = 0; r < c->nranks; r++) {
			size_t off = kind == OP_ALLREDUCE ? 0 : r * n;
			tmp[r] = malloc(n * es);
			reduce(c, off, n, tmp[r], dtype, op);
		}
		for (int r = 0; r < c->nranks; r++) { memcpy(c->p[r].recv, tmp[r], n * es); free(tmp[r]); }
	}
	memset(c->p, 0, sizeof c->p);
	return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, int dt, int op, ncclComm_t c, void *st) {
	logf_("ncclAllReduce rank=%d send=%s count=%zu dtype=%d op=%d stream=%p depth=%d\n", c->rank, s == r ? "inplace" : "other", n, dt, op, st, depth);
	return enqueue(c, OP_ALLREDUCE, s, r, n, dt, op, 0);
}

ncclResult_t ncclBroadcast(const void *s, void *r, size_t n, int dt, int root, ncclComm_t c, void *st) {
	logf_("ncclBroadcast rank=%d count=%zu dtype=%d root=%d stream=%p depth=%d\n", c->rank, n, dt, root, st, depth);
	if (root < 0 || root >= c->c->nranks) return fail(ncclInvalidArgument, "invalid root");
	return enqueue(c, OP_BROADCAST, s, r, n, dt, 0, root);
}

ncclResult_t ncclReduceScatter(const void *s, void *r, size_t n, int dt, int op, ncclComm_t c, void *st) {
	logf_("ncclReduceScatter rank=%d recvcount=%zu dtype=%d op=%d stream=%p depth=%d\n", c->rank, n, dt, op, st, depth);
	return enqueue(c, OP_REDUCESCATTER, s, r, n, dt, op, 0);
}

ncclResult_t ncclAllGather(const void *s, void *r, size_t n, int dt, ncclComm_t c, void *st) {
	logf_("ncclAllGather rank=%d sendcount=%zu dtype=%d stream=%p depth=%d\n", c->rank, n, dt, st, depth);
	return enqueue(c, OP_ALLGATHER, s, r, n, dt, 0, 0);
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *r) {
	logf_("ncclCommGetAsyncError rank=%d\n", c->rank);
	*r = c->async;
	return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t c) {
	logf_("ncclCommAbort rank=%d\n", c->rank);
	memset(&c->c->p[c->rank], 0, sizeof c->c->p[0]);
	free(c);
	return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t c) {
	logf_("ncclCommDestroy rank=%d\n", c->rank);
	if (c->c->p[c->rank].set) return fail(ncclInvalidUsage, "destroying a communicator with a pending call");
	free(c);
	return ncclSuccess;
}
