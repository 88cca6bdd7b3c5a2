package cuda

import (
	"fmt"
	"strings"
	"unsafe"
)

// fakeDriver is an in-memory Driver for testing the Device without a GPU.
// Queued work runs at once (in order, as a stream runs it); a kernel is a
// Go function; an asynchronous failure is kept until the next
// synchronization, as the driver keeps it.
type fakeDriver struct {
	name         string
	major, minor int
	total        int64   // device memory
	noPinned     bool    // MemHostAlloc fails
	eventMillis  float32 // what EventElapsedTime reports
	kernels      map[string]fakeKernel

	initErr   Result
	next      DevicePtr
	mem       map[DevicePtr][]byte // allocations by base address
	used      int64
	host      map[*byte]int64 // pinned buffers by first byte
	ctxs      int             // primary context references
	current   Context
	modules   map[ModuleHandle]bool
	streams   int
	events    int
	pending   Result // an asynchronous failure, reported by the next sync
	launches  []fakeLaunch
	syncs     int
	asyncHtoD int // copies from pinned memory
	syncHtoD  int // synchronous copies
	// calls logs the stream work and synchronizations in issue order when
	// logging: "htod s=5002 dst=7f0000000400 n=64", "launch add s=5001",
	// "record e=e001 s=5001", "wait s=5001 e=e002", "sync s=5001",
	// "dtoh s=5001 src=7f0000000000 n=4".
	logging bool
	calls   []string
	// capture holds the launches a capturing stream recorded; graphs the
	// instantiated ones, by handle.
	capture map[Stream][]func() error
	graphs  map[GraphExec][]func() error
	// images are the modules loaded, in order; noCubin makes loading a cubin (an ELF image) fail.
	images  [][]byte
	noCubin bool
}

// logf appends to the call log when logging.
func (f *fakeDriver) logf(format string, a ...any) {
	if f.logging {
		f.calls = append(f.calls, fmt.Sprintf(format, a...))
	}
}

type fakeKernel func(f *fakeDriver, params []uint64) (launchErr, asyncErr Result)

type fakeLaunch struct {
	kernel        string
	grid, block   [3]uint32
	shared        uint32
	params        []uint64
	stream        Stream
	currentCtxSet bool
}

const fakeCtx Context = 0xc0

func newFake() *fakeDriver {
	return &fakeDriver{
		name: "Fake GPU", major: 8, minor: 0, total: 1 << 20, eventMillis: 1.5,
		next: 0x7f0000000000, mem: map[DevicePtr][]byte{}, host: map[*byte]int64{},
		modules: map[ModuleHandle]bool{}, kernels: map[string]fakeKernel{},
	}
}

var fakeErrors = map[Result][2]string{
	ResultInvalidValue:         {"CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	ResultOutOfMemory:          {"CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	ResultNoDevice:             {"CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	ResultInvalidPTX:           {"CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
	ResultNotFound:             {"CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	ResultIllegalAddress:       {"CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
	ResultLaunchOutOfResources: {"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
	ResultInvalidContext:       {"CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
}

func (f *fakeDriver) GetErrorName(r Result) string   { return fakeErrors[r][0] }
func (f *fakeDriver) GetErrorString(r Result) string { return fakeErrors[r][1] }

func (f *fakeDriver) fail(call string, r Result) error { return newError(f, call, r) }

// ctx fails calls that need a context when none is current.
func (f *fakeDriver) ctx(call string) error {
	if f.current != fakeCtx || f.ctxs == 0 {
		return f.fail(call, ResultInvalidContext)
	}
	return nil
}

func (f *fakeDriver) Init() error                 { return f.fail("cuInit", f.initErr) }
func (f *fakeDriver) DriverVersion() (int, error) { return 12020, nil }
func (f *fakeDriver) DeviceCount() (int, error)   { return 1, nil }
func (f *fakeDriver) DeviceGet(ordinal int) (DeviceHandle, error) {
	if ordinal != 0 {
		return 0, f.fail("cuDeviceGet", ResultInvalidValue)
	}
	return 0, nil
}
func (f *fakeDriver) DeviceGetName(DeviceHandle) (string, error) { return f.name, nil }
func (f *fakeDriver) DeviceGetAttribute(a Attribute, _ DeviceHandle) (int, error) {
	switch a {
	case AttrComputeCapabilityMajor:
		return f.major, nil
	case AttrComputeCapabilityMinor:
		return f.minor, nil
	case AttrMultiprocessorCount:
		return 108, nil
	}
	return 0, f.fail("cuDeviceGetAttribute", ResultInvalidValue)
}
func (f *fakeDriver) DeviceTotalMem(DeviceHandle) (int64, error) { return f.total, nil }
func (f *fakeDriver) DevicePrimaryCtxRetain(DeviceHandle) (Context, error) {
	f.ctxs++
	return fakeCtx, nil
}
func (f *fakeDriver) DevicePrimaryCtxRelease(DeviceHandle) error {
	f.ctxs--
	return nil
}
func (f *fakeDriver) CtxSetCurrent(c Context) error {
	f.current = c
	return nil
}

func (f *fakeDriver) ModuleLoadDataEx(ptx []byte) (ModuleHandle, string, error) {
	if err := f.ctx("cuModuleLoadDataEx"); err != nil {
		return 0, "", err
	}
	f.images = append(f.images, ptx)
	if f.noCubin && strings.HasPrefix(string(ptx), "\x7fELF") {
		return 0, "", f.fail("cuModuleLoadDataEx", ResultNoBinaryForGPU)
	}
	if i := strings.Index(string(ptx), "syntax error"); i >= 0 {
		line := 1 + strings.Count(string(ptx[:i]), "\n")
		return 0, fmt.Sprintf("ptxas application ptx input, line %d; error   : syntax error\nptxas fatal   : Ptx assembly aborted due to errors\n", line), f.fail("cuModuleLoadDataEx", ResultInvalidPTX)
	}
	m := ModuleHandle(len(f.modules) + 1)
	for f.modules[m] {
		m++
	}
	f.modules[m] = true
	return m, "", nil
}

// functions are numbered by their kernel's name.
func (f *fakeDriver) ModuleGetFunction(m ModuleHandle, name string) (Function, error) {
	if !f.modules[m] {
		return 0, f.fail("cuModuleGetFunction", ResultInvalidValue)
	}
	if _, ok := f.kernels[name]; !ok {
		return 0, f.fail("cuModuleGetFunction", ResultNotFound)
	}
	return Function(len(name)), nil
}

func (f *fakeDriver) ModuleUnload(m ModuleHandle) error {
	if !f.modules[m] {
		return f.fail("cuModuleUnload", ResultInvalidValue)
	}
	delete(f.modules, m)
	return nil
}

func (f *fakeDriver) MemAlloc(n int64) (DevicePtr, error) {
	if err := f.ctx("cuMemAlloc_v2"); err != nil {
		return 0, err
	}
	if n <= 0 {
		return 0, f.fail("cuMemAlloc_v2", ResultInvalidValue)
	}
	if f.used+n > f.total {
		return 0, f.fail("cuMemAlloc_v2", ResultOutOfMemory)
	}
	p := f.next
	f.next += DevicePtr((n + 511) &^ 511)
	f.mem[p] = make([]byte, n)
	f.used += n
	return p, nil
}

func (f *fakeDriver) MemFree(p DevicePtr) error {
	b, ok := f.mem[p]
	if !ok {
		return f.fail("cuMemFree_v2", ResultInvalidValue)
	}
	f.used -= int64(len(b))
	delete(f.mem, p)
	return nil
}

// bytes is the device memory [p, p+n).
func (f *fakeDriver) bytes(p DevicePtr, n int64) ([]byte, bool) {
	for base, b := range f.mem {
		if p >= base && int64(p-base)+n <= int64(len(b)) {
			return b[p-base : int64(p-base)+n], true
		}
	}
	return nil, false
}

func (f *fakeDriver) copyIn(call string, dst DevicePtr, src []byte) error {
	if err := f.ctx(call); err != nil {
		return err
	}
	b, ok := f.bytes(dst, int64(len(src)))
	if !ok {
		return f.fail(call, ResultInvalidValue)
	}
	copy(b, src)
	return nil
}

func (f *fakeDriver) copyOut(call string, dst []byte, src DevicePtr) error {
	if err := f.ctx(call); err != nil {
		return err
	}
	b, ok := f.bytes(src, int64(len(dst)))
	if !ok {
		return f.fail(call, ResultInvalidValue)
	}
	copy(dst, b)
	return nil
}

// pinned reports whether b lies in a buffer from MemHostAlloc.
func (f *fakeDriver) pinned(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	p := uintptr(unsafe.Pointer(&b[0]))
	for base, n := range f.host {
		lo := uintptr(unsafe.Pointer(base))
		if p >= lo && p+uintptr(len(b)) <= lo+uintptr(n) {
			return true
		}
	}
	return false
}

func (f *fakeDriver) MemcpyHtoD(dst DevicePtr, src []byte) error {
	f.syncHtoD++
	return f.copyIn("cuMemcpyHtoD_v2", dst, src)
}

func (f *fakeDriver) MemcpyDtoH(dst []byte, src DevicePtr) error {
	return f.copyOut("cuMemcpyDtoH_v2", dst, src)
}

func (f *fakeDriver) MemcpyHtoDAsync(dst DevicePtr, src []byte, s Stream) error {
	if !f.pinned(src) {
		return fmt.Errorf("fake: asynchronous copy from pageable memory")
	}
	f.asyncHtoD++
	f.logf("htod s=%x dst=%x n=%d", s, dst, len(src))
	return f.copyIn("cuMemcpyHtoDAsync_v2", dst, src)
}

func (f *fakeDriver) MemcpyDtoHAsync(dst []byte, src DevicePtr, s Stream) error {
	if !f.pinned(dst) {
		return fmt.Errorf("fake: asynchronous copy to pageable memory")
	}
	f.logf("dtoh s=%x src=%x n=%d", s, src, len(dst))
	return f.copyOut("cuMemcpyDtoHAsync_v2", dst, src)
}

func (f *fakeDriver) MemsetD8(p DevicePtr, v byte, n int64) error {
	return f.MemsetD8Async(p, v, n, 0)
}

func (f *fakeDriver) MemsetD8Async(p DevicePtr, v byte, n int64, s Stream) error {
	b, ok := f.bytes(p, n)
	if !ok {
		return f.fail("cuMemsetD8Async", ResultInvalidValue)
	}
	for i := range b {
		b[i] = v
	}
	return nil
}

func (f *fakeDriver) MemHostAlloc(n int64) ([]byte, error) {
	if f.noPinned {
		return nil, f.fail("cuMemHostAlloc", ResultOutOfMemory)
	}
	b := make([]byte, n)
	f.host[&b[0]] = n
	return b, nil
}

func (f *fakeDriver) MemFreeHost(b []byte) error {
	if !f.pinned(b) {
		return f.fail("cuMemFreeHost", ResultInvalidValue)
	}
	delete(f.host, &b[0])
	return nil
}

func (f *fakeDriver) MemGetInfo() (free, total int64, err error) {
	return f.total - f.used, f.total, nil
}

func (f *fakeDriver) LaunchKernel(fn Function, grid, block [3]uint32, shared uint32, s Stream, params []uint64) error {
	if err := f.ctx("cuLaunchKernel"); err != nil {
		return err
	}
	var name string
	for k := range f.kernels {
		if Function(len(k)) == fn {
			name = k
		}
	}
	f.launches = append(f.launches, fakeLaunch{name, grid, block, shared, append([]uint64(nil), params...), s, f.current == fakeCtx})
	f.logf("launch %s s=%x", name, s)
	if block[0]*block[1]*block[2] > 1024 {
		return f.fail("cuLaunchKernel", ResultInvalidValue)
	}
	if rec, ok := f.capture[s]; ok {
		params := append([]uint64(nil), params...)
		f.capture[s] = append(rec, func() error {
			return f.LaunchKernel(fn, grid, block, shared, s, params)
		})
		f.launches = f.launches[:len(f.launches)-1] // recorded, not launched
		if f.logging {
			f.calls[len(f.calls)-1] = "capture " + f.calls[len(f.calls)-1]
		}
		return nil
	}
	launchErr, asyncErr := f.kernels[name](f, params)
	if launchErr != Success {
		return f.fail("cuLaunchKernel", launchErr)
	}
	if f.pending == Success {
		f.pending = asyncErr
	}
	return nil
}

func (f *fakeDriver) StreamCreate() (Stream, error) {
	if err := f.ctx("cuStreamCreate"); err != nil {
		return 0, err
	}
	f.streams++
	return Stream(0x5000 + f.streams), nil
}

// StreamSynchronize reports the pending failure; like a real context after
// a kernel fault, the fake stays broken.
func (f *fakeDriver) StreamSynchronize(s Stream) error {
	f.syncs++
	f.logf("sync s=%x", s)
	return f.fail("cuStreamSynchronize", f.pending)
}

func (f *fakeDriver) StreamWaitEvent(s Stream, e Event) error {
	f.logf("wait s=%x e=%x", s, e)
	return nil
}

// LaunchHostFunc runs fn at once: the fake runs all work when it is issued.
func (f *fakeDriver) LaunchHostFunc(s Stream, fn func()) error {
	f.logf("hostfunc s=%x", s)
	fn()
	return nil
}

func (f *fakeDriver) StreamDestroy(s Stream) error {
	f.streams--
	return nil
}

func (f *fakeDriver) EventCreate() (Event, error) {
	f.events++
	return Event(0xe000 + f.events), nil
}
func (f *fakeDriver) EventRecord(e Event, s Stream) error {
	f.logf("record e=%x s=%x", e, s)
	return nil
}
func (f *fakeDriver) EventSynchronize(e Event) error {
	return f.fail("cuEventSynchronize", f.pending)
}
func (f *fakeDriver) EventElapsedTime(start, end Event) (float32, error) {
	return f.eventMillis, nil
}
func (f *fakeDriver) EventDestroy(e Event) error {
	f.events--
	return nil
}

// fakeCopyKernel copies 16 bytes from its first parameter to its second.
func fakeCopyKernel(f *fakeDriver, params []uint64) (Result, Result) {
	src, ok1 := f.bytes(DevicePtr(params[0]), 16)
	dst, ok2 := f.bytes(DevicePtr(params[1]), 16)
	if !ok1 || !ok2 {
		return Success, ResultIllegalAddress
	}
	copy(dst, src)
	return Success, Success
}

func (f *fakeDriver) StreamBeginCapture(s Stream) error {
	if f.capture == nil {
		f.capture = map[Stream][]func() error{}
	}
	if _, ok := f.capture[s]; ok {
		return f.fail("cuStreamBeginCapture_v2", ResultIllegalState)
	}
	f.logf("begin capture s=%x", s)
	f.capture[s] = []func() error{}
	return nil
}

func (f *fakeDriver) StreamEndCapture(s Stream) (Graph, error) {
	rec, ok := f.capture[s]
	if !ok {
		return 0, f.fail("cuStreamEndCapture", ResultIllegalState)
	}
	delete(f.capture, s)
	if f.graphs == nil {
		f.graphs = map[GraphExec][]func() error{}
	}
	f.logf("end capture s=%x (%d launches)", s, len(rec))
	g := GraphExec(0x9000 + len(f.graphs) + 1)
	f.graphs[g] = rec
	return Graph(g), nil
}

func (f *fakeDriver) GraphInstantiate(g Graph) (GraphExec, error) { return GraphExec(g), nil }
func (f *fakeDriver) GraphDestroy(Graph) error                    { return nil }

func (f *fakeDriver) GraphLaunch(e GraphExec, s Stream) error {
	f.logf("graph launch g=%x s=%x (%d launches)", e, s, len(f.graphs[e]))
	logging := f.logging
	f.logging = false // the graph's launches are logged as the graph
	defer func() { f.logging = logging }()
	for _, launch := range f.graphs[e] {
		if err := launch(); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeDriver) GraphExecDestroy(e GraphExec) error {
	delete(f.graphs, e)
	return nil
}
