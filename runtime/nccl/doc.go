// Package nccl binds NVIDIA's collective communication library, libnccl.so.2,
// loaded at run time through purego as runtime/cuda loads the driver: no cgo,
// and a binary that runs (and says what to install) where NCCL is absent.
//
// It covers what data parallelism needs: the version, unique ids and
// communicators (ncclGetUniqueId, ncclCommInitRank, ncclCommInitAll), groups
// (ncclGroupStart/End), the collectives (ncclAllReduce, ncclBroadcast,
// ncclReduceScatter, ncclAllGather) and failure handling
// (ncclCommGetAsyncError, ncclCommAbort, ncclCommDestroy, ncclGetErrorString).
//
//	lib, err := nccl.Load("")            // --nccl-lib, else $GCOMP_NCCL_LIB, else libnccl.so.2
//	comms, err := lib.CommInitAll([]int{0, 1})
//	lib.GroupStart()
//	for i, c := range comms {
//		c.AllReduce(grad[i], grad[i], n, nccl.Float32, nccl.Avg, stream[i])
//	}
//	err = lib.GroupEnd()
//
// Device pointers and CUDA streams are the driver's handles (cuda.DevicePtr,
// cuda.Stream) as integers. Every failing call returns an *Error carrying
// NCCL's result name (ncclUnhandledCudaError ...) and its text.
//
// # The unique id by value
//
// ncclCommInitRank takes its 128-byte ncclUniqueId by value. purego cannot pass
// a structure by value on Linux, and on amd64 the id's sixteen stack words are
// more than purego's fifteen arguments allow. CommInitRank therefore calls
// ncclCommInitRankScalable (NCCL 2.23 and newer), which is ncclCommInitRank with
// the id passed by pointer; on arm64, where the C calling convention passes such
// a structure as a pointer to a copy anyway, an older library's ncclCommInitRank
// is called with the id's address. An older NCCL on amd64 gets a clear error;
// ncclCommInitAll (one process, several GPUs) works with every version.
package nccl
