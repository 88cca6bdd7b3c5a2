package gcomp_test

import (
	"sync"

	"github.com/gcomp/gcomp/runtime/cuda"
)

// lockedDriver serializes every call to drv, as the CUDA driver library is safe for use from
// several threads and the simulator-backed driver leaves that to its caller: a session's
// streams then run from many goroutines at once over one simulated GPU.
type lockedDriver struct {
	mu  sync.Mutex
	drv cuda.Driver
}

var _ cuda.Driver = (*lockedDriver)(nil)

func (l *lockedDriver) Init() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.Init()
}

func (l *lockedDriver) DriverVersion() (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.DriverVersion()
}

func (l *lockedDriver) DeviceCount() (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.DeviceCount()
}

func (l *lockedDriver) DeviceGet(ordinal int) (cuda.DeviceHandle, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.DeviceGet(ordinal)
}

func (l *lockedDriver) DeviceGetName(d cuda.DeviceHandle) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.DeviceGetName(d)
}

func (l *lockedDriver) DeviceGetAttribute(attr cuda.Attribute, d cuda.DeviceHandle) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.DeviceGetAttribute(attr, d)
}

func (l *lockedDriver) DeviceTotalMem(d cuda.DeviceHandle) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.DeviceTotalMem(d)
}

func (l *lockedDriver) DevicePrimaryCtxRetain(d cuda.DeviceHandle) (cuda.Context, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.DevicePrimaryCtxRetain(d)
}

func (l *lockedDriver) DevicePrimaryCtxRelease(d cuda.DeviceHandle) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.DevicePrimaryCtxRelease(d)
}

func (l *lockedDriver) CtxSetCurrent(c cuda.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.CtxSetCurrent(c)
}

func (l *lockedDriver) ModuleLoadDataEx(ptx []byte) (cuda.ModuleHandle, string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.ModuleLoadDataEx(ptx)
}

func (l *lockedDriver) ModuleGetFunction(m cuda.ModuleHandle, name string) (cuda.Function, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.ModuleGetFunction(m, name)
}

func (l *lockedDriver) ModuleUnload(m cuda.ModuleHandle) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.ModuleUnload(m)
}

func (l *lockedDriver) MemAlloc(n int64) (cuda.DevicePtr, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.MemAlloc(n)
}

func (l *lockedDriver) MemFree(p cuda.DevicePtr) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.MemFree(p)
}

func (l *lockedDriver) MemcpyHtoD(dst cuda.DevicePtr, src []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.MemcpyHtoD(dst, src)
}

func (l *lockedDriver) MemcpyDtoH(dst []byte, src cuda.DevicePtr) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.MemcpyDtoH(dst, src)
}

func (l *lockedDriver) MemcpyHtoDAsync(dst cuda.DevicePtr, src []byte, s cuda.Stream) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.MemcpyHtoDAsync(dst, src, s)
}

func (l *lockedDriver) MemcpyDtoHAsync(dst []byte, src cuda.DevicePtr, s cuda.Stream) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.MemcpyDtoHAsync(dst, src, s)
}

func (l *lockedDriver) MemsetD8(p cuda.DevicePtr, v byte, n int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.MemsetD8(p, v, n)
}

func (l *lockedDriver) MemsetD8Async(p cuda.DevicePtr, v byte, n int64, s cuda.Stream) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.MemsetD8Async(p, v, n, s)
}

func (l *lockedDriver) MemHostAlloc(n int64) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.MemHostAlloc(n)
}

func (l *lockedDriver) MemFreeHost(b []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.MemFreeHost(b)
}

func (l *lockedDriver) MemGetInfo() (int64, int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.MemGetInfo()
}

func (l *lockedDriver) LaunchKernel(f cuda.Function, grid [3]uint32, block [3]uint32, sharedBytes uint32, s cuda.Stream, params []uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.LaunchKernel(f, grid, block, sharedBytes, s, params)
}

func (l *lockedDriver) StreamCreate() (cuda.Stream, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.StreamCreate()
}

func (l *lockedDriver) StreamSynchronize(s cuda.Stream) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.StreamSynchronize(s)
}

func (l *lockedDriver) StreamWaitEvent(s cuda.Stream, e cuda.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.StreamWaitEvent(s, e)
}

func (l *lockedDriver) StreamDestroy(s cuda.Stream) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.StreamDestroy(s)
}

func (l *lockedDriver) EventCreate() (cuda.Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.EventCreate()
}

func (l *lockedDriver) EventRecord(e cuda.Event, s cuda.Stream) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.EventRecord(e, s)
}

func (l *lockedDriver) EventSynchronize(e cuda.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.EventSynchronize(e)
}

func (l *lockedDriver) EventElapsedTime(start cuda.Event, end cuda.Event) (float32, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.EventElapsedTime(start, end)
}

func (l *lockedDriver) EventDestroy(e cuda.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.EventDestroy(e)
}

func (l *lockedDriver) StreamBeginCapture(s cuda.Stream) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.StreamBeginCapture(s)
}

func (l *lockedDriver) StreamEndCapture(s cuda.Stream) (cuda.Graph, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.StreamEndCapture(s)
}

func (l *lockedDriver) GraphInstantiate(g cuda.Graph) (cuda.GraphExec, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.GraphInstantiate(g)
}

func (l *lockedDriver) GraphLaunch(e cuda.GraphExec, s cuda.Stream) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.GraphLaunch(e, s)
}

func (l *lockedDriver) GraphExecDestroy(e cuda.GraphExec) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.GraphExecDestroy(e)
}

func (l *lockedDriver) GraphDestroy(g cuda.Graph) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.GraphDestroy(g)
}

func (l *lockedDriver) LaunchHostFunc(s cuda.Stream, f func()) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.LaunchHostFunc(s, f)
}

func (l *lockedDriver) GetErrorName(r cuda.Result) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.GetErrorName(r)
}

func (l *lockedDriver) GetErrorString(r cuda.Result) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drv.GetErrorString(r)
}
