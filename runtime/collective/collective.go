package collective

import (
	"errors"
	"fmt"
	"time"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/executor"
)

// Op is a reduction.
type Op int

const (
	// Sum adds the ranks' values.
	Sum Op = iota
	// Avg adds them and divides by the number of ranks (integers truncate
	// toward zero), as ncclAvg does.
	Avg
)

func (o Op) String() string {
	switch o {
	case Sum:
		return "sum"
	case Avg:
		return "avg"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Stream is the CUDA stream a call is queued on (a cuda.Stream handle); 0 is
// the device's default stream. The simulated implementation queues a call on
// its stream when the rank's memory is a StreamDevice and the stream is not
// 0; otherwise it runs the call on the rank's goroutine, in issue order.
type Stream uintptr

// Comm is one rank's communicator. Buffers are device pointers and counts
// are elements of dt; a call returns once it is queued (NCCL: on stream s),
// and its result is there after Wait. A call whose arguments are wrong is an
// error at once; a failure of the collective itself (a peer that left,
// ranks that disagree on a call) is the communicator's asynchronous error,
// reported by Wait and AsyncError, after which every call fails.
type Comm interface {
	// Rank is this communicator's rank, Size the number of ranks.
	Rank() int
	Size() int
	// AllReduce reduces count elements of send over every rank with op into
	// recv on every rank; send == recv is in place.
	AllReduce(send, recv executor.Ptr, count int, dt ir.DType, op Op, s Stream) error
	// Broadcast copies count elements of root's send into every rank's recv.
	Broadcast(send, recv executor.Ptr, count int, dt ir.DType, root int, s Stream) error
	// AllGather puts every rank's sendCount elements into recv, rank r's at
	// element r×sendCount.
	AllGather(send, recv executor.Ptr, sendCount int, dt ir.DType, s Stream) error
	// ReduceScatter reduces Size()×recvCount elements of send over every rank
	// and leaves block Rank() of the result, recvCount elements, in recv.
	ReduceScatter(send, recv executor.Ptr, recvCount int, dt ir.DType, op Op, s Stream) error
	// GroupStart and GroupEnd bracket calls that must be issued together,
	// as one goroutine driving several ranks of a process does with NCCL
	// (ncclGroupStart/End; with NCCL, from one goroutine). Groups nest.
	GroupStart() error
	GroupEnd() error
	// Wait returns when every call issued so far has finished, with the
	// communicator's asynchronous error if there is one.
	Wait() error
	// AsyncError is the asynchronous error without waiting; nil while
	// there is none.
	AsyncError() error
	// Abort ends the communicator at once: pending calls fail, the other
	// ranks' next (or current) collective fails naming this rank.
	Abort() error
	// Close waits for the pending calls and frees the communicator.
	Close() error
}

// DTypes are the element types the collectives move and reduce.
var DTypes = []ir.DType{ir.F32, ir.F16, ir.BF16, ir.F64, ir.I32, ir.I64, ir.I8, ir.U8}

func supported(dt ir.DType) bool {
	for _, d := range DTypes {
		if d == dt {
			return true
		}
	}
	return false
}

// ErrClosed is wrapped by calls on a closed or aborted communicator.
var ErrClosed = errors.New("communicator closed")

// Options configure the simulated implementation.
type Options struct {
	// Timeout bounds how long a rank waits for the others in one collective
	// (and, over TCP, for the ranks to connect); 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxMessage bounds the bytes one rank sends in one collective over TCP;
	// 0 means DefaultMaxMessage.
	MaxMessage int64
}

// Defaults of Options.
const (
	DefaultTimeout    = 5 * time.Minute
	DefaultMaxMessage = 4 << 30
)

func (o Options) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return DefaultTimeout
}

func (o Options) maxMessage() int64 {
	if o.MaxMessage > 0 {
		return o.MaxMessage
	}
	return DefaultMaxMessage
}
