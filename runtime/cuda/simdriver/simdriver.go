// Package simdriver is a cuda.Driver whose GPU is the PTX simulator. The CUDA device's own code
// (staging buffers, stream ordering, argument packing, events, error reporting) runs real compiled
// models through it on machines without a GPU: tests use it, and so can anyone who wants the CUDA
// code path checked short of the hardware.
//
// It reports one device, "PTX simulator", of compute capability 9.0. Work issued to a stream
// (asynchronous copies, memsets, launches, host functions, event records and waits) is queued and runs only when
// the host synchronizes (cuStreamSynchronize, cuEventSynchronize, or a synchronous call, which
// waits for every stream), in an order that keeps each stream's order and every
// cuStreamWaitEvent, and among those orders the one Options.Schedule picks: so work that a
// missing wait leaves unordered can be made to run in the wrong order, as it may on a GPU. A
// kernel that fails does so asynchronously, as on a GPU: its error is returned by the next
// synchronization. Event times are the simulator's wall clock when the record runs. With
// Options.Trace, Trace returns the order the work ran in.
package simdriver

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
)

// Schedule picks which stream runs next when several could.
type Schedule int

const (
	// IssueOrder runs the work issued first, as a GPU with streams to spare tends to.
	IssueOrder Schedule = iota
	// LowStreamFirst runs the stream created first as far as its waits let it before any other:
	// a stream that should wait for another's copies but does not reads stale memory.
	LowStreamFirst
	// HighStreamFirst runs the stream created last first: copies that should wait for another
	// stream's kernels but do not overwrite what the kernels have yet to read.
	HighStreamFirst
	// Random picks among the streams that can run with a generator seeded by Options.Seed: each
	// seed is one interleaving, the same every time.
	Random
)

func (s Schedule) String() string {
	return [...]string{"issue order", "low stream first", "high stream first", "random"}[s]
}

// Options configure a Driver.
type Options struct {
	Schedule Schedule
	Seed     uint64 // Random's
	// Trace keeps the order in which queued work ran (Trace).
	Trace bool
	// NoCheck skips the simulator's memcheck, racecheck and synccheck (simdev.Options.NoCheck).
	NoCheck bool
}

// Driver is a cuda.Driver whose "GPU" is the PTX simulator: device
// memory, modules and launches go to a simdev.Device. It lets the CUDA
// device's own code (staging, ordering, argument packing, events, errors)
// run real compiled models without a GPU. A kernel that fails on the
// simulator fails asynchronously, as on a GPU: at the next synchronization.
// Like the driver, it leaves serializing calls to its caller.
type Driver struct {
	dev       *simdev.Device
	opts      Options
	modules   map[cuda.ModuleHandle]executor.Module
	funcs     []simFunc // Function h is funcs[h-1]
	pending   error
	events    map[cuda.Event]*event
	lastEvent cuda.Event
	streams   map[cuda.Stream][]op // queued work, in issue order
	lastStrm  cuda.Stream
	issued    int // ops issued so far, for IssueOrder

	captures      map[cuda.Stream]*capture // graph.go
	graphs        map[cuda.Graph]*graph
	execs         map[cuda.GraphExec]*graph
	lastGraph     cuda.Graph
	lastExec      cuda.GraphExec
	graphLaunches int

	ran []Ran // what ran, with Options.Trace (hostfunc.go)
	rng *rand.Rand
}

type simFunc struct {
	m    executor.Module
	name string
}

// event is a CUDA event: its records are numbered as issued; done is the last one that ran.
type event struct {
	recorded, done int
	at             time.Time // when record done ran
}

// op is one piece of queued work: run, or (with wait set) waiting until event wait has run
// record gen.
type op struct {
	seq  int
	what string // the call, and a launch's kernel
	run  func()
	wait *event
	gen  int
}

// New returns a driver over a fresh simulated device with all checks on, running queued work in
// issue order.
func New() *Driver { return NewWithOptions(Options{}) }

// NewWithOptions returns a driver over a fresh simulated device, with all checks on unless
// o.NoCheck.
func NewWithOptions(o Options) *Driver {
	return &Driver{dev: simdev.New(simdev.Options{NoCheck: o.NoCheck}), opts: o, rng: rand.New(rand.NewPCG(o.Seed, 0)), modules: map[cuda.ModuleHandle]executor.Module{},
		events: map[cuda.Event]*event{}, streams: map[cuda.Stream][]op{},
		captures: map[cuda.Stream]*capture{}, graphs: map[cuda.Graph]*graph{}, execs: map[cuda.GraphExec]*graph{}}
}

func simErr(call string, code cuda.Result, err error) error {
	return &cuda.Error{Call: call, Code: code, Name: "CUDA_ERROR_" + fmt.Sprint(int(code)), Msg: err.Error()}
}

func (s *Driver) Init() error                                     { return nil }
func (s *Driver) DriverVersion() (int, error)                     { return 12040, nil }
func (s *Driver) DeviceCount() (int, error)                       { return 1, nil }
func (s *Driver) DeviceGet(int) (cuda.DeviceHandle, error)        { return 0, nil }
func (s *Driver) DeviceGetName(cuda.DeviceHandle) (string, error) { return "PTX simulator", nil }
func (s *Driver) DeviceGetAttribute(a cuda.Attribute, _ cuda.DeviceHandle) (int, error) {
	return map[cuda.Attribute]int{cuda.AttrComputeCapabilityMajor: 9, cuda.AttrMultiprocessorCount: 1}[a], nil
}
func (s *Driver) DeviceTotalMem(cuda.DeviceHandle) (int64, error) {
	_, total, err := s.dev.MemInfo()
	return total, err
}
func (s *Driver) DevicePrimaryCtxRetain(cuda.DeviceHandle) (cuda.Context, error) { return 1, nil }
func (s *Driver) DevicePrimaryCtxRelease(cuda.DeviceHandle) error                { return nil }
func (s *Driver) CtxSetCurrent(cuda.Context) error                               { return nil }

func (s *Driver) ModuleLoadDataEx(ptx []byte) (cuda.ModuleHandle, string, error) {
	if len(ptx) >= 4 && string(ptx[:4]) == "\x7fELF" { // a cubin: the simulator runs PTX only
		return 0, "", simErr("cuModuleLoadDataEx", cuda.ResultNoBinaryForGPU, fmt.Errorf("the PTX simulator runs PTX, not cubins"))
	}
	m, err := s.dev.Load(ptx)
	if err != nil {
		return 0, err.Error(), simErr("cuModuleLoadDataEx", cuda.ResultInvalidPTX, err)
	}
	h := cuda.ModuleHandle(len(s.modules) + 1)
	s.modules[h] = m
	return h, "", nil
}

func (s *Driver) ModuleGetFunction(m cuda.ModuleHandle, name string) (cuda.Function, error) {
	s.funcs = append(s.funcs, simFunc{s.modules[m], name})
	return cuda.Function(len(s.funcs)), nil
}

func (s *Driver) ModuleUnload(m cuda.ModuleHandle) error {
	s.drainAll()
	err := s.modules[m].Close()
	delete(s.modules, m)
	return err
}

func (s *Driver) MemAlloc(n int64) (cuda.DevicePtr, error) {
	if err := s.captureGuard("cuMemAlloc_v2"); err != nil {
		return 0, err
	}
	p, err := s.dev.Alloc(n)
	return cuda.DevicePtr(p), err
}

// The synchronous calls wait for every stream first (cuMemFree does; a synchronous copy on the
// legacy stream would not wait for non-blocking streams, but the cuda Device synchronizes before
// one anyway).
func (s *Driver) MemFree(p cuda.DevicePtr) error {
	if err := s.captureGuard("cuMemFree_v2"); err != nil {
		return err
	}
	s.drainAll()
	return s.dev.Free(executor.Ptr(p))
}
func (s *Driver) MemcpyHtoD(dst cuda.DevicePtr, src []byte) error {
	if err := s.captureGuard("cuMemcpyHtoD_v2"); err != nil {
		return err
	}
	s.drainAll()
	return s.dev.Write(executor.Ptr(dst), src)
}
func (s *Driver) MemcpyDtoH(dst []byte, src cuda.DevicePtr) error {
	if err := s.captureGuard("cuMemcpyDtoH_v2"); err != nil {
		return err
	}
	s.drainAll()
	return s.dev.Read(dst, executor.Ptr(src))
}

// The asynchronous copies read and write the host memory when they run, as DMA does.
func (s *Driver) MemcpyHtoDAsync(dst cuda.DevicePtr, src []byte, st cuda.Stream) error {
	return s.enqueue("cuMemcpyHtoDAsync_v2", st, func() error { return s.dev.Write(executor.Ptr(dst), src) })
}
func (s *Driver) MemcpyDtoHAsync(dst []byte, src cuda.DevicePtr, st cuda.Stream) error {
	return s.enqueue("cuMemcpyDtoHAsync_v2", st, func() error { return s.dev.Read(dst, executor.Ptr(src)) })
}
func (s *Driver) MemsetD8(p cuda.DevicePtr, v byte, n int64) error {
	if err := s.captureGuard("cuMemsetD8_v2"); err != nil {
		return err
	}
	if v != 0 {
		return fmt.Errorf("Driver: memset to %d", v)
	}
	s.drainAll()
	return s.dev.Zero(executor.Ptr(p), n)
}
func (s *Driver) MemsetD8Async(p cuda.DevicePtr, v byte, n int64, st cuda.Stream) error {
	if v != 0 {
		return fmt.Errorf("Driver: memset to %d", v)
	}
	return s.enqueue("cuMemsetD8Async", st, func() error { return s.dev.Zero(executor.Ptr(p), n) })
}
func (s *Driver) MemHostAlloc(n int64) ([]byte, error) { return make([]byte, n), nil }
func (s *Driver) MemFreeHost([]byte) error             { return nil }
func (s *Driver) MemGetInfo() (free, total int64, err error) {
	return s.dev.MemInfo()
}

func (s *Driver) LaunchKernel(f cuda.Function, grid, block [3]uint32, shared uint32, st cuda.Stream, params []uint64) error {
	return s.launch("cuLaunchKernel", f, grid, block, shared, st, params, false)
}

// LaunchKernelDependent is cuLaunchKernelEx with programmatic stream serialization allowed: the
// simulator runs the kernel as a dependent launch (sim.Config.Dependent), whose
// griddepcontrol.wait it checks the kernel's reads against.
func (s *Driver) LaunchKernelDependent(f cuda.Function, grid, block [3]uint32, shared uint32, st cuda.Stream, params []uint64) error {
	return s.launch("cuLaunchKernelEx", f, grid, block, shared, st, params, true)
}

func (s *Driver) launch(call string, f cuda.Function, grid, block [3]uint32, shared uint32, st cuda.Stream, params []uint64, pdl bool) error {
	if f < 1 || int(f) > len(s.funcs) {
		return simErr(call, cuda.ResultInvalidHandle, fmt.Errorf("no function %d", f))
	}
	fn := s.funcs[f-1]
	args := make([]executor.Ptr, len(params))
	for i, p := range params {
		args[i] = executor.Ptr(p)
	}
	cfg := executor.LaunchConfig{SharedBytes: int(shared), PDL: pdl}
	for i := range 3 {
		cfg.Grid[i], cfg.Block[i] = int(grid[i]), int(block[i])
	}
	return s.enqueue(call+" "+fn.name, st, func() error {
		_, err := fn.m.Launch(fn.name, cfg, args)
		return err
	})
}

func (s *Driver) StreamCreate() (cuda.Stream, error) {
	s.lastStrm++
	s.streams[s.lastStrm] = nil
	return s.lastStrm, nil
}

// StreamSynchronize runs queued work until st's queue is empty.
func (s *Driver) StreamSynchronize(st cuda.Stream) error {
	if err := s.captureGuard("cuStreamSynchronize"); err != nil {
		return err
	}
	if _, ok := s.streams[st]; !ok {
		return simErr("cuStreamSynchronize", cuda.ResultInvalidHandle, fmt.Errorf("no stream %d", st))
	}
	s.drain(func() bool { return len(s.streams[st]) == 0 })
	return s.pending
}

func (s *Driver) StreamDestroy(st cuda.Stream) error {
	if _, ok := s.streams[st]; !ok {
		return simErr("cuStreamDestroy_v2", cuda.ResultInvalidHandle, fmt.Errorf("no stream %d", st))
	}
	// Work still queued completes, as the driver promises.
	s.drain(func() bool { return len(s.streams[st]) == 0 })
	delete(s.streams, st)
	return nil
}

// StreamWaitEvent queues on st a wait for e's latest record (none: no wait).
func (s *Driver) StreamWaitEvent(st cuda.Stream, e cuda.Event) error {
	ev, ok := s.events[e]
	if !ok {
		return simErr("cuStreamWaitEvent", cuda.ResultInvalidHandle, fmt.Errorf("no event %d", e))
	}
	if _, ok := s.streams[st]; !ok {
		return simErr("cuStreamWaitEvent", cuda.ResultInvalidHandle, fmt.Errorf("no stream %d", st))
	}
	if s.capturing(st) != nil {
		return simErr("cuStreamWaitEvent", cuda.ResultCaptureUnsupported, fmt.Errorf("the simulator does not capture event waits"))
	}
	s.issued++
	s.streams[st] = append(s.streams[st], op{seq: s.issued, wait: ev, gen: ev.recorded})
	return nil
}

func (s *Driver) EventCreate() (cuda.Event, error) {
	s.lastEvent++
	s.events[s.lastEvent] = &event{}
	return s.lastEvent, nil
}

// EventRecord queues a record of e on st: when it runs it notes the simulator's wall clock, so
// the time between two events is the simulation time of what ran between them.
func (s *Driver) EventRecord(e cuda.Event, st cuda.Stream) error {
	ev, ok := s.events[e]
	if !ok {
		return simErr("cuEventRecord", cuda.ResultInvalidHandle, fmt.Errorf("no event %d", e))
	}
	if s.capturing(st) != nil {
		return simErr("cuEventRecord", cuda.ResultCaptureUnsupported, fmt.Errorf("the simulator does not capture event records"))
	}
	ev.recorded++
	gen := ev.recorded
	return s.enqueue("cuEventRecord", st, func() error {
		ev.done, ev.at = gen, time.Now()
		return nil
	})
}

// EventSynchronize runs queued work until e's latest record has run.
func (s *Driver) EventSynchronize(e cuda.Event) error {
	if err := s.captureGuard("cuEventSynchronize"); err != nil {
		return err
	}
	ev, ok := s.events[e]
	if !ok {
		return simErr("cuEventSynchronize", cuda.ResultInvalidHandle, fmt.Errorf("no event %d", e))
	}
	s.drain(func() bool { return ev.done >= ev.recorded })
	return s.pending
}

func (s *Driver) EventElapsedTime(start, end cuda.Event) (float32, error) {
	a, b := s.events[start], s.events[end]
	if a == nil || b == nil || a.done == 0 || b.done == 0 || a.done < a.recorded || b.done < b.recorded {
		return 0, simErr("cuEventElapsedTime", 600, fmt.Errorf("an event has not completed"))
	}
	return float32(b.at.Sub(a.at).Seconds() * 1e3), nil
}

func (s *Driver) EventDestroy(e cuda.Event) error {
	delete(s.events, e)
	return nil
}

// enqueue queues f on st (call is the driver call, for a launch followed by the kernel's name). A failure when f runs becomes the pending asynchronous error.
func (s *Driver) enqueue(call string, st cuda.Stream, f func() error) error {
	if _, ok := s.streams[st]; !ok {
		name, _, _ := strings.Cut(call, " ") // a launch's call names its kernel after the call
		return simErr(name, cuda.ResultInvalidHandle, fmt.Errorf("no stream %d", st))
	}
	if c := s.capturing(st); c != nil { // recorded for a graph, not run
		c.work = append(c.work, recorded{call, f})
		return nil
	}
	s.issued++
	s.streams[st] = append(s.streams[st], op{seq: s.issued, what: call, run: func() {
		if err := f(); err != nil && s.pending == nil {
			s.pending = simErr("cuStreamSynchronize", cuda.ResultIllegalAddress, err)
		}
	}})
	return nil
}

// drainAll runs every queued op.
func (s *Driver) drainAll() {
	s.drain(func() bool {
		for _, q := range s.streams {
			if len(q) > 0 {
				return false
			}
		}
		return true
	})
}

// drain runs queued ops, one at a time in the schedule's order, until done reports true. Every
// wait is for a record issued before it, so the op issued first can always run.
func (s *Driver) drain(done func() bool) {
	for !done() {
		var pick cuda.Stream
		var ready []cuda.Stream // Random's choices
		for st, q := range s.streams {
			if len(q) == 0 || q[0].wait != nil && q[0].wait.done < q[0].gen {
				continue
			}
			ready = append(ready, st)
			if pick == 0 || s.before(st, pick) {
				pick = st
			}
		}
		if s.opts.Schedule == Random && len(ready) > 1 {
			slices.Sort(ready) // map order is not the seed's
			pick = ready[s.rng.IntN(len(ready))]
		}
		if pick == 0 { // unreachable: the op issued first can always run
			if s.pending == nil {
				s.pending = simErr("cuStreamSynchronize", cuda.ResultUnknown, fmt.Errorf("queued work waits for records never issued"))
			}
			return
		}
		o := s.streams[pick][0]
		s.streams[pick] = s.streams[pick][1:]
		if o.run != nil {
			if s.opts.Trace {
				s.ran = append(s.ran, Ran{Stream: pick, What: o.what})
			}
			o.run()
		}
	}
}

// before reports whether stream a's next op runs before stream b's.
func (s *Driver) before(a, b cuda.Stream) bool {
	switch s.opts.Schedule {
	case LowStreamFirst:
		return a < b
	case HighStreamFirst:
		return a > b
	}
	return s.streams[a][0].seq < s.streams[b][0].seq
}
func (s *Driver) GetErrorName(r cuda.Result) string { return fmt.Sprintf("CUDA_ERROR_%d", int(r)) }
func (s *Driver) GetErrorString(cuda.Result) string { return "" }
