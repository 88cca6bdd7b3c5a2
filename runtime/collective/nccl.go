package collective

import (
	"fmt"
	"sync"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/nccl"
)

// FromNCCL adapts an NCCL communicator to Comm: the engine on GPUs. Calls
// are queued on their CUDA streams by NCCL; sync waits for one stream (the
// CUDA device's cuStreamSynchronize), and Wait calls it for every stream
// used since the last Wait, then polls ncclCommGetAsyncError.
func FromNCCL(lib *nccl.Library, c *nccl.Comm, sync func(Stream) error) Comm {
	return &ncclComm{lib: lib, c: c, sync: sync, used: map[Stream]bool{}}
}

type ncclComm struct {
	lib  *nccl.Library
	c    *nccl.Comm
	sync func(Stream) error

	mu   sync.Mutex
	used map[Stream]bool
}

var ncclTypes = map[ir.DType]nccl.DataType{
	ir.F32: nccl.Float32, ir.F16: nccl.Float16, ir.BF16: nccl.Bfloat16, ir.F64: nccl.Float64,
	ir.I32: nccl.Int32, ir.I64: nccl.Int64, ir.I8: nccl.Int8, ir.U8: nccl.Uint8,
}

var ncclOps = map[Op]nccl.RedOp{Sum: nccl.Sum, Avg: nccl.Avg}

func (n *ncclComm) Rank() int { return n.c.Rank() }
func (n *ncclComm) Size() int { return n.c.Size() }

// args checks a call and maps its type and reduction to NCCL's.
func (n *ncclComm) args(cl call, s Stream) (nccl.DataType, nccl.RedOp, error) {
	if err := cl.validate(n.Size()); err != nil {
		return 0, 0, err
	}
	n.mu.Lock()
	n.used[s] = true
	n.mu.Unlock()
	return ncclTypes[cl.DType], ncclOps[cl.Op], nil
}

func (n *ncclComm) AllReduce(send, recv executor.Ptr, count int, dt ir.DType, op Op, s Stream) error {
	t, o, err := n.args(call{Kind: allReduce, DType: dt, Op: op, Count: count}, s)
	if err != nil {
		return err
	}
	return n.c.AllReduce(uintptr(send), uintptr(recv), count, t, o, uintptr(s))
}

func (n *ncclComm) Broadcast(send, recv executor.Ptr, count int, dt ir.DType, root int, s Stream) error {
	t, _, err := n.args(call{Kind: broadcast, DType: dt, Root: root, Count: count}, s)
	if err != nil {
		return err
	}
	return n.c.Broadcast(uintptr(send), uintptr(recv), count, t, root, uintptr(s))
}

func (n *ncclComm) AllGather(send, recv executor.Ptr, sendCount int, dt ir.DType, s Stream) error {
	t, _, err := n.args(call{Kind: allGather, DType: dt, Count: sendCount}, s)
	if err != nil {
		return err
	}
	return n.c.AllGather(uintptr(send), uintptr(recv), sendCount, t, uintptr(s))
}

func (n *ncclComm) ReduceScatter(send, recv executor.Ptr, recvCount int, dt ir.DType, op Op, s Stream) error {
	t, o, err := n.args(call{Kind: reduceScatter, DType: dt, Op: op, Count: recvCount}, s)
	if err != nil {
		return err
	}
	return n.c.ReduceScatter(uintptr(send), uintptr(recv), recvCount, t, o, uintptr(s))
}

func (n *ncclComm) GroupStart() error { return n.lib.GroupStart() }
func (n *ncclComm) GroupEnd() error   { return n.lib.GroupEnd() }

func (n *ncclComm) Wait() error {
	n.mu.Lock()
	streams := n.used
	n.used = map[Stream]bool{}
	n.mu.Unlock()
	for s := range streams {
		if err := n.sync(s); err != nil {
			if aerr := n.c.AsyncError(); aerr != nil {
				return fmt.Errorf("%w (and the stream: %v)", aerr, err)
			}
			return err
		}
	}
	return n.c.AsyncError()
}

func (n *ncclComm) AsyncError() error { return n.c.AsyncError() }
func (n *ncclComm) Abort() error      { return n.c.Abort() }

func (n *ncclComm) Close() error {
	if err := n.Wait(); err != nil {
		n.c.Abort()
		return err
	}
	return n.c.Destroy()
}

// StreamOrdered: NCCL's calls are always queued on their stream.
func (n *ncclComm) StreamOrdered() bool { return true }
