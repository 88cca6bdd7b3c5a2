package collective

import (
	"errors"
	"fmt"
	"sync"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/executor"
)

// Memory is the device memory a simulated rank reads its send buffers from
// and writes its results to (an executor.Device is one). It is used from
// the rank's own goroutine, so it must allow a second user.
type Memory interface {
	Read(dst []byte, p executor.Ptr) error
	Write(p executor.Ptr, src []byte) error
}

// NewLocal returns a simulated communicator for each memory (rank i on
// mems[i]), all of one process: a goroutine per rank moves its buffers, and
// the ranks meet in memory.
func NewLocal(mems []Memory, opt Options) ([]Comm, error) {
	if len(mems) == 0 {
		return nil, errors.New("collective: no ranks")
	}
	for i, m := range mems {
		if err := checkMemory(m); err != nil {
			return nil, fmt.Errorf("collective: rank %d: %w", i, err)
		}
	}
	h := newHub(len(mems), opt.timeout())
	comms := make([]Comm, len(mems))
	for i, m := range mems {
		comms[i] = newSimComm(i, len(mems), m, h, nil)
	}
	return comms, nil
}

// simComm is one simulated rank: calls are queued in order and carried out
// by the rank's goroutine, which reads the send buffer, exchanges it and
// writes the result; on a StreamDevice, calls on a stream are carried out
// by the stream (ordered.go).
type simComm struct {
	rank, size int
	mem        Memory
	streams    *StreamDevice // nil: no streams
	ex         exchanger
	onClose    func() error // releases a connection or a server; may be nil

	tasks   chan task
	pending sync.WaitGroup // the worker's tasks
	worker  sync.WaitGroup

	mu     sync.Mutex // guards what the caller's goroutine changes
	seq    uint64
	depth  int
	closed string          // "closed" or "aborted"
	used   map[Stream]bool // streams with calls since the last Wait

	emu sync.Mutex // guards err apart from mu: the worker sets it while issue may wait on a full queue
	err error      // the asynchronous error, sticky
}

type task struct {
	seq        uint64
	c          call
	send, recv executor.Ptr
}

func newSimComm(rank, size int, mem Memory, ex exchanger, onClose func() error) *simComm {
	c := &simComm{rank: rank, size: size, mem: mem, ex: ex, onClose: onClose, tasks: make(chan task, 1024), used: map[Stream]bool{}}
	c.streams, _ = mem.(*StreamDevice)
	c.worker.Add(1)
	go c.run()
	return c
}

func (c *simComm) Rank() int { return c.rank }
func (c *simComm) Size() int { return c.size }

func (c *simComm) run() {
	defer c.worker.Done()
	for t := range c.tasks {
		c.carryOut(t, c.mem)
		c.pending.Done()
	}
}

// carryOut does t with mem unless the communicator has failed, and keeps
// its failure as the asynchronous error.
func (c *simComm) carryOut(t task, mem Memory) {
	if c.AsyncError() != nil {
		return
	}
	if err := c.do(t, mem); err != nil {
		c.emu.Lock()
		if c.err == nil {
			c.err = fmt.Errorf("rank %d: %w", c.rank, err)
		}
		c.emu.Unlock()
	}
}

func (c *simComm) do(t task, mem Memory) error {
	var in []byte
	if t.c.contributes(c.rank) {
		in = make([]byte, t.c.sendElems(c.size)*t.c.DType.Size())
		if err := mem.Read(in, t.send); err != nil {
			return fmt.Errorf("%s #%d: reading the send buffer: %w", t.c, t.seq, err)
		}
	}
	out, err := c.ex.exchange(t.seq, c.rank, t.c, in)
	if err != nil {
		return err
	}
	if err := mem.Write(t.recv, out); err != nil {
		return fmt.Errorf("%s #%d: writing the receive buffer: %w", t.c, t.seq, err)
	}
	return nil
}

func (c *simComm) issue(cl call, send, recv executor.Ptr, s Stream) error {
	if err := cl.validate(c.size); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed != "" {
		return fmt.Errorf("%s: rank %d's %w (%s)", cl.Kind, c.rank, ErrClosed, c.closed)
	}
	if err := c.AsyncError(); err != nil {
		return err
	}
	c.seq++
	t := task{seq: c.seq, c: cl, send: send, recv: recv}
	if s != 0 && c.streams != nil {
		if err := c.queue(t, s); err != nil {
			c.seq-- // the others never see this number
			return err
		}
		return nil
	}
	c.pending.Add(1)
	c.tasks <- t
	return nil
}

func (c *simComm) AllReduce(send, recv executor.Ptr, count int, dt ir.DType, op Op, s Stream) error {
	return c.issue(call{Kind: allReduce, DType: dt, Op: op, Count: count}, send, recv, s)
}

func (c *simComm) Broadcast(send, recv executor.Ptr, count int, dt ir.DType, root int, s Stream) error {
	return c.issue(call{Kind: broadcast, DType: dt, Root: root, Count: count}, send, recv, s)
}

func (c *simComm) AllGather(send, recv executor.Ptr, sendCount int, dt ir.DType, s Stream) error {
	return c.issue(call{Kind: allGather, DType: dt, Count: sendCount}, send, recv, s)
}

func (c *simComm) ReduceScatter(send, recv executor.Ptr, recvCount int, dt ir.DType, op Op, s Stream) error {
	return c.issue(call{Kind: reduceScatter, DType: dt, Op: op, Count: recvCount}, send, recv, s)
}

// GroupStart and GroupEnd only check nesting: simulated calls never block
// the caller, so one goroutine may drive every rank with or without a group.
func (c *simComm) GroupStart() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.depth++
	return nil
}

func (c *simComm) GroupEnd() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.depth == 0 {
		return fmt.Errorf("rank %d: GroupEnd without GroupStart", c.rank)
	}
	c.depth--
	return nil
}

func (c *simComm) Wait() error {
	if err := c.syncStreams(); err != nil {
		return err
	}
	c.pending.Wait()
	return c.AsyncError()
}

func (c *simComm) AsyncError() error {
	c.emu.Lock()
	defer c.emu.Unlock()
	return c.err
}

func (c *simComm) Abort() error { return c.end("aborted") }

func (c *simComm) Close() error {
	c.syncStreams() // a stream that cannot run its calls leaves them to fail once it does
	c.pending.Wait()
	return c.end("closed")
}

func (c *simComm) end(how string) error {
	c.mu.Lock()
	if c.closed != "" {
		c.mu.Unlock()
		return fmt.Errorf("rank %d: %w (%s)", c.rank, ErrClosed, c.closed)
	}
	c.closed = how
	c.mu.Unlock()
	// Leaving first wakes a worker waiting for the others, so the queued
	// calls fail at once; then the queue closes (issue holds mu while it
	// sends, so no send can follow).
	c.ex.leave(c.rank, how+" its communicator")
	c.mu.Lock()
	close(c.tasks)
	c.mu.Unlock()
	c.worker.Wait()
	if c.onClose != nil {
		return c.onClose()
	}
	return nil
}
