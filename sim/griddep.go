package sim

import (
	"fmt"
	"sync"
)

// Programmatic dependent launch (sm_90; PTX ISA griddepcontrol, CUDA's
// cudaLaunchAttributeProgrammaticStreamSerialization). A launch made with
// Config.Dependent may start while the launches before it on the device
// still run: once every block of the previous launch has executed
// griddepcontrol.launch_dependents or exited. Its threads then run until
// griddepcontrol.wait, which returns when the previous launches have
// completed and their memory operations are visible.
//
// The simulator runs launches one after another, so such a kernel computes
// the expected bytes here whatever it reads early; on a GPU, reading before
// the wait what a launch still running writes gives stale bytes. The
// dependent-launch check (on with the other checks) reports it: a thread of
// a dependent launch that, before its wait, reads a global byte a launch
// that may still run wrote, or writes one such a launch read or wrote.
//
// Which launches may still run: the previous one if it executed
// launch_dependents in some thread (a block's launch_dependents counts once
// every other block has issued it or exited, so one early block suffices to
// let the dependent start before the grid ends), and, if that one was
// itself dependent, those that may still have run when it started. A
// previous launch that never executed launch_dependents triggers at its
// completion; nothing is in flight then. What each checked launch touched is
// recorded per byte; unchecked launches record nothing, so a dependent launch
// after one is not checked against it.

// semDepWait marks griddepcontrol.wait (inst.sem; launch_dependents has none).
const semDepWait = semFence << 1

// depPageBits is the size of the pages the byte sets are kept in.
const depPageBits = 12

type depPage struct{ r, w [1 << depPageBits / 64]uint64 }

// depSet is the global bytes a launch read and wrote.
type depSet struct {
	pages    map[uint64]*depPage
	lastKey  uint64
	lastPage *depPage
}

func newDepSet() *depSet { return &depSet{pages: map[uint64]*depPage{}} }

func (s *depSet) page(key uint64, create bool) *depPage {
	if s.lastPage != nil && s.lastKey == key {
		return s.lastPage
	}
	p := s.pages[key]
	if p == nil {
		if !create {
			return nil
		}
		p = &depPage{}
		s.pages[key] = p
	}
	s.lastKey, s.lastPage = key, p
	return p
}

// add records an access of n bytes at addr (n ≤ 16, aligned: it stays in one page).
func (s *depSet) add(addr uint64, n int, write bool) {
	p := s.page(addr>>depPageBits, true)
	off := addr & (1<<depPageBits - 1)
	set := &p.r
	if write {
		set = &p.w
	}
	for i := off; i < off+uint64(n); i++ {
		set[i/64] |= 1 << (i % 64)
	}
}

// conflict returns the first byte of [addr, addr+n) a read (write false) or
// a write conflicts with: one written, or for a write also one read; -1 if none.
func (s *depSet) conflict(addr uint64, n int, write bool) int {
	p := s.page(addr>>depPageBits, false)
	if p == nil {
		return -1
	}
	off := addr & (1<<depPageBits - 1)
	for i := off; i < off+uint64(n); i++ {
		bit := uint64(1) << (i % 64)
		if p.w[i/64]&bit != 0 || write && p.r[i/64]&bit != 0 {
			return int(i - off)
		}
	}
	return -1
}

// merge adds o's bytes to s.
func (s *depSet) merge(o *depSet) {
	for k, op := range o.pages {
		p := s.page(k, true)
		for i := range p.r {
			p.r[i] |= op.r[i]
			p.w[i] |= op.w[i]
		}
	}
}

// depState is a device's record for the check: what the launches that may
// still run when the next dependent launch starts touched (nil: none).
type depState struct {
	mu       sync.Mutex
	inflight *depSet
}

// depLaunch is one launch's part of the check.
type depLaunch struct {
	before    *depSet // checked against, for a dependent launch (nil: nothing in flight)
	mu        sync.Mutex
	touched   []*depSet // per worker
	triggered bool      // some thread executed launch_dependents
	record    bool      // the module can trigger: keep what the launch touches
}

// startDep sets up the launch's part: a launch records what it touches only if it may let a
// dependent launch start early (its module has launch_dependents), and checks only if it is
// dependent and something may still run. Other launches cost the check nothing.
func (l *launch) startDep() {
	if !l.check {
		return
	}
	d := &l.m.dev.dep
	d.mu.Lock()
	defer d.mu.Unlock()
	var before *depSet
	if l.cfg.Dependent {
		before = d.inflight
	}
	if before != nil || l.m.triggers {
		l.dep = &depLaunch{before: before, record: l.m.triggers}
	}
}

// endDep records what the launch touched as in flight for the next
// dependent launch, or clears the record.
func (l *launch) endDep() {
	d := &l.m.dev.dep
	d.mu.Lock()
	defer d.mu.Unlock()
	if l.dep == nil || !l.dep.triggered {
		d.inflight = nil
		return
	}
	in := newDepSet()
	if l.cfg.Dependent && l.dep.before != nil {
		in.merge(l.dep.before)
	}
	for _, s := range l.dep.touched {
		in.merge(s)
	}
	d.inflight = in
}

// depRecorder returns the set a worker's block records into.
func (l *launch) depRecorder() *depSet {
	if l.dep == nil {
		return nil
	}
	if !l.dep.record {
		return newDepSet() // checked against, never kept
	}
	s := newDepSet()
	l.dep.mu.Lock()
	l.dep.touched = append(l.dep.touched, s)
	l.dep.mu.Unlock()
	return s
}

// depCheck records a global access and, for a dependent launch, reports one
// made before the thread's griddepcontrol.wait that conflicts with a launch
// still in flight.
func (w *warp) depCheck(in *inst, lane int, addr uint64, n int, kind uint8) error {
	b := w.b
	if b.dep == nil {
		return nil
	}
	write := kind != accRead
	if before := b.l.dep.before; before != nil && w.waited&(1<<lane) == 0 {
		if i := before.conflict(addr, n, write); i >= 0 {
			what, by := "reads", "written"
			if write {
				what, by = "writes", "read or written"
			}
			return w.fail(in, lane, "racecheck", "dependent-launch race: this thread %s global byte %#x before griddepcontrol.wait, %s by a launch that may still run",
				what, addr+uint64(i), by)
		}
	}
	if !b.l.dep.record {
		return nil
	}
	if kind == accAtomic {
		b.dep.add(addr, n, false)
	}
	b.dep.add(addr, n, write)
	return nil
}

// execGridDep runs griddepcontrol for the lanes in exec.
func (w *warp) execGridDep(in *inst, exec uint32) {
	if exec == 0 {
		return
	}
	if in.sem&semDepWait != 0 {
		w.waited |= exec
		return
	}
	if d := w.b.l.dep; d != nil {
		d.mu.Lock()
		d.triggered = true
		d.mu.Unlock()
	}
}

// griddep decodes griddepcontrol.launch_dependents and griddepcontrol.wait.
func (d *decoder) griddep() error {
	in, o := d.in, d.o
	in.op, in.class = opGridDep, ClassOther
	switch {
	case o.has("wait"):
		in.sem = semDepWait
	case o.has("launch_dependents"):
	default:
		return fmt.Errorf("griddepcontrol needs .launch_dependents or .wait")
	}
	return d.nargs(0)
}
