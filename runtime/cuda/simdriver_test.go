package cuda_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/cuda/simdriver"
	"github.com/gcomp/gcomp/runtime/executor"
)

// TestExamplesOnSimDriver runs the fast example models (with -short, mlp
// alone) through the CUDA device over the simulator-backed driver, with
// each option, and compares them with the reference interpreter: the GPU
// suite's code path, short of the GPU.
func TestExamplesOnSimDriver(t *testing.T) {
	for _, opts := range []cuda.Options{{}, {Sync: true}, {Profile: true, StagingLimit: 1}} {
		t.Run(fmt.Sprintf("sync=%v,profile=%v", opts.Sync, opts.Profile), func(t *testing.T) {
			for _, m := range examples.Tutorials {
				if m.Slow || testing.Short() && m.Name != "mlp" {
					continue
				}
				t.Run(m.Name, func(t *testing.T) {
					dev, err := cuda.Open(simdriver.New(), 0, opts)
					if err != nil {
						t.Fatal(err)
					}
					defer dev.Close()
					prog, inputs := runExample(t, dev, m.Name, m.Model, ptx.Target{SM: 90})
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
							if len(k.Times) != 2 || k.Times[0] <= 0 || k.Times[1] <= 0 {
								t.Errorf("kernel %s: bench times %v, want two positive ones (the events')", k.Name, k.Times)
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
	dev, err := cuda.Open(simdriver.New(), 0, cuda.Options{})
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
