package cuda

import (
	"errors"
	"fmt"
)

// Driver is the part of the CUDA driver API the runtime uses. Each method is
// one driver call (the name says which; the symbol is the one cuda.h maps the
// name to, e.g. MemAlloc is cuMemAlloc_v2) and returns the driver's failure
// as an *Error. Host buffers are Go slices; device memory is a DevicePtr.
//
// Implementations: the default one loads libcuda.so.1 at run time (Load),
// the one behind the build tag gorgonia links gorgonia.org/cu, and the tests
// use an in-memory fake.
type Driver interface {
	// Init is cuInit(0). It fails with CUDA_ERROR_NO_DEVICE when the driver
	// sees no GPU; errors.Is(err, ErrNoDevice) reports that case.
	Init() error
	// DriverVersion is cuDriverGetVersion: 1000*major + 10*minor (12020 is 12.2).
	// It works before Init.
	DriverVersion() (int, error)
	DeviceCount() (int, error)
	DeviceGet(ordinal int) (DeviceHandle, error)
	DeviceGetName(d DeviceHandle) (string, error)
	DeviceGetAttribute(attr Attribute, d DeviceHandle) (int, error)
	DeviceTotalMem(d DeviceHandle) (int64, error)

	// DevicePrimaryCtxRetain and DevicePrimaryCtxRelease manage the device's
	// primary context (the one the CUDA runtime and libraries such as NCCL
	// share); CtxSetCurrent binds a context to the calling OS thread.
	DevicePrimaryCtxRetain(d DeviceHandle) (Context, error)
	DevicePrimaryCtxRelease(d DeviceHandle) error
	CtxSetCurrent(c Context) error

	// ModuleLoadDataEx JIT-compiles PTX text for the current context. log is
	// what the JIT wrote to its error log (on failure) or info log (on
	// success), possibly empty.
	ModuleLoadDataEx(ptx []byte) (m ModuleHandle, log string, err error)
	ModuleGetFunction(m ModuleHandle, name string) (Function, error)
	ModuleUnload(m ModuleHandle) error

	MemAlloc(n int64) (DevicePtr, error)
	MemFree(p DevicePtr) error
	MemcpyHtoD(dst DevicePtr, src []byte) error
	MemcpyDtoH(dst []byte, src DevicePtr) error
	// The asynchronous copies are ordered on s; the host buffer must stay
	// untouched until the stream has passed the copy, and should be pinned
	// (MemHostAlloc) for the copy to be truly asynchronous.
	MemcpyHtoDAsync(dst DevicePtr, src []byte, s Stream) error
	MemcpyDtoHAsync(dst []byte, src DevicePtr, s Stream) error
	MemsetD8(p DevicePtr, v byte, n int64) error
	MemsetD8Async(p DevicePtr, v byte, n int64, s Stream) error
	// MemHostAlloc returns n bytes of page-locked host memory (portable to
	// every context); MemFreeHost frees it.
	MemHostAlloc(n int64) ([]byte, error)
	MemFreeHost(b []byte) error
	MemGetInfo() (free, total int64, err error)

	// LaunchKernel is cuLaunchKernel with kernelParams: params[i] is the value
	// of the kernel's i-th parameter (every gcomp kernel parameter is a .u64);
	// the implementation passes a pointer to each value.
	LaunchKernel(f Function, grid, block [3]uint32, sharedBytes uint32, s Stream, params []uint64) error

	StreamCreate() (Stream, error) // CU_STREAM_NON_BLOCKING
	StreamSynchronize(s Stream) error
	// StreamWaitEvent is cuStreamWaitEvent(s, e, 0): work issued to s after
	// the call waits until the work captured by e's most recent EventRecord
	// is done (at once if e was never recorded). The host does not wait.
	StreamWaitEvent(s Stream, e Event) error
	StreamDestroy(s Stream) error
	// LaunchHostFunc is cuLaunchHostFunc: f runs on a thread of the driver
	// once the work issued to s before it is done, and the work issued to s
	// after it waits until f returns. f must not call the driver.
	LaunchHostFunc(s Stream, f func()) error

	EventCreate() (Event, error) // CU_EVENT_DEFAULT: timing enabled
	EventRecord(e Event, s Stream) error
	EventSynchronize(e Event) error
	// EventElapsedTime is the time from start to end in milliseconds.
	EventElapsedTime(start, end Event) (float32, error)
	EventDestroy(e Event) error

	// CUDA graphs. StreamBeginCapture is cuStreamBeginCapture_v2 in
	// CU_STREAM_CAPTURE_MODE_GLOBAL: work issued to s is recorded, not run, until
	// StreamEndCapture returns it as a graph; while the capture is active a call
	// that would synchronize with it fails (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
	// and invalidates it (StreamEndCapture then fails with
	// CUDA_ERROR_STREAM_CAPTURE_INVALIDATED). GraphInstantiate is
	// cuGraphInstantiateWithFlags (flags 0); GraphLaunch queues all of an
	// instantiated graph's work on a stream, in one call.
	StreamBeginCapture(s Stream) error
	StreamEndCapture(s Stream) (Graph, error)
	GraphInstantiate(g Graph) (GraphExec, error)
	GraphLaunch(e GraphExec, s Stream) error
	GraphExecDestroy(e GraphExec) error
	GraphDestroy(g Graph) error

	// GetErrorName and GetErrorString describe a CUresult
	// ("CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected").
	GetErrorName(r Result) string
	GetErrorString(r Result) string
}

// Opaque driver handles.
type (
	DeviceHandle int32   // CUdevice
	Context      uintptr // CUcontext
	ModuleHandle uintptr // CUmodule
	Function     uintptr // CUfunction
	Stream       uintptr // CUstream
	Event        uintptr // CUevent
	DevicePtr    uint64  // CUdeviceptr
	Graph        uintptr // CUgraph
	GraphExec    uintptr // CUgraphExec
)

// Attribute is a CUdevice_attribute.
type Attribute int32

// The device attributes the runtime reads (values from cuda.h).
const (
	AttrMultiprocessorCount    Attribute = 16
	AttrComputeCapabilityMajor Attribute = 75
	AttrComputeCapabilityMinor Attribute = 76
)

// Result is a CUresult.
type Result int32

// The results the runtime tells apart (values from cuda.h).
const (
	Success                     Result = 0
	ResultInvalidValue          Result = 1
	ResultOutOfMemory           Result = 2
	ResultNotInitialized        Result = 3
	ResultNoDevice              Result = 100
	ResultInvalidDevice         Result = 101
	ResultInvalidImage          Result = 200
	ResultInvalidContext        Result = 201
	ResultNoBinaryForGPU        Result = 209
	ResultInvalidPTX            Result = 218
	ResultUnsupportedPTXVersion Result = 222
	ResultInvalidHandle         Result = 400
	ResultIllegalState          Result = 401
	ResultNotFound              Result = 500
	ResultIllegalAddress        Result = 700
	ResultLaunchOutOfResources  Result = 701
	ResultLaunchFailed          Result = 719
	ResultNotSupported          Result = 801
	ResultCaptureUnsupported    Result = 900 // CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
	ResultCaptureInvalidated    Result = 901 // CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
	ResultUnknown               Result = 999
)

// Error is a failed driver call.
type Error struct {
	Call string // the driver function, e.g. "cuMemAlloc_v2"
	Code Result
	Name string // from cuGetErrorName, e.g. "CUDA_ERROR_OUT_OF_MEMORY"
	Msg  string // from cuGetErrorString, e.g. "out of memory"
}

func (e *Error) Error() string {
	name := e.Name
	if name == "" {
		name = fmt.Sprintf("CUresult %d", int(e.Code))
	}
	if e.Msg == "" {
		return e.Call + ": " + name
	}
	return e.Call + ": " + name + ": " + e.Msg
}

// Is makes errors.Is(err, ErrNoDevice) true for CUDA_ERROR_NO_DEVICE.
func (e *Error) Is(target error) bool {
	return target == ErrNoDevice && e.Code == ResultNoDevice
}

// newError describes r, the result of call, with the driver's own words.
func newError(d Driver, call string, r Result) error {
	if r == Success {
		return nil
	}
	return &Error{Call: call, Code: r, Name: d.GetErrorName(r), Msg: d.GetErrorString(r)}
}

// ErrNoLibrary is the error Load returns (wrapped, with the loader's
// message) when there is no driver library to load.
var ErrNoLibrary = errors.New("no CUDA driver library (libcuda.so.1) found")

// ErrNoDevice matches the error Init returns when the driver sees no GPU.
var ErrNoDevice = errors.New("no CUDA device")

// CodeOf returns the CUresult an error carries, or Success when it carries none.
func CodeOf(err error) Result {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Success
}
