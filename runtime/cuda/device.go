package cuda

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gcomp/gcomp/runtime/executor"
)

// SyncEnv is the environment variable that makes every launch synchronous
// and checked when set to 1 (the analogue of CUDA_LAUNCH_BLOCKING).
const SyncEnv = "GCOMP_SYNC"

// Options configure a Device.
type Options struct {
	// Sync waits for every launch to finish and checks it, so a failing
	// kernel is reported by its own launch rather than at the next Sync.
	Sync bool
	// Profile times every launch with a pair of CUDA events (the launch
	// then waits for the kernel to finish) and returns the time in
	// Counters.Time.
	Profile bool
	// StagingLimit bounds the pinned staging memory that writes may keep in
	// flight before the device waits for them; 0 means 256 MiB.
	StagingLimit int64
}

// OptionsFromEnv returns the options the environment asks for: Sync when
// GCOMP_SYNC=1.
func OptionsFromEnv() Options {
	return Options{Sync: os.Getenv(SyncEnv) == "1"}
}

// Device is one GPU, driven through a Driver. It implements
// executor.Device: it uses the device's primary context and one
// non-blocking stream on which copies, memsets and launches are issued in
// order; Sync waits for the stream. It also implements executor.Streams:
// uploads go on a second non-blocking stream (created on first use), ordered
// against the compute stream by events, and Sync waits for both streams.
//
// Writes go through pinned staging buffers, so Write returns as soon as
// the bytes are staged and the copy is queued; Read waits for the stream
// and returns with the bytes in place. A Device is safe for use by several
// goroutines, which it serializes.
type Device struct {
	drv     Driver
	ordinal int
	handle  DeviceHandle
	ctx     Context
	stream  Stream
	opts    Options
	info    Info

	mu       sync.Mutex
	closed   bool
	allocs   map[executor.Ptr]int64
	bytes    int64 // allocated now
	peak     int64
	modules  map[*module]bool
	staging  staging
	evStart  Event
	evEnd    Event
	copier   Stream   // the upload stream, 0 until the first Upload
	comm     Stream   // the communication stream (comm.go), 0 until first asked for
	extra    []Stream // NewStream's (hostfunc.go)
	events   map[executor.Event]Event
	idle     []Event // events released for reuse
	lastEv   executor.Event
	host     map[*byte][]byte // AllocHost's buffers by first byte
	hostN    int64            // their bytes
	launches int              // since the last Sync
	last     string           // the last launch issued, described

	capturing bool // graph.go: the compute stream records instead of running
	captured  int  // launches when the capture began
}

// Info describes a GPU.
type Info struct {
	Ordinal  int
	Name     string
	Arch     Arch // compute capability
	SMs      int
	TotalMem int64
}

// Stats are a device's memory statistics.
type Stats struct {
	Allocated     int64 // device bytes allocated through Alloc and not freed
	PeakAllocated int64
	Pinned        int64 // pinned host bytes: staging buffers and AllocHost's
}

var (
	_ executor.Device  = (*Device)(nil)
	_ executor.Streams = (*Device)(nil)
)

// Open opens GPU ordinal through drv, which must be initialized: it
// retains the device's primary context and creates the device's stream.
func Open(drv Driver, ordinal int, opts Options) (*Device, error) {
	n, err := drv.DeviceCount()
	if err != nil {
		return nil, fmt.Errorf("cuda:%d: %w", ordinal, err)
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("cuda:%d: no such device (the driver sees %d; CUDA_VISIBLE_DEVICES selects which)", ordinal, n)
	}
	info, h, err := DeviceInfo(drv, ordinal)
	if err != nil {
		return nil, err
	}
	if opts.StagingLimit <= 0 {
		opts.StagingLimit = 256 << 20
	}
	d := &Device{drv: drv, ordinal: ordinal, handle: h, opts: opts, info: info,
		allocs: map[executor.Ptr]int64{}, modules: map[*module]bool{},
		events: map[executor.Event]Event{}, host: map[*byte][]byte{}}
	d.ctx, err = drv.DevicePrimaryCtxRetain(h)
	if err != nil {
		return nil, d.errorf("creating a context: %w", err)
	}
	err = d.bound(func() error {
		var err error
		if d.stream, err = drv.StreamCreate(); err != nil {
			return d.errorf("creating a stream: %w", err)
		}
		return nil
	})
	if err != nil {
		drv.DevicePrimaryCtxRelease(h)
		return nil, err
	}
	return d, nil
}

// DeviceInfo reads GPU ordinal's name, compute capability, multiprocessor
// count and memory size (no context needed).
func DeviceInfo(drv Driver, ordinal int) (Info, DeviceHandle, error) {
	info := Info{Ordinal: ordinal}
	h, err := drv.DeviceGet(ordinal)
	if err == nil {
		info.Name, err = drv.DeviceGetName(h)
	}
	if err == nil {
		info.Arch.Major, err = drv.DeviceGetAttribute(AttrComputeCapabilityMajor, h)
	}
	if err == nil {
		info.Arch.Minor, err = drv.DeviceGetAttribute(AttrComputeCapabilityMinor, h)
	}
	if err == nil {
		info.SMs, err = drv.DeviceGetAttribute(AttrMultiprocessorCount, h)
	}
	if err == nil {
		info.TotalMem, err = drv.DeviceTotalMem(h)
	}
	if err != nil {
		return info, h, fmt.Errorf("cuda:%d: %w", ordinal, err)
	}
	return info, h, nil
}

// Info describes the device.
func (d *Device) Info() Info { return d.info }

// Name is e.g. "cuda:0 (NVIDIA H100 80GB HBM3, sm_90)".
func (d *Device) Name() string {
	return fmt.Sprintf("cuda:%d (%s, %s)", d.ordinal, d.info.Name, d.info.Arch)
}

// errorf prefixes a message with the device.
func (d *Device) errorf(format string, args ...any) error {
	return fmt.Errorf("cuda:%d: "+format, append([]any{d.ordinal}, args...)...)
}

// errClosed is returned by every call on a closed device.
var errClosed = errors.New("the device is closed")

// bound runs f with the device's context current on a locked OS thread
// (a context is current per thread and goroutines move between threads).
// The caller holds d.mu or owns d exclusively.
func (d *Device) bound(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := d.drv.CtxSetCurrent(d.ctx); err != nil {
		return d.errorf("%w", err)
	}
	return f()
}

// do is bound under the device's lock, failing on a closed device.
func (d *Device) do(f func() error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return d.errorf("%w", errClosed)
	}
	return d.bound(f)
}

// SetProfile turns timing of each launch with CUDA events on or off.
func (d *Device) SetProfile(on bool) {
	d.mu.Lock()
	d.opts.Profile = on
	d.mu.Unlock()
}

// Stats returns the device's memory statistics.
func (d *Device) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return Stats{Allocated: d.bytes, PeakAllocated: d.peak, Pinned: d.staging.pinned + d.hostN}
}

// Alloc allocates n bytes of device memory (cuMemAlloc aligns to at least
// 256 bytes). Out of memory, the error says how much was asked for and how
// much is free.
func (d *Device) Alloc(n int64) (executor.Ptr, error) {
	if n < 0 {
		return 0, d.errorf("cannot allocate %d bytes", n)
	}
	size := max(n, 1) // the driver refuses empty allocations
	var ptr executor.Ptr
	err := d.do(func() error {
		p, err := d.drv.MemAlloc(size)
		if err == nil {
			ptr = executor.Ptr(p)
			d.allocs[ptr] = size
			d.bytes += size
			d.peak = max(d.peak, d.bytes)
			return nil
		}
		if CodeOf(err) != ResultOutOfMemory {
			return d.errorf("allocating %d bytes: %w", n, err)
		}
		free, total, ierr := d.drv.MemGetInfo()
		if ierr != nil {
			return d.errorf("out of memory: requested %s (%d bytes): %w", FormatBytes(n), n, err)
		}
		return d.errorf("out of memory: requested %s (%d bytes), %s free of %s (gcomp holds %s): %w",
			FormatBytes(n), n, FormatBytes(free), FormatBytes(total), FormatBytes(d.bytes), err)
	})
	if err != nil {
		return 0, err
	}
	return ptr, nil
}

// Free releases an allocation. cuMemFree synchronizes with the device, so
// work still using the memory finishes first.
func (d *Device) Free(p executor.Ptr) error {
	return d.do(func() error {
		size, ok := d.allocs[p]
		if !ok {
			return d.errorf("freeing %#x, which is not an allocation of this device", uint64(p))
		}
		if err := d.drv.MemFree(DevicePtr(p)); err != nil {
			return d.errorf("freeing %#x: %w", uint64(p), err)
		}
		delete(d.allocs, p)
		d.bytes -= size
		return nil
	})
}

// Write copies src to p: it stages src in pinned memory and queues the
// copy, so src may be reused when Write returns.
func (d *Device) Write(p executor.Ptr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return d.do(func() error { return d.writeLocked(p, src, d.stream) })
}

// writeLocked queues the copy of src to p on stream s from a pinned staging
// buffer, or copies synchronously (after all queued work) when there is no
// pinned memory to be had.
func (d *Device) writeLocked(p executor.Ptr, src []byte, s Stream) error {
	if d.staging.inFlight+int64(len(src)) > d.opts.StagingLimit && d.staging.inFlight > 0 {
		if err := d.syncLocked(); err != nil {
			return err
		}
	}
	buf := d.staging.get(d.drv, int64(len(src)), d.opts.StagingLimit)
	if buf == nil {
		if err := d.syncLocked(); err != nil {
			return err
		}
		if err := d.drv.MemcpyHtoD(DevicePtr(p), src); err != nil {
			return d.errorf("writing %d bytes to %#x: %w", len(src), uint64(p), err)
		}
		return nil
	}
	copy(buf, src)
	if err := d.drv.MemcpyHtoDAsync(DevicePtr(p), buf, s); err != nil {
		d.staging.put(buf)
		return d.errorf("writing %d bytes to %#x: %w", len(src), uint64(p), err)
	}
	d.staging.hold(buf)
	return nil
}

// Read copies the device memory at p into dst, after the work queued
// before it.
func (d *Device) Read(dst []byte, p executor.Ptr) error {
	if len(dst) == 0 {
		return nil
	}
	return d.do(func() error {
		buf := d.staging.get(d.drv, int64(len(dst)), d.opts.StagingLimit)
		if buf == nil {
			if err := d.syncLocked(); err != nil {
				return err
			}
			if err := d.drv.MemcpyDtoH(dst, DevicePtr(p)); err != nil {
				return d.errorf("reading %d bytes from %#x: %w", len(dst), uint64(p), err)
			}
			return nil
		}
		d.staging.hold(buf)
		if err := d.drv.MemcpyDtoHAsync(buf, DevicePtr(p), d.stream); err != nil {
			return d.errorf("reading %d bytes from %#x: %w", len(dst), uint64(p), err)
		}
		if err := d.syncLocked(); err != nil {
			return err
		}
		copy(dst, buf)
		return nil
	})
}

// Zero queues setting n bytes at p to zero.
func (d *Device) Zero(p executor.Ptr, n int64) error {
	if n == 0 {
		return nil
	}
	return d.do(func() error {
		if err := d.drv.MemsetD8Async(DevicePtr(p), 0, n, d.stream); err != nil {
			return d.errorf("zeroing %d bytes at %#x: %w", n, uint64(p), err)
		}
		return nil
	})
}

// Sync waits for everything queued on the device's streams. A kernel that
// failed asynchronously is reported here.
func (d *Device) Sync() error {
	return d.do(d.syncLocked)
}

func (d *Device) syncLocked() error {
	if d.copier != 0 {
		if err := d.drv.StreamSynchronize(d.copier); err != nil {
			return d.errorf("waiting for the uploads: %w", err)
		}
	}
	if d.comm != 0 {
		if err := d.drv.StreamSynchronize(d.comm); err != nil {
			return d.errorf("waiting for the communication stream: %w", err)
		}
	}
	for _, s := range d.extra {
		if err := d.drv.StreamSynchronize(s); err != nil {
			return d.errorf("waiting for stream %#x: %w", uintptr(s), err)
		}
	}
	err := d.drv.StreamSynchronize(d.stream)
	n, last := d.launches, d.last
	d.launches, d.last = 0, ""
	if err == nil {
		d.staging.release()
		return nil
	}
	// The staging buffers stay held: the stream may still be using them
	// after a failure, and the context is unusable anyway.
	switch {
	case n == 1:
		return d.errorf("%s failed: %w", last, err)
	case n > 1:
		return d.errorf("one of the %d launches since the last sync failed (the last was %s; set %s=1 to check each launch): %w", n, last, SyncEnv, err)
	}
	return d.errorf("waiting for the device: %w", err)
}

// MemInfo reports the device's free and total memory.
func (d *Device) MemInfo() (free, total int64, err error) {
	err = d.do(func() error {
		var err error
		free, total, err = d.drv.MemGetInfo()
		if err != nil {
			return d.errorf("%w", err)
		}
		return nil
	})
	return free, total, err
}

// Load JIT-compiles a PTX module for the device. A module targeting a newer
// architecture than the device's, and PTX the JIT rejects (with its log), are
// errors.
func (d *Device) Load(ptx []byte) (executor.Module, error) {
	target, ok := ptxTarget(ptx)
	if !ok {
		return nil, d.errorf("loading PTX: the module has no .target sm_XX directive")
	}
	switch dev := d.info.Arch; {
	case target.Specific && (target.Major != dev.Major || target.Minor != dev.Minor):
		return nil, d.errorf("the module targets %s, which runs only on GPUs of compute capability %d.%d, but %s has %d.%d (%s)",
			target, target.Major, target.Minor, d.info.Name, dev.Major, dev.Minor, dev)
	case dev.less(target):
		return nil, d.errorf("the module targets %s, but %s has compute capability %d.%d (%s), which cannot run it",
			target, d.info.Name, dev.Major, dev.Minor, dev)
	}
	m := &module{d: d, entries: ptxEntries(ptx), funcs: map[string]Function{}}
	err := d.do(func() error {
		h, log, err := d.drv.ModuleLoadDataEx(ptx)
		if err != nil {
			log = strings.TrimSpace(log)
			if log == "" {
				return d.errorf("loading PTX: %w", err)
			}
			return d.errorf("loading PTX: %w\nJIT log:\n%s", err, log)
		}
		m.handle = h
		d.modules[m] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// module is a loaded PTX module.
type module struct {
	d       *Device
	handle  ModuleHandle
	entries []string
	funcs   map[string]Function
	closed  bool
	image   string // the cubin's architecture, "" for PTX (cubin.go)
}

// function looks kernel up (once).
func (m *module) function(kernel string) (Function, error) {
	if f, ok := m.funcs[kernel]; ok {
		return f, nil
	}
	f, err := m.d.drv.ModuleGetFunction(m.handle, kernel)
	if err != nil {
		if CodeOf(err) == ResultNotFound {
			names := append([]string(nil), m.entries...)
			sort.Strings(names)
			return 0, m.d.errorf("the module has no kernel %q (it has %s)", kernel, strings.Join(names, ", "))
		}
		return 0, m.d.errorf("looking up kernel %s: %w", kernel, err)
	}
	m.funcs[kernel] = f
	return f, nil
}

// describe names a launch in messages: "kernel add (grid 4x1x1, block 256x1x1)".
func describe(kernel string, cfg executor.LaunchConfig) string {
	s := fmt.Sprintf("kernel %s (grid %dx%dx%d, block %dx%dx%d", kernel,
		cfg.Grid[0], cfg.Grid[1], cfg.Grid[2], cfg.Block[0], cfg.Block[1], cfg.Block[2])
	if cfg.SharedBytes > 0 {
		s += fmt.Sprintf(", %d bytes of dynamic shared memory", cfg.SharedBytes)
	}
	return s + ")"
}

// dims converts a launch geometry, rejecting sizes the driver cannot take.
func dims(v [3]int) ([3]uint32, bool) {
	var u [3]uint32
	for i, x := range v {
		if x < 1 || x > 1<<31-1 {
			return u, false
		}
		u[i] = uint32(x)
	}
	return u, true
}

// Launch queues kernel on the device's stream. With Options.Sync it waits
// for the kernel and reports its failure; with Options.Profile it returns
// the kernel's time measured by CUDA events.
func (m *module) Launch(kernel string, cfg executor.LaunchConfig, args []executor.Ptr) (*executor.Counters, error) {
	d := m.d
	desc := describe(kernel, cfg)
	grid, okg := dims(cfg.Grid)
	block, okb := dims(cfg.Block)
	if !okg || !okb || cfg.SharedBytes < 0 || int64(cfg.SharedBytes) > 1<<32-1 {
		return nil, d.errorf("launching %s: invalid launch dimensions", desc)
	}
	params := make([]uint64, len(args))
	for i, a := range args {
		params[i] = uint64(a)
	}
	var counters *executor.Counters
	err := d.do(func() error {
		if m.closed {
			return d.errorf("launching %s: the module is closed", desc)
		}
		f, err := m.function(kernel)
		if err != nil {
			return err
		}
		profile := d.opts.Profile
		if profile {
			if err := d.recordStart(); err != nil {
				return err
			}
		}
		if err := d.launch(f, grid, block, uint32(cfg.SharedBytes), params, cfg.PDL); err != nil {
			return d.errorf("launching %s: %w", desc, err)
		}
		d.launches++
		d.last = desc
		if d.opts.Sync {
			if err := d.syncLocked(); err != nil {
				return err
			}
		}
		if profile {
			t, err := d.elapsed(desc)
			if err != nil {
				return err
			}
			counters = &executor.Counters{Time: t}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return counters, nil
}

// recordStart records the start event of a timed launch, creating the
// device's two events on first use.
func (d *Device) recordStart() error {
	if d.evStart == 0 {
		s, err := d.drv.EventCreate()
		if err != nil {
			return d.errorf("creating an event: %w", err)
		}
		e, err := d.drv.EventCreate()
		if err != nil {
			d.drv.EventDestroy(s)
			return d.errorf("creating an event: %w", err)
		}
		d.evStart, d.evEnd = s, e
	}
	if err := d.drv.EventRecord(d.evStart, d.stream); err != nil {
		return d.errorf("recording an event: %w", err)
	}
	return nil
}

// elapsed records the end event after a launch, waits for it and returns
// the time between the events.
func (d *Device) elapsed(desc string) (time.Duration, error) {
	if err := d.drv.EventRecord(d.evEnd, d.stream); err != nil {
		return 0, d.errorf("recording an event: %w", err)
	}
	if err := d.drv.EventSynchronize(d.evEnd); err != nil {
		return 0, d.errorf("%s failed: %w", desc, err)
	}
	ms, err := d.drv.EventElapsedTime(d.evStart, d.evEnd)
	if err != nil {
		return 0, d.errorf("timing %s: %w", desc, err)
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

// Close unloads the module.
func (m *module) Close() error {
	d := m.d
	return d.do(func() error {
		if m.closed {
			return nil
		}
		m.closed = true
		delete(d.modules, m)
		if err := d.drv.ModuleUnload(m.handle); err != nil {
			return d.errorf("unloading a module: %w", err)
		}
		return nil
	})
}

// Close waits for the device, then releases everything it holds: modules,
// allocations, staging memory, events, the stream and the context. It
// reports the first failure; a closed device refuses further calls.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	var errs []error
	keep := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	keep(d.bound(func() error {
		keep(d.syncLocked())
		for m := range d.modules {
			m.closed = true
			keep(d.drv.ModuleUnload(m.handle))
		}
		d.modules = nil
		ptrs := make([]executor.Ptr, 0, len(d.allocs))
		for p := range d.allocs {
			ptrs = append(ptrs, p)
		}
		sort.Slice(ptrs, func(i, j int) bool { return ptrs[i] < ptrs[j] })
		for _, p := range ptrs {
			keep(d.drv.MemFree(DevicePtr(p)))
		}
		d.allocs, d.bytes = nil, 0
		keep(d.staging.free(d.drv))
		for _, b := range d.host {
			keep(d.drv.MemFreeHost(b))
		}
		d.host, d.hostN = nil, 0
		if d.evStart != 0 {
			keep(d.drv.EventDestroy(d.evStart))
			keep(d.drv.EventDestroy(d.evEnd))
		}
		for _, e := range d.events {
			keep(d.drv.EventDestroy(e))
		}
		for _, e := range d.idle {
			keep(d.drv.EventDestroy(e))
		}
		d.events, d.idle = nil, nil
		if d.copier != 0 {
			keep(d.drv.StreamDestroy(d.copier))
		}
		if d.comm != 0 {
			keep(d.drv.StreamDestroy(d.comm))
		}
		for _, s := range d.extra {
			keep(d.drv.StreamDestroy(s))
		}
		keep(d.drv.StreamDestroy(d.stream))
		return nil
	}))
	keep(d.drv.DevicePrimaryCtxRelease(d.handle))
	if len(errs) > 0 {
		return d.errorf("closing: %w", errs[0])
	}
	return nil
}

// FormatBytes writes a byte count for people: "512 B", "1.5 GiB".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTP"[i])
}
