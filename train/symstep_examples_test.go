package train

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/backend"
	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/examples/cnn"
	fashioncnn "github.com/gcomp/gcomp/examples/fashion/cnn"
	"github.com/gcomp/gcomp/examples/resnet"
	"github.com/gcomp/gcomp/examples/unet"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// exampleSteps are the vision examples' layers (examples/...) under a loss over a symbolic batch
// in [1, 3]: unet and resnet on 8×8 images (their layers take any size), the two CNNs at their
// 28×28 (their linear layers fix it). refused is the compiler's refusal of a step that does not
// build over a symbolic batch yet; the test fails once it builds, so the entry is removed.
var exampleSteps = []struct {
	name    string
	model   func(b *frontend.Builder)
	slow    bool
	refused string
}{
	// The upsampling's backward sums each pixel's 2×2 window of the gradient: a reduction over
	// inner axes of the rows (the column template at symbolic sizes: codegen/ptx's symcolumn.go).
	{"unet", imageStep(3, 8, []int{2, 8, 8}, func(b *frontend.Builder, x *frontend.Tensor) *frontend.Tensor {
		return unet.NewUNet(b).Forward(x)
	}), false, ""},
	{"resnet", imageStep(3, 8, []int{10}, func(b *frontend.Builder, x *frontend.Tensor) *frontend.Tensor {
		return resnet.NewResNet(b).Forward(x)
	}), false, ""},
	{"cnn", imageStep(3, 28, []int{10}, func(b *frontend.Builder, x *frontend.Tensor) *frontend.Tensor {
		return cnn.NewCNN(b).Forward(x)
	}), true, ""},
	{"fashion_cnn", imageStep(1, 28, []int{10}, func(b *frontend.Builder, x *frontend.Tensor) *frontend.Tensor {
		return fashioncnn.NewCNN(b).Forward(x)
	}), true, ""},
}

// imageStep is net's loss over a batch in [1, 3] of c×hw×hw images: the mean squared error
// against a target of out's sizes per row.
func imageStep(c, hw int, out []int, net func(b *frontend.Builder, x *frontend.Tensor) *frontend.Tensor) func(*frontend.Builder) {
	return func(b *frontend.Builder) {
		n := b.Batch(3)
		x, y := b.Input("x", ir.F32, n, c, hw, hw), b.Input("t", ir.F32, append([]int{n}, out...)...)
		b.Output(DefaultLoss, frontend.MSELoss(net(b, x), y))
	}
}

// Each example's train step (SGD with momentum) builds once over a symbolic batch in [1, 3] and
// runs on the memchecked simulator at batches 1, 2 and 3 within tolerance of the reference
// interpreter's step, and at batch 2 within tolerance of the static build's step at 2.
func TestSymbolicStepExamples(t *testing.T) {
	for _, tc := range exampleSteps {
		t.Run(tc.name, func(t *testing.T) {
			if tc.slow && testing.Short() {
				t.Skip("minutes on the simulator")
			}
			fwd, err := frontend.Build("m", tc.model, frontend.WithMaxBatch(3), frontend.WithTraining())
			if err != nil {
				t.Fatal(err)
			}
			s, err := StepFromGraph(fwd, &SGD{LR: 0.05, Momentum: 0.9}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := compiler.Compile(s.Graph, StepCompilerOptions(compiler.Options{}))
			switch {
			case tc.refused != "" && err == nil:
				t.Fatalf("the step builds over a symbolic batch now: remove its refusal %q", tc.refused)
			case tc.refused != "":
				if !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("refused with %v, want %q", err, tc.refused)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			checkStepRuns(t, s, res, []int64{1, 2, 3}) // symstep_conv_test.go
			checkStepStatic(t, s, res, 2)
		})
	}
}

// The NVVM producer builds unet's step too: its reductions, the upsampling's backward among them,
// are NVVM's own (the column template at symbolic sizes: codegen/nvvm's symcolumn.go), and the
// step runs at batches 1 and 3 within
// tolerance of the reference's.
func TestSymbolicStepUNetNVVM(t *testing.T) {
	lib := libnvvm.Require(t)
	nv, err := backend.New("nvvm", lib.Path)
	if err != nil {
		t.Fatal(err)
	}
	fwd, err := frontend.Build("m", exampleSteps[0].model, frontend.WithMaxBatch(3), frontend.WithTraining())
	if err != nil {
		t.Fatal(err)
	}
	s, err := StepFromGraph(fwd, &SGD{LR: 0.05}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(s.Graph, StepCompilerOptions(compiler.Options{Producer: nv}))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range res.Artifact.Plan.Kernels {
		if strings.HasSuffix(k.Name, "_sum") && k.Producer == "ptx" {
			t.Errorf("%s is codegen/ptx's entry, not NVVM's own", k.Name)
		}
	}
	checkStepRuns(t, s, res, []int64{1, 3})
}

// checkStepStatic runs res, the step s compiled over a symbolic batch, and the static build of s
// at batch n on memchecked simulators, with the same seeded inputs and parameters: their outputs
// agree within tolerance.
func checkStepStatic(t *testing.T, s *StepGraph, res *compiler.Result, n int64) {
	t.Helper()
	st, err := ops.Instantiate(s.Graph, map[string]int64{frontend.BatchDim: n})
	if err != nil {
		t.Fatal(err)
	}
	static, err := compiler.Compile(st, StepCompilerOptions(compiler.Options{}))
	if err != nil {
		t.Fatalf("static build at batch %d: %v", n, err)
	}
	inputs, params := seededNonZero(t, st, 5)
	run := func(r *compiler.Result) map[string]*tensor.Tensor {
		p, err := executor.Load(simdev.New(simdev.Options{}), r.Artifact)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if err := p.SetParams(params); err != nil {
			t.Fatal(err)
		}
		out, err := p.Run(inputs)
		if err != nil {
			t.Fatalf("batch %d: %v", n, err)
		}
		return out.Outputs
	}
	got, want := run(res), run(static)
	for name, w := range want {
		rel, abs := tolerance.Tolerance(w.Type.DType, false, 256)
		for i := range w.Len() {
			if g := got[name].At(i); !tolerance.Within(g, w.At(i), rel, abs) {
				t.Fatalf("batch %d: %s[%d] = %v, the static build's %v", n, name, i, g, w.At(i))
			}
		}
	}
}
