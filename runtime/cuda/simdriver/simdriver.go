// Package simdriver is a cuda.Driver whose GPU is the PTX simulator. The CUDA device's own code
// (staging buffers, stream ordering, argument packing, events, error reporting) runs real compiled
// models through it on machines without a GPU: tests use it, and so can anyone who wants the CUDA
// code path checked short of the hardware.
//
// It reports one device, "PTX simulator", of compute capability 9.0. Launches run synchronously
// at cuLaunchKernel; a kernel that fails does so asynchronously, as on a GPU: its error is
// returned by the next synchronization. Event times are the simulator's wall clock.
package simdriver

import (
	"fmt"
	"time"

	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
)

// Driver is a cuda.Driver whose "GPU" is the PTX simulator: device
// memory, modules and launches go to a simdev.Device. It lets the CUDA
// device's own code (staging, ordering, argument packing, events, errors)
// run real compiled models without a GPU. A kernel that fails on the
// simulator fails asynchronously, as on a GPU: at the next synchronization.
type Driver struct {
	dev       *simdev.Device
	modules   map[cuda.ModuleHandle]executor.Module
	funcs     []simFunc // Function h is funcs[h-1]
	pending   error
	events    map[cuda.Event]time.Time // when each was recorded
	lastEvent cuda.Event
}

type simFunc struct {
	m    executor.Module
	name string
}

// New returns a driver over a fresh simulated device with all checks on.
func New() *Driver {
	return &Driver{dev: simdev.New(simdev.Options{}), modules: map[cuda.ModuleHandle]executor.Module{}, events: map[cuda.Event]time.Time{}}
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
	err := s.modules[m].Close()
	delete(s.modules, m)
	return err
}

func (s *Driver) MemAlloc(n int64) (cuda.DevicePtr, error) {
	p, err := s.dev.Alloc(n)
	return cuda.DevicePtr(p), err
}
func (s *Driver) MemFree(p cuda.DevicePtr) error { return s.dev.Free(executor.Ptr(p)) }
func (s *Driver) MemcpyHtoD(dst cuda.DevicePtr, src []byte) error {
	return s.dev.Write(executor.Ptr(dst), src)
}
func (s *Driver) MemcpyDtoH(dst []byte, src cuda.DevicePtr) error {
	return s.dev.Read(dst, executor.Ptr(src))
}
func (s *Driver) MemcpyHtoDAsync(dst cuda.DevicePtr, src []byte, _ cuda.Stream) error {
	return s.MemcpyHtoD(dst, src)
}
func (s *Driver) MemcpyDtoHAsync(dst []byte, src cuda.DevicePtr, _ cuda.Stream) error {
	return s.MemcpyDtoH(dst, src)
}
func (s *Driver) MemsetD8(p cuda.DevicePtr, v byte, n int64) error {
	if v != 0 {
		return fmt.Errorf("Driver: memset to %d", v)
	}
	return s.dev.Zero(executor.Ptr(p), n)
}
func (s *Driver) MemsetD8Async(p cuda.DevicePtr, v byte, n int64, _ cuda.Stream) error {
	return s.MemsetD8(p, v, n)
}
func (s *Driver) MemHostAlloc(n int64) ([]byte, error) { return make([]byte, n), nil }
func (s *Driver) MemFreeHost([]byte) error             { return nil }
func (s *Driver) MemGetInfo() (free, total int64, err error) {
	return s.dev.MemInfo()
}

func (s *Driver) LaunchKernel(f cuda.Function, grid, block [3]uint32, shared uint32, _ cuda.Stream, params []uint64) error {
	fn := s.funcs[f-1]
	args := make([]executor.Ptr, len(params))
	for i, p := range params {
		args[i] = executor.Ptr(p)
	}
	cfg := executor.LaunchConfig{SharedBytes: int(shared)}
	for i := range 3 {
		cfg.Grid[i], cfg.Block[i] = int(grid[i]), int(block[i])
	}
	if _, err := fn.m.Launch(fn.name, cfg, args); err != nil && s.pending == nil {
		s.pending = simErr("cuStreamSynchronize", cuda.ResultIllegalAddress, err)
	}
	return nil
}

func (s *Driver) StreamCreate() (cuda.Stream, error)  { return 1, nil }
func (s *Driver) StreamSynchronize(cuda.Stream) error { return s.pending }
func (s *Driver) StreamDestroy(cuda.Stream) error     { return nil }
func (s *Driver) EventCreate() (cuda.Event, error) {
	s.lastEvent++
	s.events[s.lastEvent] = time.Time{}
	return s.lastEvent, nil
}

// EventRecord notes the simulator's wall clock: launches run synchronously, so the time between
// two events is the simulation time of what was launched between them.
func (s *Driver) EventRecord(e cuda.Event, _ cuda.Stream) error {
	s.events[e] = time.Now()
	return nil
}
func (s *Driver) EventSynchronize(cuda.Event) error { return s.pending }
func (s *Driver) EventElapsedTime(start, end cuda.Event) (float32, error) {
	return float32(s.events[end].Sub(s.events[start]).Seconds() * 1e3), nil
}
func (s *Driver) EventDestroy(e cuda.Event) error {
	delete(s.events, e)
	return nil
}
func (s *Driver) GetErrorName(r cuda.Result) string { return fmt.Sprintf("CUDA_ERROR_%d", int(r)) }
func (s *Driver) GetErrorString(cuda.Result) string { return "" }
