package cuda_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
)

// simDriver is a cuda.Driver whose "GPU" is the PTX simulator: device
// memory, modules and launches go to a simdev.Device. It lets the CUDA
// device's own code (staging, ordering, argument packing, events, errors)
// run real compiled models without a GPU. A kernel that fails on the
// simulator fails asynchronously, as on a GPU: at the next synchronization.
type simDriver struct {
	dev     *simdev.Device
	modules map[cuda.ModuleHandle]executor.Module
	funcs   []simFunc // Function h is funcs[h-1]
	pending error
	events  int
}

type simFunc struct {
	m    executor.Module
	name string
}

func newSimDriver() *simDriver {
	return &simDriver{dev: simdev.New(simdev.Options{}), modules: map[cuda.ModuleHandle]executor.Module{}}
}

func simErr(call string, code cuda.Result, err error) error {
	return &cuda.Error{Call: call, Code: code, Name: "CUDA_ERROR_" + fmt.Sprint(int(code)), Msg: err.Error()}
}

func (s *simDriver) Init() error                                     { return nil }
func (s *simDriver) DriverVersion() (int, error)                     { return 12040, nil }
func (s *simDriver) DeviceCount() (int, error)                       { return 1, nil }
func (s *simDriver) DeviceGet(int) (cuda.DeviceHandle, error)        { return 0, nil }
func (s *simDriver) DeviceGetName(cuda.DeviceHandle) (string, error) { return "PTX simulator", nil }
func (s *simDriver) DeviceGetAttribute(a cuda.Attribute, _ cuda.DeviceHandle) (int, error) {
	return map[cuda.Attribute]int{cuda.AttrComputeCapabilityMajor: 9, cuda.AttrMultiprocessorCount: 1}[a], nil
}
func (s *simDriver) DeviceTotalMem(cuda.DeviceHandle) (int64, error) {
	_, total, err := s.dev.MemInfo()
	return total, err
}
func (s *simDriver) DevicePrimaryCtxRetain(cuda.DeviceHandle) (cuda.Context, error) { return 1, nil }
func (s *simDriver) DevicePrimaryCtxRelease(cuda.DeviceHandle) error                { return nil }
func (s *simDriver) CtxSetCurrent(cuda.Context) error                               { return nil }

func (s *simDriver) ModuleLoadDataEx(ptx []byte) (cuda.ModuleHandle, string, error) {
	m, err := s.dev.Load(ptx)
	if err != nil {
		return 0, err.Error(), simErr("cuModuleLoadDataEx", cuda.ResultInvalidPTX, err)
	}
	h := cuda.ModuleHandle(len(s.modules) + 1)
	s.modules[h] = m
	return h, "", nil
}

func (s *simDriver) ModuleGetFunction(m cuda.ModuleHandle, name string) (cuda.Function, error) {
	s.funcs = append(s.funcs, simFunc{s.modules[m], name})
	return cuda.Function(len(s.funcs)), nil
}

func (s *simDriver) ModuleUnload(m cuda.ModuleHandle) error {
	err := s.modules[m].Close()
	delete(s.modules, m)
	return err
}

func (s *simDriver) MemAlloc(n int64) (cuda.DevicePtr, error) {
	p, err := s.dev.Alloc(n)
	return cuda.DevicePtr(p), err
}
func (s *simDriver) MemFree(p cuda.DevicePtr) error { return s.dev.Free(executor.Ptr(p)) }
func (s *simDriver) MemcpyHtoD(dst cuda.DevicePtr, src []byte) error {
	return s.dev.Write(executor.Ptr(dst), src)
}
func (s *simDriver) MemcpyDtoH(dst []byte, src cuda.DevicePtr) error {
	return s.dev.Read(dst, executor.Ptr(src))
}
func (s *simDriver) MemcpyHtoDAsync(dst cuda.DevicePtr, src []byte, _ cuda.Stream) error {
	return s.MemcpyHtoD(dst, src)
}
func (s *simDriver) MemcpyDtoHAsync(dst []byte, src cuda.DevicePtr, _ cuda.Stream) error {
	return s.MemcpyDtoH(dst, src)
}
func (s *simDriver) MemsetD8(p cuda.DevicePtr, v byte, n int64) error {
	if v != 0 {
		return fmt.Errorf("simDriver: memset to %d", v)
	}
	return s.dev.Zero(executor.Ptr(p), n)
}
func (s *simDriver) MemsetD8Async(p cuda.DevicePtr, v byte, n int64, _ cuda.Stream) error {
	return s.MemsetD8(p, v, n)
}
func (s *simDriver) MemHostAlloc(n int64) ([]byte, error) { return make([]byte, n), nil }
func (s *simDriver) MemFreeHost([]byte) error             { return nil }
func (s *simDriver) MemGetInfo() (free, total int64, err error) {
	return s.dev.MemInfo()
}

func (s *simDriver) LaunchKernel(f cuda.Function, grid, block [3]uint32, shared uint32, _ cuda.Stream, params []uint64) error {
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

func (s *simDriver) StreamCreate() (cuda.Stream, error)  { return 1, nil }
func (s *simDriver) StreamSynchronize(cuda.Stream) error { return s.pending }
func (s *simDriver) StreamDestroy(cuda.Stream) error     { return nil }
func (s *simDriver) EventCreate() (cuda.Event, error) {
	s.events++
	return cuda.Event(s.events), nil
}
func (s *simDriver) EventRecord(cuda.Event, cuda.Stream) error { return nil }
func (s *simDriver) EventSynchronize(cuda.Event) error         { return s.pending }
func (s *simDriver) EventElapsedTime(start, end cuda.Event) (float32, error) {
	return 0.25, nil
}
func (s *simDriver) EventDestroy(cuda.Event) error     { return nil }
func (s *simDriver) GetErrorName(r cuda.Result) string { return fmt.Sprintf("CUDA_ERROR_%d", int(r)) }
func (s *simDriver) GetErrorString(cuda.Result) string { return "" }

// TestExamplesOnSimDriver runs the fast example models (with -short, mlp
// alone) through the CUDA device over the simulator-backed driver, with
// each option, and compares them with the reference interpreter: the GPU
// suite's code path, short of the GPU.
func TestExamplesOnSimDriver(t *testing.T) {
	for _, opts := range []cuda.Options{{}, {Sync: true}, {Profile: true, StagingLimit: 1}} {
		t.Run(fmt.Sprintf("sync=%v,profile=%v", opts.Sync, opts.Profile), func(t *testing.T) {
			for _, m := range exampleModels {
				if m.slow || testing.Short() && m.name != "mlp" {
					continue
				}
				t.Run(m.name, func(t *testing.T) {
					dev, err := cuda.Open(newSimDriver(), 0, opts)
					if err != nil {
						t.Fatal(err)
					}
					defer dev.Close()
					prog, inputs := runExample(t, dev, m.name, m.model, ptx.Target{SM: 90})
					res, err := prog.Run(inputs)
					if err != nil {
						t.Fatal(err)
					}
					for _, k := range res.Kernels {
						if (k.Counters != nil) != opts.Profile {
							t.Fatalf("kernel %s: counters %+v with profiling %v", k.Name, k.Counters, opts.Profile)
						}
					}
					if opts.Profile {
						b, err := executor.Bench(prog, inputs, 2)
						if err != nil {
							t.Fatal(err)
						}
						for _, k := range b.Kernels {
							if len(k.Times) != 2 || k.Times[0] != 250*time.Microsecond {
								t.Errorf("kernel %s: bench times %v, want two of 250µs (the events')", k.Name, k.Times)
							}
						}
					}
					if s := dev.Stats(); s.Allocated < prog.Memory().Total() {
						t.Errorf("device holds %d bytes, the program %d", s.Allocated, prog.Memory().Total())
					}
				})
			}
		})
	}
}

// TestSimDriverFault: a kernel that reads out of bounds fails at the
// device's sync with the simulator's report and the kernel's name.
func TestSimDriverFault(t *testing.T) {
	dev, err := cuda.Open(newSimDriver(), 0, cuda.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	m, err := dev.Load([]byte(`.version 7.8
.target sm_80
.address_size 64
.visible .entry fault(.param .u64 p)
{
	.reg .b64 %rd<2>;
	.reg .b32 %r<2>;
	ld.param.u64 %rd1, [p];
	ld.global.u32 %r1, [%rd1+4096];
	st.global.u32 [%rd1], %r1;
	ret;
}
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := dev.Alloc(4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Launch("fault", executor.LaunchConfig{Grid: [3]int{1, 1, 1}, Block: [3]int{1, 1, 1}}, []executor.Ptr{p}); err != nil {
		t.Fatal(err)
	}
	err = dev.Sync()
	t.Log(err)
	if err == nil || !strings.HasPrefix(err.Error(), "cuda:0: kernel fault (grid 1x1x1, block 1x1x1) failed: cuStreamSynchronize: CUDA_ERROR_700: ") {
		t.Errorf("Sync: %v", err)
	}
}
