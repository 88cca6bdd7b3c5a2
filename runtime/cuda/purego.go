//go:build linux && (amd64 || arm64) && !gorgonia && !nocuda

package cuda

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/gcomp/gcomp/internal/dynlib"
)

// libDriver calls libcuda.so.1 through purego: no cgo, and a binary that
// runs (and reports "no CUDA driver library") on machines without it.
type libDriver struct {
	path string

	cuInit                       func(flags uint32) int32
	cuDriverGetVersion           func(v *int32) int32
	cuDeviceGetCount             func(n *int32) int32
	cuDeviceGet                  func(d *int32, ordinal int32) int32
	cuDeviceGetName              func(name *byte, n int32, d int32) int32
	cuDeviceGetAttribute         func(v *int32, attr int32, d int32) int32
	cuDeviceTotalMem_v2          func(n *uint64, d int32) int32
	cuDevicePrimaryCtxRetain     func(c *uintptr, d int32) int32
	cuDevicePrimaryCtxRelease_v2 func(d int32) int32
	cuCtxSetCurrent              func(c uintptr) int32
	cuModuleLoadDataEx           func(m *uintptr, image unsafe.Pointer, n uint32, opts unsafe.Pointer, vals unsafe.Pointer) int32
	cuModuleGetFunction          func(f *uintptr, m uintptr, name string) int32
	cuModuleUnload               func(m uintptr) int32
	cuMemAlloc_v2                func(p *uint64, n uint64) int32
	cuMemFree_v2                 func(p uint64) int32
	cuMemcpyHtoD_v2              func(dst uint64, src unsafe.Pointer, n uint64) int32
	cuMemcpyDtoH_v2              func(dst unsafe.Pointer, src uint64, n uint64) int32
	cuMemcpyHtoDAsync_v2         func(dst uint64, src unsafe.Pointer, n uint64, s uintptr) int32
	cuMemcpyDtoHAsync_v2         func(dst unsafe.Pointer, src uint64, n uint64, s uintptr) int32
	cuMemsetD8_v2                func(p uint64, v uint32, n uint64) int32
	cuMemsetD8Async              func(p uint64, v uint32, n uint64, s uintptr) int32
	cuMemHostAlloc               func(p *unsafe.Pointer, n uint64, flags uint32) int32
	cuMemFreeHost                func(p unsafe.Pointer) int32
	cuMemGetInfo_v2              func(free, total *uint64) int32
	cuLaunchKernel               func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, s uintptr, params, extra unsafe.Pointer) int32
	cuStreamCreate               func(s *uintptr, flags uint32) int32
	cuStreamSynchronize          func(s uintptr) int32
	cuStreamDestroy_v2           func(s uintptr) int32
	cuStreamWaitEvent            func(s, e uintptr, flags uint32) int32
	cuLaunchHostFunc             func(s, fn, userData uintptr) int32
	cuLaunchKernelEx             func(cfg unsafe.Pointer, f uintptr, params, extra unsafe.Pointer) int32 // optional (CUDA 11.8)
	cuEventCreate                func(e *uintptr, flags uint32) int32
	cuEventRecord                func(e, s uintptr) int32
	cuEventSynchronize           func(e uintptr) int32
	cuEventElapsedTime           func(ms *float32, start, end uintptr) int32
	cuEventDestroy_v2            func(e uintptr) int32
	cuGetErrorName               func(r int32, s *unsafe.Pointer) int32
	cuGetErrorString             func(r int32, s *unsafe.Pointer) int32

	// CUDA graphs (CUDA 11.4 and newer); nil where the library lacks them.
	cuStreamBeginCapture_v2     func(s uintptr, mode int32) int32
	cuStreamEndCapture          func(s uintptr, g *uintptr) int32
	cuGraphInstantiateWithFlags func(e *uintptr, g uintptr, flags uint64) int32
	cuGraphLaunch               func(e, s uintptr) int32
	cuGraphExecDestroy          func(e uintptr) int32
	cuGraphDestroy              func(g uintptr) int32
}

// graphSymbols are the graph functions, resolved if the library has them all: an older driver
// still runs models, launching kernel by kernel.
func (l *libDriver) graphSymbols() []dynlib.Func {
	return []dynlib.Func{
		{Name: "cuStreamBeginCapture_v2", Ptr: &l.cuStreamBeginCapture_v2},
		{Name: "cuStreamEndCapture", Ptr: &l.cuStreamEndCapture},
		{Name: "cuGraphInstantiateWithFlags", Ptr: &l.cuGraphInstantiateWithFlags},
		{Name: "cuGraphLaunch", Ptr: &l.cuGraphLaunch},
		{Name: "cuGraphExecDestroy", Ptr: &l.cuGraphExecDestroy},
		{Name: "cuGraphDestroy", Ptr: &l.cuGraphDestroy},
	}
}

// symbols lists every function the driver resolves, by its exported name.
func (l *libDriver) symbols() []dynlib.Func {
	return []dynlib.Func{
		{Name: "cuInit", Ptr: &l.cuInit},
		{Name: "cuDriverGetVersion", Ptr: &l.cuDriverGetVersion},
		{Name: "cuDeviceGetCount", Ptr: &l.cuDeviceGetCount},
		{Name: "cuDeviceGet", Ptr: &l.cuDeviceGet},
		{Name: "cuDeviceGetName", Ptr: &l.cuDeviceGetName},
		{Name: "cuDeviceGetAttribute", Ptr: &l.cuDeviceGetAttribute},
		{Name: "cuDeviceTotalMem_v2", Ptr: &l.cuDeviceTotalMem_v2},
		{Name: "cuDevicePrimaryCtxRetain", Ptr: &l.cuDevicePrimaryCtxRetain},
		{Name: "cuDevicePrimaryCtxRelease_v2", Ptr: &l.cuDevicePrimaryCtxRelease_v2},
		{Name: "cuCtxSetCurrent", Ptr: &l.cuCtxSetCurrent},
		{Name: "cuModuleLoadDataEx", Ptr: &l.cuModuleLoadDataEx},
		{Name: "cuModuleGetFunction", Ptr: &l.cuModuleGetFunction},
		{Name: "cuModuleUnload", Ptr: &l.cuModuleUnload},
		{Name: "cuMemAlloc_v2", Ptr: &l.cuMemAlloc_v2},
		{Name: "cuMemFree_v2", Ptr: &l.cuMemFree_v2},
		{Name: "cuMemcpyHtoD_v2", Ptr: &l.cuMemcpyHtoD_v2},
		{Name: "cuMemcpyDtoH_v2", Ptr: &l.cuMemcpyDtoH_v2},
		{Name: "cuMemcpyHtoDAsync_v2", Ptr: &l.cuMemcpyHtoDAsync_v2},
		{Name: "cuMemcpyDtoHAsync_v2", Ptr: &l.cuMemcpyDtoHAsync_v2},
		{Name: "cuMemsetD8_v2", Ptr: &l.cuMemsetD8_v2},
		{Name: "cuMemsetD8Async", Ptr: &l.cuMemsetD8Async},
		{Name: "cuMemHostAlloc", Ptr: &l.cuMemHostAlloc},
		{Name: "cuMemFreeHost", Ptr: &l.cuMemFreeHost},
		{Name: "cuMemGetInfo_v2", Ptr: &l.cuMemGetInfo_v2},
		{Name: "cuLaunchKernel", Ptr: &l.cuLaunchKernel},
		{Name: "cuStreamCreate", Ptr: &l.cuStreamCreate},
		{Name: "cuStreamSynchronize", Ptr: &l.cuStreamSynchronize},
		{Name: "cuStreamDestroy_v2", Ptr: &l.cuStreamDestroy_v2},
		{Name: "cuStreamWaitEvent", Ptr: &l.cuStreamWaitEvent},
		{Name: "cuLaunchHostFunc", Ptr: &l.cuLaunchHostFunc},
		{Name: "cuEventCreate", Ptr: &l.cuEventCreate},
		{Name: "cuEventRecord", Ptr: &l.cuEventRecord},
		{Name: "cuEventSynchronize", Ptr: &l.cuEventSynchronize},
		{Name: "cuEventElapsedTime", Ptr: &l.cuEventElapsedTime},
		{Name: "cuEventDestroy_v2", Ptr: &l.cuEventDestroy_v2},
		{Name: "cuGetErrorName", Ptr: &l.cuGetErrorName},
		{Name: "cuGetErrorString", Ptr: &l.cuGetErrorString},
	}
}

var loaded dynlib.Cache[Driver] // by the path given to dlopen

// loadLibrary opens the driver library at path (a file name is searched for
// the way the dynamic loader searches) and resolves every symbol. A library
// is opened once per process and path.
func loadLibrary(path string) (Driver, error) {
	return loaded.Get(path, func() (Driver, error) {
		l := &libDriver{path: path}
		return l, dynlib.Open(path, dynlib.Spec{
			Required:  l.symbols(),
			Optional:  [][]dynlib.Func{l.graphSymbols(), {{Name: "cuLaunchKernelEx", Ptr: &l.cuLaunchKernelEx}}},
			NoLibrary: ErrNoLibrary,
			Lacks: func(sym string) error {
				return fmt.Errorf("the CUDA driver library %s lacks %s (the driver is too old: gcomp needs CUDA 11 or newer)", path, sym)
			},
		})
	})
}

func (l *libDriver) err(call string, r int32) error { return newError(l, call, Result(r)) }

func (l *libDriver) Init() error { return l.err("cuInit", l.cuInit(0)) }

func (l *libDriver) DriverVersion() (int, error) {
	var v int32
	r := l.cuDriverGetVersion(&v)
	return int(v), l.err("cuDriverGetVersion", r)
}

func (l *libDriver) DeviceCount() (int, error) {
	var n int32
	r := l.cuDeviceGetCount(&n)
	return int(n), l.err("cuDeviceGetCount", r)
}

func (l *libDriver) DeviceGet(ordinal int) (DeviceHandle, error) {
	var d int32
	r := l.cuDeviceGet(&d, int32(ordinal))
	return DeviceHandle(d), l.err("cuDeviceGet", r)
}

func (l *libDriver) DeviceGetName(d DeviceHandle) (string, error) {
	buf := make([]byte, 256)
	if r := l.cuDeviceGetName(&buf[0], int32(len(buf)), int32(d)); r != 0 {
		return "", l.err("cuDeviceGetName", r)
	}
	return cString(buf), nil
}

func (l *libDriver) DeviceGetAttribute(attr Attribute, d DeviceHandle) (int, error) {
	var v int32
	r := l.cuDeviceGetAttribute(&v, int32(attr), int32(d))
	return int(v), l.err("cuDeviceGetAttribute", r)
}

func (l *libDriver) DeviceTotalMem(d DeviceHandle) (int64, error) {
	var n uint64
	r := l.cuDeviceTotalMem_v2(&n, int32(d))
	return int64(n), l.err("cuDeviceTotalMem_v2", r)
}

func (l *libDriver) DevicePrimaryCtxRetain(d DeviceHandle) (Context, error) {
	var c uintptr
	r := l.cuDevicePrimaryCtxRetain(&c, int32(d))
	return Context(c), l.err("cuDevicePrimaryCtxRetain", r)
}

func (l *libDriver) DevicePrimaryCtxRelease(d DeviceHandle) error {
	return l.err("cuDevicePrimaryCtxRelease_v2", l.cuDevicePrimaryCtxRelease_v2(int32(d)))
}

func (l *libDriver) CtxSetCurrent(c Context) error {
	return l.err("cuCtxSetCurrent", l.cuCtxSetCurrent(uintptr(c)))
}

// JIT options of cuModuleLoadDataEx (CUjit_option values from cuda.h).
const (
	jitInfoLogBuffer          = 3
	jitInfoLogBufferSizeBytes = 4
	jitErrorLogBuffer         = 5
	jitErrorLogBufferSizeByte = 6
	jitLogVerbose             = 12
)

// jitLogSize is the size of each JIT log buffer.
var jitLogSize = 64 << 10

func (l *libDriver) ModuleLoadDataEx(ptx []byte) (ModuleHandle, string, error) {
	image := make([]byte, len(ptx)+1) // NUL-terminated
	copy(image, ptx)
	info := make([]byte, jitLogSize)
	elog := make([]byte, jitLogSize)
	opts := []int32{jitInfoLogBuffer, jitInfoLogBufferSizeBytes, jitErrorLogBuffer, jitErrorLogBufferSizeByte, jitLogVerbose}
	// The option values are void*: buffer addresses, sizes (which the
	// driver overwrites with the bytes written) and a flag.
	vals := []uintptr{
		uintptr(unsafe.Pointer(&info[0])), uintptr(len(info)),
		uintptr(unsafe.Pointer(&elog[0])), uintptr(len(elog)),
		1,
	}
	var m uintptr
	r := l.cuModuleLoadDataEx(&m, unsafe.Pointer(&image[0]), uint32(len(opts)), unsafe.Pointer(&opts[0]), unsafe.Pointer(&vals[0]))
	runtime.KeepAlive(info)
	runtime.KeepAlive(elog)
	runtime.KeepAlive(image)
	if r != 0 {
		return 0, cString(elog), l.err("cuModuleLoadDataEx", r)
	}
	return ModuleHandle(m), cString(info), nil
}

func (l *libDriver) ModuleGetFunction(m ModuleHandle, name string) (Function, error) {
	var f uintptr
	r := l.cuModuleGetFunction(&f, uintptr(m), name)
	return Function(f), l.err("cuModuleGetFunction", r)
}

func (l *libDriver) ModuleUnload(m ModuleHandle) error {
	return l.err("cuModuleUnload", l.cuModuleUnload(uintptr(m)))
}

func (l *libDriver) MemAlloc(n int64) (DevicePtr, error) {
	var p uint64
	r := l.cuMemAlloc_v2(&p, uint64(n))
	return DevicePtr(p), l.err("cuMemAlloc_v2", r)
}

func (l *libDriver) MemFree(p DevicePtr) error {
	return l.err("cuMemFree_v2", l.cuMemFree_v2(uint64(p)))
}

// hostPtr is the address of b's first byte (nil for an empty slice).
func hostPtr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

func (l *libDriver) MemcpyHtoD(dst DevicePtr, src []byte) error {
	r := l.cuMemcpyHtoD_v2(uint64(dst), hostPtr(src), uint64(len(src)))
	runtime.KeepAlive(src)
	return l.err("cuMemcpyHtoD_v2", r)
}

func (l *libDriver) MemcpyDtoH(dst []byte, src DevicePtr) error {
	r := l.cuMemcpyDtoH_v2(hostPtr(dst), uint64(src), uint64(len(dst)))
	runtime.KeepAlive(dst)
	return l.err("cuMemcpyDtoH_v2", r)
}

func (l *libDriver) MemcpyHtoDAsync(dst DevicePtr, src []byte, s Stream) error {
	return l.err("cuMemcpyHtoDAsync_v2", l.cuMemcpyHtoDAsync_v2(uint64(dst), hostPtr(src), uint64(len(src)), uintptr(s)))
}

func (l *libDriver) MemcpyDtoHAsync(dst []byte, src DevicePtr, s Stream) error {
	return l.err("cuMemcpyDtoHAsync_v2", l.cuMemcpyDtoHAsync_v2(hostPtr(dst), uint64(src), uint64(len(dst)), uintptr(s)))
}

func (l *libDriver) MemsetD8(p DevicePtr, v byte, n int64) error {
	return l.err("cuMemsetD8_v2", l.cuMemsetD8_v2(uint64(p), uint32(v), uint64(n)))
}

func (l *libDriver) MemsetD8Async(p DevicePtr, v byte, n int64, s Stream) error {
	return l.err("cuMemsetD8Async", l.cuMemsetD8Async(uint64(p), uint32(v), uint64(n), uintptr(s)))
}

// memHostAllocPortable is CU_MEMHOSTALLOC_PORTABLE: pinned for every context.
const memHostAllocPortable = 1

func (l *libDriver) MemHostAlloc(n int64) ([]byte, error) {
	var p unsafe.Pointer
	if r := l.cuMemHostAlloc(&p, uint64(n), memHostAllocPortable); r != 0 {
		return nil, l.err("cuMemHostAlloc", r)
	}
	return unsafe.Slice((*byte)(p), n), nil
}

func (l *libDriver) MemFreeHost(b []byte) error {
	return l.err("cuMemFreeHost", l.cuMemFreeHost(hostPtr(b)))
}

func (l *libDriver) MemGetInfo() (free, total int64, err error) {
	var f, t uint64
	r := l.cuMemGetInfo_v2(&f, &t)
	return int64(f), int64(t), l.err("cuMemGetInfo_v2", r)
}

func (l *libDriver) LaunchKernel(f Function, grid, block [3]uint32, sharedBytes uint32, s Stream, params []uint64) error {
	argp, vals, ptrs := kernelParams(params)
	r := l.cuLaunchKernel(uintptr(f), grid[0], grid[1], grid[2], block[0], block[1], block[2], sharedBytes, uintptr(s), argp, nil)
	runtime.KeepAlive(vals)
	runtime.KeepAlive(ptrs)
	return l.err("cuLaunchKernel", r)
}

// kernelParams is cuLaunchKernel's kernelParams: an array of pointers, one to each parameter's
// value (the driver copies the values during the call; keep vals and ptrs alive until then).
func kernelParams(params []uint64) (argp unsafe.Pointer, vals []uint64, ptrs []unsafe.Pointer) {
	vals = make([]uint64, len(params))
	ptrs = make([]unsafe.Pointer, len(params))
	copy(vals, params)
	for i := range vals {
		ptrs[i] = unsafe.Pointer(&vals[i])
	}
	if len(ptrs) > 0 {
		argp = unsafe.Pointer(&ptrs[0])
	}
	return argp, vals, ptrs
}

// LaunchKernelDependent is cuLaunchKernelEx with the programmatic stream serialization attribute
// (pdl.go); a driver library without cuLaunchKernelEx launches as LaunchKernel does.
func (l *libDriver) LaunchKernelDependent(f Function, grid, block [3]uint32, sharedBytes uint32, s Stream, params []uint64) error {
	if l.cuLaunchKernelEx == nil {
		return l.LaunchKernel(f, grid, block, sharedBytes, s, params)
	}
	cfg, attr := dependentConfig(grid, block, sharedBytes, s)
	argp, vals, ptrs := kernelParams(params)
	r := l.cuLaunchKernelEx(unsafe.Pointer(cfg), uintptr(f), argp, nil)
	runtime.KeepAlive(cfg)
	runtime.KeepAlive(attr)
	runtime.KeepAlive(vals)
	runtime.KeepAlive(ptrs)
	return l.err("cuLaunchKernelEx", r)
}

// streamNonBlocking is CU_STREAM_NON_BLOCKING: no implicit synchronization
// with the legacy default stream.
const streamNonBlocking = 1

func (l *libDriver) StreamCreate() (Stream, error) {
	var s uintptr
	r := l.cuStreamCreate(&s, streamNonBlocking)
	return Stream(s), l.err("cuStreamCreate", r)
}

func (l *libDriver) StreamSynchronize(s Stream) error {
	return l.err("cuStreamSynchronize", l.cuStreamSynchronize(uintptr(s)))
}

func (l *libDriver) StreamDestroy(s Stream) error {
	return l.err("cuStreamDestroy_v2", l.cuStreamDestroy_v2(uintptr(s)))
}

func (l *libDriver) StreamWaitEvent(s Stream, e Event) error {
	return l.err("cuStreamWaitEvent", l.cuStreamWaitEvent(uintptr(s), uintptr(e), 0))
}

// hostFuncCallback is the C function every cuLaunchHostFunc is given: it runs
// the Go function its userData numbers. One callback serves every call, as
// purego's callbacks are few and never freed.
var hostFuncCallback = sync.OnceValue(func() uintptr {
	return purego.NewCallback(func(userData uintptr) { runHostFunc(userData) })
})

func (l *libDriver) LaunchHostFunc(s Stream, f func()) error {
	id := registerHostFunc(f)
	if err := l.err("cuLaunchHostFunc", l.cuLaunchHostFunc(uintptr(s), hostFuncCallback(), id)); err != nil {
		dropHostFunc(id)
		return err
	}
	return nil
}

func (l *libDriver) EventCreate() (Event, error) {
	var e uintptr
	r := l.cuEventCreate(&e, 0)
	return Event(e), l.err("cuEventCreate", r)
}

func (l *libDriver) EventRecord(e Event, s Stream) error {
	return l.err("cuEventRecord", l.cuEventRecord(uintptr(e), uintptr(s)))
}

func (l *libDriver) EventSynchronize(e Event) error {
	return l.err("cuEventSynchronize", l.cuEventSynchronize(uintptr(e)))
}

func (l *libDriver) EventElapsedTime(start, end Event) (float32, error) {
	var ms float32
	r := l.cuEventElapsedTime(&ms, uintptr(start), uintptr(end))
	return ms, l.err("cuEventElapsedTime", r)
}

func (l *libDriver) EventDestroy(e Event) error {
	return l.err("cuEventDestroy_v2", l.cuEventDestroy_v2(uintptr(e)))
}

// captureModeGlobal is CU_STREAM_CAPTURE_MODE_GLOBAL: while any capture is active, calls that
// could synchronize with it fail.
const captureModeGlobal = 0

// noGraphs is the error of a graph call on a driver library without the graph functions.
func (l *libDriver) noGraphs(call string) error {
	if l.cuGraphLaunch != nil {
		return nil
	}
	return &Error{Call: call, Code: ResultNotSupported, Name: "CUDA_ERROR_NOT_SUPPORTED",
		Msg: "the driver library " + l.path + " has no CUDA graph functions (CUDA 11.4 or newer has them)"}
}

func (l *libDriver) StreamBeginCapture(s Stream) error {
	if err := l.noGraphs("cuStreamBeginCapture_v2"); err != nil {
		return err
	}
	return l.err("cuStreamBeginCapture_v2", l.cuStreamBeginCapture_v2(uintptr(s), captureModeGlobal))
}

func (l *libDriver) StreamEndCapture(s Stream) (Graph, error) {
	if err := l.noGraphs("cuStreamEndCapture"); err != nil {
		return 0, err
	}
	var g uintptr
	r := l.cuStreamEndCapture(uintptr(s), &g)
	return Graph(g), l.err("cuStreamEndCapture", r)
}

func (l *libDriver) GraphInstantiate(g Graph) (GraphExec, error) {
	if err := l.noGraphs("cuGraphInstantiateWithFlags"); err != nil {
		return 0, err
	}
	var e uintptr
	r := l.cuGraphInstantiateWithFlags(&e, uintptr(g), 0)
	return GraphExec(e), l.err("cuGraphInstantiateWithFlags", r)
}

func (l *libDriver) GraphLaunch(e GraphExec, s Stream) error {
	if err := l.noGraphs("cuGraphLaunch"); err != nil {
		return err
	}
	return l.err("cuGraphLaunch", l.cuGraphLaunch(uintptr(e), uintptr(s)))
}

func (l *libDriver) GraphExecDestroy(e GraphExec) error {
	if err := l.noGraphs("cuGraphExecDestroy"); err != nil {
		return err
	}
	return l.err("cuGraphExecDestroy", l.cuGraphExecDestroy(uintptr(e)))
}

func (l *libDriver) GraphDestroy(g Graph) error {
	if err := l.noGraphs("cuGraphDestroy"); err != nil {
		return err
	}
	return l.err("cuGraphDestroy", l.cuGraphDestroy(uintptr(g)))
}

func (l *libDriver) GetErrorName(r Result) string {
	var p unsafe.Pointer
	if l.cuGetErrorName(int32(r), &p) != 0 || p == nil {
		return fmt.Sprintf("CUresult %d", int(r))
	}
	return goString(p)
}

func (l *libDriver) GetErrorString(r Result) string {
	var p unsafe.Pointer
	if l.cuGetErrorString(int32(r), &p) != 0 || p == nil {
		return "unknown error"
	}
	return goString(p)
}

// goString copies the NUL-terminated C string at p (static driver memory).
func goString(p unsafe.Pointer) string {
	n := 0
	for *(*byte)(unsafe.Add(p, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(p), n))
}
