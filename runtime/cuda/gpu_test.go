//go:build gpu

// The GPU suite: go test -tags gpu ./runtime/cuda (or ./... for every
// package's GPU tests). It runs each example model on cuda:0 and compares
// its outputs with the reference interpreter, then times the kernels with
// CUDA events. Without a driver library or a GPU it skips, saying why.

package cuda_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/ptxas"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// openGPU opens cuda:0 or skips the test. Closing it must succeed unless
// the test makes a kernel fault on purpose.
func openGPU(t *testing.T, faults bool) *cuda.Device {
	t.Helper()
	drv, err := cuda.Load("")
	if err != nil {
		t.Skip(err)
	}
	if err := drv.Init(); err != nil {
		t.Skip(err)
	}
	// The driver found a GPU: from here on a failure is the suite's to report, not a reason to skip.
	dev, err := cuda.Open(drv, 0, cuda.OptionsFromEnv())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := dev.Close(); err != nil && !faults {
			t.Error(err)
		}
	})
	if a := dev.Info().Arch; a.Major < 8 {
		t.Skipf("%s: gcomp's kernels need compute capability 8.0 or newer", dev.Name())
	}
	t.Logf("%s, %s", dev.Name(), cuda.FormatBytes(dev.Info().TotalMem))
	return dev
}

// target is the newest architecture gcomp compiles for that dev runs.
func target(dev *cuda.Device) ptx.Target {
	a := dev.Info().Arch
	sm := 10*a.Major + a.Minor
	best := 80
	for _, s := range []int{86, 89, 90} {
		if s <= sm {
			best = s
		}
	}
	return ptx.Target{SM: best}
}

// TestGPUExamples runs every example on the GPU and compares it with the
// reference interpreter; then it runs each five more times with event timing
// and logs the median and minimum time of every kernel.
func TestGPUExamples(t *testing.T) {
	dev := openGPU(t, false)
	tgt := target(dev)
	for _, m := range examples.Tutorials {
		t.Run(m.Name, func(t *testing.T) {
			prog, inputs := runExample(t, dev, m.Name, m.Model, tgt)
			t.Logf("memory: %+v; device: %+v", prog.Memory(), dev.Stats())
			bench(t, dev, prog, inputs, 5)
		})
	}
}

// bench runs prog n times with event timing and logs the executor's
// benchmark table (median and minimum per run and per kernel).
func bench(t *testing.T, dev *cuda.Device, prog *executor.Program, inputs map[string]*tensor.Tensor, n int) {
	dev.SetProfile(true)
	defer dev.SetProfile(false)
	b, err := executor.Bench(prog, inputs, n)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range b.Kernels {
		if len(k.Times) != n {
			t.Errorf("kernel %s: %d times from %d profiled runs", k.Name, len(k.Times), n)
		}
	}
	var buf strings.Builder
	b.WriteTable(&buf)
	t.Logf("%d runs: median %v, min %v\n%s", n, executor.Median(b.Runs), executor.Min(b.Runs), buf.String())
}

// TestGPUPrefetch trains steps with each batch prefetched on the copy stream during the previous
// step, and without, and requires the same losses and weights bit for bit (gcomp's kernels are
// deterministic); it logs the wall time of both.
func TestGPUPrefetch(t *testing.T) {
	dev := openGPU(t, false)
	fx := newStepFixture(t, target(dev), 50)
	var got [2]string
	for i, prefetch := range []bool{false, true} {
		start := time.Now()
		got[i] = fx.run(t, dev, prefetch)
		t.Logf("prefetch=%v: %d steps in %v", prefetch, len(fx.batches), time.Since(start))
	}
	if got[0] != got[1] {
		t.Errorf("prefetched steps differ from synchronous ones")
	}
}

// TestGPUErrors checks the device's errors against a real driver: PTX the
// JIT rejects, an allocation larger than the memory and, with
// GCOMP_GPU_FAULT=1, a kernel that faults (which leaves the process's
// context unusable, so it runs last).
func TestGPUErrors(t *testing.T) {
	faults := os.Getenv("GCOMP_GPU_FAULT") != ""
	dev := openGPU(t, faults)
	_, err := dev.Load([]byte(".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry k() { bogus; }\n"))
	if err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_INVALID_PTX") || !strings.Contains(err.Error(), "JIT log:") {
		t.Errorf("invalid PTX: %v", err)
	}
	_, err = dev.Alloc(dev.Info().TotalMem * 2)
	if err == nil || !strings.Contains(err.Error(), "out of memory: requested") {
		t.Errorf("huge allocation: %v", err)
	}
	if !faults {
		return
	}
	m, err := dev.Load([]byte(`.version 7.8
.target sm_80
.address_size 64
.visible .entry fault(.param .u64 p)
{
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [p];
	st.global.u32 [%rd1], 1;
	ret;
}
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Launch("fault", executor.LaunchConfig{Grid: [3]int{1, 1, 1}, Block: [3]int{1, 1, 1}}, []executor.Ptr{8}); err != nil {
		t.Logf("launch: %v", err)
	}
	err = dev.Sync()
	if err == nil || !strings.Contains(err.Error(), "kernel fault") {
		t.Errorf("faulting kernel: %v", err)
	}
}

// TestGPUGraphs runs every example with CUDA graphs (record, then replay) and compares the outputs
// with direct launches bit for bit, then times 20 runs of each way and logs both.
func TestGPUGraphs(t *testing.T) {
	dev := openGPU(t, false)
	if o := cuda.OptionsFromEnv(); o.Profile || o.Sync {
		t.Skip("GCOMP_CUDA_SYNC or profiling: launches wait for each kernel, which graphs cannot")
	}
	tgt := target(dev)
	for _, m := range examples.Tutorials {
		t.Run(m.Name, func(t *testing.T) {
			prog, inputs := runExample(t, dev, m.Name, m.Model, tgt)
			timeRuns := func() (time.Duration, *executor.Result) {
				var last *executor.Result
				start := time.Now()
				for range 20 {
					res, err := prog.Run(inputs)
					if err != nil {
						t.Fatal(err)
					}
					last = res
				}
				return time.Since(start) / 20, last
			}
			direct, want := timeRuns()
			if !prog.UseGraphs(true) {
				t.Fatal("the CUDA device does not record graphs")
			}
			graphs, got := timeRuns()
			for name, w := range want.Outputs {
				if string(got.Outputs[name].Bytes()) != string(w.Bytes()) {
					t.Errorf("output %s differs with graphs", name)
				}
			}
			t.Logf("%d kernels: %v per run launched one by one, %v as a graph", len(want.Kernels), direct, graphs)
		})
	}
}

// TestGPUCubins assembles mlp for the GPU's architecture with ptxas, loads the cubin (not the
// PTX) and checks its outputs against the reference interpreter.
func TestGPUCubins(t *testing.T) {
	dev := openGPU(t, false)
	a := dev.Info().Arch
	arch := fmt.Sprintf("sm_%d%d", a.Major, a.Minor)
	g, err := frontend.Build("mlp", examples.Tutorials[1].Model)
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{Target: target(dev)})
	if err != nil {
		t.Fatal(err)
	}
	ptxas.Require(t)
	img, err := ptxas.Cubin(res.Artifact.PTX, arch)
	if err != nil {
		t.Fatal(err)
	}
	m, err := dev.LoadBinaries(res.Artifact.PTX, map[string][]byte{arch: img})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.(interface{ Image() string }).Image(); got != arch {
		t.Errorf("loaded %s, want the %s cubin", got, arch)
	}
	m.Close()
	res.Artifact.Cubins = map[string][]byte{arch: img}
	prog, err := executor.Load(dev, res.Artifact)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	inputs, params, err := tensor.SeededValues(g, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := prog.SetParams(params); err != nil {
		t.Fatal(err)
	}
	got, err := prog.Run(inputs)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Run(g, inputs, params)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range g.Outputs {
		if o := check.Compare(v.Name, got.Outputs[v.Name], want[v.Name], false); !o.Pass() {
			t.Errorf("%s: %d elements outside tolerance", o.Name, o.Bad)
		}
	}
}
