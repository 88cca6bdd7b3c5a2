//go:build gorgonia

package cuda

// The Driver over gorgonia.org/cu, for builds that link the CUDA driver at
// build time: go build -tags gorgonia, with cgo, cuda.h and libcuda.so from
// CUDA 11.8 or older (gorgonia.org/cu v0.9.6 does not build against CUDA 12
// headers). Such a binary needs libcuda.so.1 to start, and gorgonia.org/cu's
// package initialization calls cuInit and exits the process when it fails
// (on a machine without a GPU): the default, cgo-free build does neither.
//
// gorgonia.org/cu wraps neither cuMemHostAlloc nor cuGetErrorName and
// cuGetErrorString; this file calls those three through cgo itself.

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>
*/
import "C"

import (
	"reflect"
	"sync"
	"unsafe"

	"gorgonia.org/cu"
)

// gorgoniaDriver is the Driver over gorgonia.org/cu. Its handles index
// tables of the library's values.
type gorgoniaDriver struct {
	mu      sync.Mutex
	next    uintptr
	ctxs    map[uintptr]cu.CUContext
	modules map[uintptr]cu.Module
	funcs   map[uintptr]cu.Function
	streams map[uintptr]cu.Stream
	events  map[uintptr]cu.Event
}

var theGorgoniaDriver = &gorgoniaDriver{
	ctxs: map[uintptr]cu.CUContext{}, modules: map[uintptr]cu.Module{}, funcs: map[uintptr]cu.Function{},
	streams: map[uintptr]cu.Stream{}, events: map[uintptr]cu.Event{},
}

// loadLibrary returns the linked driver; the path is not used.
func loadLibrary(string) (Driver, error) { return theGorgoniaDriver, nil }

// add stores v in table and returns its new handle.
func add[T any](g *gorgoniaDriver, table map[uintptr]T, v T) uintptr {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.next++
	table[g.next] = v
	return g.next
}

func get[T any](g *gorgoniaDriver, table map[uintptr]T, h uintptr) T {
	g.mu.Lock()
	defer g.mu.Unlock()
	return table[h]
}

func drop[T any](g *gorgoniaDriver, table map[uintptr]T, h uintptr) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(table, h)
}

// wrap turns a gorgonia.org/cu error (an integer CUresult type) into an *Error.
func (g *gorgoniaDriver) wrap(call string, err error) error {
	if err == nil {
		return nil
	}
	v := reflect.ValueOf(err)
	if v.Kind() != reflect.Int {
		return &Error{Call: call, Code: ResultUnknown, Name: "CUDA_ERROR_UNKNOWN", Msg: err.Error()}
	}
	return newError(g, call, Result(v.Int()))
}

func (g *gorgoniaDriver) Init() error {
	return newError(g, "cuInit", Result(C.cuInit(0)))
}

func (g *gorgoniaDriver) DriverVersion() (int, error) {
	var v C.int
	r := C.cuDriverGetVersion(&v)
	return int(v), newError(g, "cuDriverGetVersion", Result(r))
}

func (g *gorgoniaDriver) DeviceCount() (int, error) {
	n, err := cu.NumDevices()
	return n, g.wrap("cuDeviceGetCount", err)
}

func (g *gorgoniaDriver) DeviceGet(ordinal int) (DeviceHandle, error) {
	d, err := cu.GetDevice(ordinal)
	return DeviceHandle(d), g.wrap("cuDeviceGet", err)
}

func (g *gorgoniaDriver) DeviceGetName(d DeviceHandle) (string, error) {
	s, err := cu.Device(d).Name()
	return s, g.wrap("cuDeviceGetName", err)
}

func (g *gorgoniaDriver) DeviceGetAttribute(attr Attribute, d DeviceHandle) (int, error) {
	v, err := cu.Device(d).Attribute(cu.DeviceAttribute(attr))
	return v, g.wrap("cuDeviceGetAttribute", err)
}

func (g *gorgoniaDriver) DeviceTotalMem(d DeviceHandle) (int64, error) {
	n, err := cu.Device(d).TotalMem()
	return n, g.wrap("cuDeviceTotalMem_v2", err)
}

func (g *gorgoniaDriver) DevicePrimaryCtxRetain(d DeviceHandle) (Context, error) {
	c, err := cu.Device(d).RetainPrimaryCtx()
	if err != nil {
		return 0, g.wrap("cuDevicePrimaryCtxRetain", err)
	}
	return Context(add(g, g.ctxs, c)), nil
}

func (g *gorgoniaDriver) DevicePrimaryCtxRelease(d DeviceHandle) error {
	return g.wrap("cuDevicePrimaryCtxRelease_v2", cu.Device(d).ReleasePrimaryCtx())
}

func (g *gorgoniaDriver) CtxSetCurrent(c Context) error {
	return g.wrap("cuCtxSetCurrent", cu.SetCurrentContext(get(g, g.ctxs, uintptr(c))))
}

func (g *gorgoniaDriver) ModuleLoadDataEx(ptx []byte) (ModuleHandle, string, error) {
	info := &cu.JITInfoLogBuffer{Buffer: make([]byte, 64<<10)}
	elog := &cu.JITErrorLogBuffer{Buffer: make([]byte, 64<<10)}
	m, err := cu.LoadDataEx(string(ptx), info, elog)
	if err != nil {
		return 0, cString(elog.Buffer), g.wrap("cuModuleLoadDataEx", err)
	}
	return ModuleHandle(add(g, g.modules, m)), cString(info.Buffer), nil
}

func (g *gorgoniaDriver) ModuleGetFunction(m ModuleHandle, name string) (Function, error) {
	f, err := get(g, g.modules, uintptr(m)).Function(name)
	if err != nil {
		return 0, g.wrap("cuModuleGetFunction", err)
	}
	return Function(add(g, g.funcs, f)), nil
}

func (g *gorgoniaDriver) ModuleUnload(m ModuleHandle) error {
	err := get(g, g.modules, uintptr(m)).Unload()
	drop(g, g.modules, uintptr(m))
	return g.wrap("cuModuleUnload", err)
}

func (g *gorgoniaDriver) MemAlloc(n int64) (DevicePtr, error) {
	p, err := cu.MemAlloc(n)
	return DevicePtr(p), g.wrap("cuMemAlloc_v2", err)
}

func (g *gorgoniaDriver) MemFree(p DevicePtr) error {
	return g.wrap("cuMemFree_v2", cu.MemFree(cu.DevicePtr(p)))
}

// hostAddr is the address of b's first byte (nil for an empty slice).
func hostAddr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

func (g *gorgoniaDriver) MemcpyHtoD(dst DevicePtr, src []byte) error {
	return g.wrap("cuMemcpyHtoD_v2", cu.MemcpyHtoD(cu.DevicePtr(dst), hostAddr(src), int64(len(src))))
}

func (g *gorgoniaDriver) MemcpyDtoH(dst []byte, src DevicePtr) error {
	return g.wrap("cuMemcpyDtoH_v2", cu.MemcpyDtoH(hostAddr(dst), cu.DevicePtr(src), int64(len(dst))))
}

func (g *gorgoniaDriver) MemcpyHtoDAsync(dst DevicePtr, src []byte, s Stream) error {
	st := get(g, g.streams, uintptr(s))
	return g.wrap("cuMemcpyHtoDAsync_v2", cu.MemcpyHtoDAsync(cu.DevicePtr(dst), hostAddr(src), int64(len(src)), st))
}

func (g *gorgoniaDriver) MemcpyDtoHAsync(dst []byte, src DevicePtr, s Stream) error {
	st := get(g, g.streams, uintptr(s))
	return g.wrap("cuMemcpyDtoHAsync_v2", cu.MemcpyDtoHAsync(hostAddr(dst), cu.DevicePtr(src), int64(len(dst)), st))
}

func (g *gorgoniaDriver) MemsetD8(p DevicePtr, v byte, n int64) error {
	return g.wrap("cuMemsetD8_v2", cu.MemsetD8(cu.DevicePtr(p), v, n))
}

func (g *gorgoniaDriver) MemsetD8Async(p DevicePtr, v byte, n int64, s Stream) error {
	return g.wrap("cuMemsetD8Async", cu.MemsetD8Async(cu.DevicePtr(p), v, n, get(g, g.streams, uintptr(s))))
}

func (g *gorgoniaDriver) MemHostAlloc(n int64) ([]byte, error) {
	var p unsafe.Pointer
	if r := C.cuMemHostAlloc(&p, C.size_t(n), C.CU_MEMHOSTALLOC_PORTABLE); r != C.CUDA_SUCCESS {
		return nil, newError(g, "cuMemHostAlloc", Result(r))
	}
	return unsafe.Slice((*byte)(p), n), nil
}

func (g *gorgoniaDriver) MemFreeHost(b []byte) error {
	return g.wrap("cuMemFreeHost", cu.MemFreeHost(hostAddr(b)))
}

func (g *gorgoniaDriver) MemGetInfo() (free, total int64, err error) {
	free, total, err = cu.MemInfo()
	return free, total, g.wrap("cuMemGetInfo_v2", err)
}

func (g *gorgoniaDriver) LaunchKernel(f Function, grid, block [3]uint32, sharedBytes uint32, s Stream, params []uint64) error {
	vals := append([]uint64(nil), params...)
	ptrs := make([]unsafe.Pointer, len(vals))
	for i := range vals {
		ptrs[i] = unsafe.Pointer(&vals[i])
	}
	fn := get(g, g.funcs, uintptr(f))
	err := fn.Launch(int(grid[0]), int(grid[1]), int(grid[2]), int(block[0]), int(block[1]), int(block[2]),
		int(sharedBytes), get(g, g.streams, uintptr(s)), ptrs)
	return g.wrap("cuLaunchKernel", err)
}

func (g *gorgoniaDriver) StreamCreate() (Stream, error) {
	s, err := cu.MakeStream(cu.NonBlocking)
	if err != nil {
		return 0, g.wrap("cuStreamCreate", err)
	}
	return Stream(add(g, g.streams, s)), nil
}

func (g *gorgoniaDriver) StreamSynchronize(s Stream) error {
	return g.wrap("cuStreamSynchronize", get(g, g.streams, uintptr(s)).Synchronize())
}

func (g *gorgoniaDriver) StreamDestroy(s Stream) error {
	st := get(g, g.streams, uintptr(s))
	drop(g, g.streams, uintptr(s))
	return g.wrap("cuStreamDestroy_v2", st.Destroy())
}

func (g *gorgoniaDriver) StreamWaitEvent(s Stream, e Event) error {
	return g.wrap("cuStreamWaitEvent", get(g, g.streams, uintptr(s)).Wait(get(g, g.events, uintptr(e)), 0))
}

func (g *gorgoniaDriver) EventCreate() (Event, error) {
	e, err := cu.MakeEvent(cu.DefaultEvent)
	if err != nil {
		return 0, g.wrap("cuEventCreate", err)
	}
	return Event(add(g, g.events, e)), nil
}

func (g *gorgoniaDriver) EventRecord(e Event, s Stream) error {
	return g.wrap("cuEventRecord", get(g, g.events, uintptr(e)).Record(get(g, g.streams, uintptr(s))))
}

func (g *gorgoniaDriver) EventSynchronize(e Event) error {
	return g.wrap("cuEventSynchronize", get(g, g.events, uintptr(e)).Synchronize())
}

func (g *gorgoniaDriver) EventElapsedTime(start, end Event) (float32, error) {
	ms, err := get(g, g.events, uintptr(start)).Elapsed(get(g, g.events, uintptr(end)))
	return float32(ms), g.wrap("cuEventElapsedTime", err)
}

func (g *gorgoniaDriver) EventDestroy(e Event) error {
	ev := get(g, g.events, uintptr(e))
	drop(g, g.events, uintptr(e))
	return g.wrap("cuEventDestroy_v2", cu.DestroyEvent(&ev))
}

func (g *gorgoniaDriver) GetErrorName(r Result) string {
	var s *C.char
	if C.cuGetErrorName(C.CUresult(r), &s) != C.CUDA_SUCCESS || s == nil {
		return ""
	}
	return C.GoString(s)
}

func (g *gorgoniaDriver) GetErrorString(r Result) string {
	var s *C.char
	if C.cuGetErrorString(C.CUresult(r), &s) != C.CUDA_SUCCESS || s == nil {
		return ""
	}
	return C.GoString(s)
}
