package nccl

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/gcomp/gcomp/internal/dynlib"
)

// Load opens the NCCL library named by LibraryPath(lib) and resolves its
// functions. Without a library the error wraps ErrNoLibrary. A library is
// opened once per process and path.
func Load(lib string) (*Library, error) { return openLibrary(LibraryPath(lib)) }

// Library is a loaded libnccl.so.2.
type Library struct {
	path string

	ncclGetVersion           func(v *int32) int32
	ncclGetUniqueId          func(id *UniqueID) int32
	ncclCommInitAll          func(comms *uintptr, n int32, devs *int32) int32
	ncclGroupStart           func() int32
	ncclGroupEnd             func() int32
	ncclAllReduce            func(send, recv uintptr, count uint64, dt, op int32, comm, stream uintptr) int32
	ncclBroadcast            func(send, recv uintptr, count uint64, dt, root int32, comm, stream uintptr) int32
	ncclReduceScatter        func(send, recv uintptr, recvCount uint64, dt, op int32, comm, stream uintptr) int32
	ncclAllGather            func(send, recv uintptr, sendCount uint64, dt int32, comm, stream uintptr) int32
	ncclCommGetAsyncError    func(comm uintptr, r *int32) int32
	ncclCommAbort            func(comm uintptr) int32
	ncclCommDestroy          func(comm uintptr) int32
	ncclGetErrorString       func(r int32) string
	ncclGetLastError         func(comm uintptr) string                                                           // NCCL 2.13+; may be nil
	ncclCommInitRankScalable func(comm *uintptr, n, rank, nID int32, ids *UniqueID, config unsafe.Pointer) int32 // NCCL 2.23+; may be nil
	ncclCommInitRankPtr      func(comm *uintptr, n int32, id *UniqueID, rank int32) int32                        // arm64 only (see doc.go)
}

func (l *Library) symbols() []dynlib.Func {
	return []dynlib.Func{
		{Name: "ncclGetVersion", Ptr: &l.ncclGetVersion},
		{Name: "ncclGetUniqueId", Ptr: &l.ncclGetUniqueId},
		{Name: "ncclCommInitAll", Ptr: &l.ncclCommInitAll},
		{Name: "ncclGroupStart", Ptr: &l.ncclGroupStart},
		{Name: "ncclGroupEnd", Ptr: &l.ncclGroupEnd},
		{Name: "ncclAllReduce", Ptr: &l.ncclAllReduce},
		{Name: "ncclBroadcast", Ptr: &l.ncclBroadcast},
		{Name: "ncclReduceScatter", Ptr: &l.ncclReduceScatter},
		{Name: "ncclAllGather", Ptr: &l.ncclAllGather},
		{Name: "ncclCommGetAsyncError", Ptr: &l.ncclCommGetAsyncError},
		{Name: "ncclCommAbort", Ptr: &l.ncclCommAbort},
		{Name: "ncclCommDestroy", Ptr: &l.ncclCommDestroy},
		{Name: "ncclGetErrorString", Ptr: &l.ncclGetErrorString},
	}
}

// Path is the path the library was opened with.
func (l *Library) Path() string { return l.path }

// err is nil for ncclSuccess, else the call's *Error; comm (0 for none)
// supplies ncclGetLastError's detail.
func (l *Library) err(call string, r int32, comm uintptr) error {
	if r == 0 {
		return nil
	}
	e := &Error{Call: call, Result: Result(r), Text: l.ncclGetErrorString(r)}
	if l.ncclGetLastError != nil {
		if d := l.ncclGetLastError(comm); d != "" && d != e.Text {
			e.Detail = d
		}
	}
	return e
}

// ErrorString is ncclGetErrorString's text for r.
func (l *Library) ErrorString(r Result) string { return l.ncclGetErrorString(int32(r)) }

// Version is ncclGetVersion's code: major*10000 + minor*100 + patch for
// NCCL 2.9 and newer (22304 is 2.23.4).
func (l *Library) Version() (int, error) {
	var v int32
	r := l.ncclGetVersion(&v)
	return int(v), l.err("ncclGetVersion", r, 0)
}

// GetUniqueID makes the id rank 0 shares with the other ranks.
func (l *Library) GetUniqueID() (UniqueID, error) {
	var id UniqueID
	r := l.ncclGetUniqueId(&id)
	return id, l.err("ncclGetUniqueId", r, 0)
}

// CommInitRank joins communicator id as rank of nranks, on the CUDA device
// current on the calling thread: lock the goroutine to its thread and make
// the device's context current first. It returns once every rank has joined
// (call it from one goroutine per rank, or between GroupStart and GroupEnd).
func (l *Library) CommInitRank(nranks int, id UniqueID, rank int) (*Comm, error) {
	var h uintptr
	var r int32
	switch {
	case l.ncclCommInitRankScalable != nil:
		r = l.ncclCommInitRankScalable(&h, int32(nranks), int32(rank), 1, &id, nil)
	case l.ncclCommInitRankPtr != nil:
		r = l.ncclCommInitRankPtr(&h, int32(nranks), &id, int32(rank))
	default:
		return nil, fmt.Errorf("ncclCommInitRank: the NCCL library %s lacks ncclCommInitRankScalable (NCCL 2.23 and newer); on %s gcomp cannot pass ncclCommInitRank's 128-byte id by value without cgo: install NCCL 2.23 or newer", l.path, runtime.GOARCH)
	}
	if err := l.err("ncclCommInitRank", r, 0); err != nil {
		return nil, err
	}
	return &Comm{lib: l, h: h, rank: rank, size: nranks}, nil
}

// CommInitAll makes one communicator per device of devices (CUDA ordinals),
// all of one process; comms[i] is rank i.
func (l *Library) CommInitAll(devices []int) ([]*Comm, error) {
	if len(devices) == 0 {
		return nil, fmt.Errorf("ncclCommInitAll: no devices")
	}
	hs := make([]uintptr, len(devices))
	devs := make([]int32, len(devices))
	for i, d := range devices {
		devs[i] = int32(d)
	}
	if err := l.err("ncclCommInitAll", l.ncclCommInitAll(&hs[0], int32(len(devs)), &devs[0]), 0); err != nil {
		return nil, err
	}
	comms := make([]*Comm, len(hs))
	for i, h := range hs {
		comms[i] = &Comm{lib: l, h: h, rank: i, size: len(hs)}
	}
	return comms, nil
}

// GroupStart opens a group (ncclGroupStart): the calls up to the matching
// GroupEnd are issued together, as one goroutine driving several ranks must.
// NCCL keeps the group per thread, so GroupStart locks the calling goroutine
// to its thread until the matching GroupEnd; make every call of the group
// from that goroutine. Groups nest.
func (l *Library) GroupStart() error {
	runtime.LockOSThread()
	if err := l.err("ncclGroupStart", l.ncclGroupStart(), 0); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	return nil
}

// GroupEnd closes the innermost group; closing the outermost issues its calls.
func (l *Library) GroupEnd() error {
	defer runtime.UnlockOSThread()
	return l.err("ncclGroupEnd", l.ncclGroupEnd(), 0)
}

// Comm is one rank's communicator.
type Comm struct {
	lib        *Library
	rank, size int

	mu   sync.Mutex
	h    uintptr
	gone string // "destroyed" or "aborted" once the handle is freed
}

// Rank is the communicator's rank; Size the number of ranks.
func (c *Comm) Rank() int { return c.rank }
func (c *Comm) Size() int { return c.size }

// handle is the live handle, or an error once the communicator is freed (NCCL
// frees it in ncclCommDestroy and ncclCommAbort: using it after is undefined).
func (c *Comm) handle(call string) (uintptr, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gone != "" {
		return 0, fmt.Errorf("%s: rank %d's communicator was %s", call, c.rank, c.gone)
	}
	return c.h, nil
}

// AllReduce reduces count elements of send over every rank with op and
// leaves the result in recv on every rank (send == recv works in place),
// queued on stream.
func (c *Comm) AllReduce(send, recv uintptr, count int, dt DataType, op RedOp, stream uintptr) error {
	h, err := c.handle("ncclAllReduce")
	if err != nil {
		return err
	}
	return c.lib.err("ncclAllReduce", c.lib.ncclAllReduce(send, recv, uint64(count), int32(dt), int32(op), h, stream), h)
}

// Broadcast copies count elements of root's send into recv on every rank.
func (c *Comm) Broadcast(send, recv uintptr, count int, dt DataType, root int, stream uintptr) error {
	h, err := c.handle("ncclBroadcast")
	if err != nil {
		return err
	}
	return c.lib.err("ncclBroadcast", c.lib.ncclBroadcast(send, recv, uint64(count), int32(dt), int32(root), h, stream), h)
}

// ReduceScatter reduces size×recvCount elements of send over every rank
// and leaves block rank of the result (recvCount elements) in recv.
func (c *Comm) ReduceScatter(send, recv uintptr, recvCount int, dt DataType, op RedOp, stream uintptr) error {
	h, err := c.handle("ncclReduceScatter")
	if err != nil {
		return err
	}
	return c.lib.err("ncclReduceScatter", c.lib.ncclReduceScatter(send, recv, uint64(recvCount), int32(dt), int32(op), h, stream), h)
}

// AllGather gathers sendCount elements from every rank into recv, rank r's
// at element r×sendCount.
func (c *Comm) AllGather(send, recv uintptr, sendCount int, dt DataType, stream uintptr) error {
	h, err := c.handle("ncclAllGather")
	if err != nil {
		return err
	}
	return c.lib.err("ncclAllGather", c.lib.ncclAllGather(send, recv, uint64(sendCount), int32(dt), h, stream), h)
}

// AsyncError is the communicator's asynchronous error (a peer that died, a
// network failure): nil while there is none. A trainer polls it while it
// waits for a collective and calls Abort when it is not nil.
func (c *Comm) AsyncError() error {
	h, err := c.handle("ncclCommGetAsyncError")
	if err != nil {
		return err
	}
	var async int32
	if err := c.lib.err("ncclCommGetAsyncError", c.lib.ncclCommGetAsyncError(h, &async), h); err != nil {
		return err
	}
	if async == 0 || Result(async) == InProgress {
		return nil
	}
	return c.lib.err(fmt.Sprintf("rank %d's communicator (ncclCommGetAsyncError)", c.rank), async, h)
}

// Abort frees the communicator at once, ending its pending operations (the
// way out of a collective a dead peer will never complete).
func (c *Comm) Abort() error { return c.free("aborted", "ncclCommAbort", c.lib.ncclCommAbort) }

// Destroy frees the communicator after its pending operations finish.
func (c *Comm) Destroy() error { return c.free("destroyed", "ncclCommDestroy", c.lib.ncclCommDestroy) }

func (c *Comm) free(state, call string, f func(uintptr) int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gone != "" {
		return fmt.Errorf("%s: rank %d's communicator was already %s", call, c.rank, c.gone)
	}
	r := f(c.h)
	if r == 0 {
		c.gone, c.h = state, 0
		return nil
	}
	return c.lib.err(call, r, c.h)
}
