package executor

import (
	"errors"
	"fmt"
	"sync"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/tensor"
)

// Double-buffered inputs, the device half of DataLoader(pin_memory=True) with non_blocking
// copies. Every input a run takes (not state kept by Feedback) has a second buffer. Stage packs
// a batch into host memory (pinned, on devices with Streams), and may run in the data loader's
// goroutine; Prefetch uploads it into the second buffers, on the device's copy stream, while the
// launched run computes on the first; the next Launch waits for the upload on the compute stream
// and swaps the buffers. An upload into a buffer waits for the run that last read it.

// prefetch is a Program's double-buffering state.
type prefetch struct {
	alt     []Ptr   // the second buffer of each run input (streamed order), once Prefetch ran
	streams Streams // the device's, or nil: uploads go through Write
	staged  *Staged // uploaded into alt for the next Launch
	running *Staged // the staged inputs of the launched run
	ready   Event   // the upload of staged
	curRead Event   // the compute work of the last run that read the current buffers
	altRead Event   // the same for the buffers in alt
	pool    hostPool
}

// Staged is a batch of a program's inputs packed in host memory by Stage, for Prefetch.
type Staged struct {
	p     *Program
	buf   []byte
	parts []int64 // byte offset of each run input in buf, in streamed order, then the end
	used  bool
}

// hostPool keeps the host buffers of staged batches for reuse. Stage takes from it in the loader's
// goroutine; Wait returns to it.
type hostPool struct {
	mu   sync.Mutex
	free [][]byte
	all  [][]byte
	dev  Streams // pinned allocation, or nil for Go memory; set by Load
}

func (h *hostPool) get(n int64) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, b := range h.free {
		if int64(len(b)) >= n {
			h.free = append(h.free[:i], h.free[i+1:]...)
			return b[:n], nil
		}
	}
	if h.dev == nil || n == 0 {
		return make([]byte, n), nil
	}
	b, err := h.dev.AllocHost(n)
	if err != nil {
		return nil, err
	}
	h.all = append(h.all, b)
	return b, nil
}

func (h *hostPool) put(b []byte) {
	h.mu.Lock()
	h.free = append(h.free, b[:cap(b)])
	h.mu.Unlock()
}

// streamed lists the inputs a run takes, in plan order.
func (p *Program) streamed() []*buffer {
	var bs []*buffer
	for _, in := range p.plan.Inputs {
		if b := p.bufs[artifact.ArgInput][in.Name]; b != nil && !p.resident[in.Name] && !p.linked[in.Name] {
			bs = append(bs, b)
		}
	}
	return bs
}

// Stage checks a run's inputs (as Run takes them) and packs them into host memory for Prefetch:
// pinned memory on a device with Streams, from which the upload copies in place. It may run in
// another goroutine than the program's other methods (a data loader's), but not before Feedback
// nor during Close. The memory returns to the program after the run that used it.
func (p *Program) Stage(inputs map[string]*tensor.Tensor) (*Staged, error) {
	if err := p.staticOnly("prefetching inputs"); err != nil {
		return nil, err
	}
	all, err := p.runInputs(inputs)
	if err != nil {
		return nil, err
	}
	if err := p.check(artifact.ArgInput, all); err != nil {
		return nil, err
	}
	bufs := p.streamed()
	parts := make([]int64, len(bufs)+1)
	for i, b := range bufs {
		parts[i+1] = parts[i] + int64(b.typ.Bytes())
	}
	buf, err := p.pf.pool.get(parts[len(bufs)])
	if err != nil {
		return nil, fmt.Errorf("staging inputs: %v", err)
	}
	for i, b := range bufs {
		copy(buf[parts[i]:parts[i+1]], all[b.name].Bytes())
	}
	return &Staged{p: p, buf: buf, parts: parts}, nil
}

// Prefetch uploads staged inputs into the second input buffers for the next Launch (with nil
// inputs). It may be called while a run is launched and not yet waited for: on a device with
// Streams the copy then overlaps the run's kernels; elsewhere it is a Write, ordered after them.
// One batch at a time: the next Launch must take it before another Prefetch.
func (p *Program) Prefetch(s *Staged) error {
	switch {
	case s == nil || s.p != p:
		return fmt.Errorf("prefetch: inputs staged for another program")
	case s.used:
		return fmt.Errorf("prefetch: these staged inputs were prefetched already")
	case p.pf.staged != nil:
		return fmt.Errorf("prefetch: inputs are prefetched already; launch a run on them first")
	}
	bufs := p.streamed()
	if len(bufs)+1 != len(s.parts) {
		return fmt.Errorf("prefetch: the inputs were staged before Feedback changed them")
	}
	if p.pf.alt == nil {
		for _, b := range bufs {
			n := int64(b.typ.Bytes())
			ptr, err := p.alloc(n, "input "+b.name+" (prefetch)")
			if err != nil {
				return fmt.Errorf("allocating the second buffer of input %s (%d bytes): %v", b.name, n, err)
			}
			p.pf.alt = append(p.pf.alt, ptr)
			p.mem.InputBytes += n
		}
	}
	copies := make([]HostCopy, len(bufs))
	for i := range bufs {
		copies[i] = HostCopy{Dst: p.pf.alt[i], Src: s.buf[s.parts[i]:s.parts[i+1]]}
	}
	if st := p.pf.streams; st != nil {
		ev, err := st.Upload(copies, p.pf.altRead)
		if err != nil {
			return fmt.Errorf("prefetch: %v", err)
		}
		// The upload has captured what it waits for.
		if err := p.release(&p.pf.altRead); err != nil {
			return err
		}
		p.pf.ready = ev
	} else {
		for i, c := range copies {
			if err := p.dev.Write(c.Dst, c.Src); err != nil {
				return fmt.Errorf("prefetch: copying input %s to the device: %v", bufs[i].name, err)
			}
		}
	}
	s.used = true
	p.pf.staged = s
	return nil
}

// useStaged makes the launch being issued read the prefetched inputs: the compute stream waits
// for their upload and the buffers swap.
func (p *Program) useStaged() error {
	if st := p.pf.streams; st != nil && p.pf.ready != 0 {
		if err := st.Wait(p.pf.ready); err != nil {
			return err
		}
		if err := p.release(&p.pf.ready); err != nil {
			return err
		}
	}
	for i, b := range p.streamed() {
		b.ptr, p.pf.alt[i] = p.pf.alt[i], b.ptr
		p.relabel(b)
		if l, ok := p.dev.(Labeler); ok {
			l.Label(p.pf.alt[i], "input "+b.name+" (prefetch)")
		}
	}
	if err := p.release(&p.pf.altRead); err != nil {
		return err
	}
	p.pf.altRead, p.pf.curRead = p.pf.curRead, 0
	p.pf.staged = nil
	return nil
}

// markRead records, once prefetching is in use, the event after a launch's kernels: the next
// upload into the buffers it read waits for it.
func (p *Program) markRead() error {
	st := p.pf.streams
	if st == nil || p.pf.alt == nil {
		return nil
	}
	if err := p.release(&p.pf.curRead); err != nil {
		return err
	}
	ev, err := st.Record()
	if err != nil {
		return err
	}
	p.pf.curRead = ev
	return nil
}

// release hands *e back to the device and clears it.
func (p *Program) release(e *Event) error {
	if *e == 0 {
		return nil
	}
	err := p.pf.streams.Release(*e)
	*e = 0
	return err
}

// closePrefetch releases the events and frees the pinned host memory.
func (p *Program) closePrefetch() error {
	var errs []error
	if p.pf.streams != nil {
		for _, e := range []*Event{&p.pf.ready, &p.pf.curRead, &p.pf.altRead} {
			errs = append(errs, p.release(e))
		}
	}
	h := &p.pf.pool
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dev != nil {
		for _, b := range h.all {
			errs = append(errs, h.dev.FreeHost(b))
		}
	}
	h.all, h.free = nil, nil
	p.pf.staged, p.pf.running = nil, nil
	return errors.Join(errs...)
}
