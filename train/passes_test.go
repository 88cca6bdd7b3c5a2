package train

import (
	"fmt"
	"math"
	"testing"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/data"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

func cnnModel(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, 4, 1, 12, 12)
	y := b.Input("y", frontend.I64, 4)
	conv := nn.NewConv2d(b, "conv", 1, 4, 3, nn.Conv2dOptions{Padding: 1})
	h := frontend.MaxPool2d(conv.Forward(x).Relu(), [2]int{2, 2}, frontend.PoolOptions{})
	fc := nn.NewLinear(b, "fc", 4*6*6, 10)
	b.Output("loss", frontend.CrossEntropyLoss(fc.Forward(h.Flatten(1, -1)), y))
}

// Step graphs go through the compiler's pipeline like any graph (canonicalization, fusion,
// scheduling, memory planning, cost), and the canonicalized step computes the same step.
func TestStepThroughPasses(t *testing.T) {
	tests := []struct {
		name  string
		model func(*frontend.Builder)
		opt   Optimizer
		o     Options
	}{
		{"mlp_sgd", mlpModel, &SGD{LR: 0.01, Momentum: 0.9}, Options{}},
		{"mlp_adam_bf16", mlpModel, NewAdam(), Options{AMP: "bf16"}},
		{"cnn_adam_f16", cnnModel, NewAdam(), Options{AMP: "f16"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Step(tt.name, tt.model, tt.opt, tt.o)
			if err != nil {
				t.Fatal(err)
			}
			popt := StepCompilerOptions(compiler.Options{}).Passes
			popt.VerifyEach = true
			res, err := passes.Run(s.Graph, popt)
			if err != nil {
				t.Fatal(err)
			}
			st := res.Stats
			t.Logf("%d kernels (%d unfused), arena %d bytes (lower bound %d), modeled %.1f µs on %s",
				st.Kernels, st.EagerKernels, st.ArenaBytes, st.LowerBoundBytes, st.ModeledTimeUS, st.Model)
			if st.BindKernels != 0 {
				t.Errorf("%d bind-time kernels in a step, which replaces its parameters every run", st.BindKernels)
			}
			params, err := InitParams(s.Graph, 0)
			if err != nil {
				t.Fatal(err)
			}
			in := s.InitState()
			for _, v := range s.Graph.Inputs() {
				if _, ok := in[v.Name]; !ok {
					in[v.Name] = tensor.RandomInput(v, 1)
				}
			}
			want, err := ref.Run(s.Graph, in, params)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ref.Run(res.Graph, in, params)
			if err != nil {
				t.Fatal(err)
			}
			for name, w := range want {
				if g := got[name]; g == nil || !equalBits(g, w) {
					t.Errorf("output %s differs after canonicalization", name)
				}
			}
		})
	}
}

// bnCNN is a convolution, BatchNorm and a linear layer: in eval mode rsqrt(running_var+eps) is
// parameter-only, and so are the weight casts of a step with autocast.
func bnCNN(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, 4, 1, 6, 6)
	h := nn.NewConv2d(b, "conv", 1, 4, 3, nn.Conv2dOptions{Padding: 1}).Forward(x)
	h = nn.NewBatchNorm2d(b, "bn", 4).Forward(h).Relu()
	b.Output("logits", nn.NewLinear(b, "fc", 4*6*6, 3).Forward(h.Flatten(1, -1)))
}

// Train step graphs compile with the parameters changing every run: no kernel of the step, nor
// of the split step's two graphs, is bind-time (by default some would be, and a step would
// launch them every run, apart from the kernels that read them). The evaluation keeps its
// bind-time kernels. The loaded step computes the reference's losses, and the evaluation the
// reference's outputs with the trained weights.
func TestStepGraphsParamsChangeEveryRun(t *testing.T) {
	m := buildModel(t, bnCNN, Loss{Name: CrossEntropyLoss})
	o := Options{AMP: "f16"}
	step, err := m.Step(NewAdam(), o)
	if err != nil {
		t.Fatal(err)
	}
	bindTime := func(p *artifact.Plan) int {
		n := 0
		for _, k := range p.Kernels {
			if k.BindTime {
				n++
			}
		}
		return n
	}
	def, err := compiler.Compile(step.Graph, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := bindTime(def.Artifact.Plan); n == 0 {
		t.Fatalf("compiled with the default options the step has no bind-time kernel: the test shows nothing")
	}
	params, err := InitParams(step.Graph, 1)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := newTrainer(simdev.New(simdev.Options{}), compiler.Options{}, step, m, params, step.InitState(), false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.close()
	c := tr.(*compiledTrainer)
	if n, e := bindTime(c.prog.Plan()), bindTime(c.eval.p.Plan()); n != 0 || e == 0 {
		t.Errorf("bind-time kernels: %d in the step, %d in the evaluation; want 0 and some", n, e)
	}
	split, err := m.SplitStep(NewAdam(), o)
	if err != nil {
		t.Fatal(err)
	}
	arts, err := compileSplit(split, m, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if g, u, e := bindTime(arts.grad.Plan), bindTime(arts.update.Plan), bindTime(arts.eval.Plan); g != 0 || u != 0 || e == 0 {
		t.Errorf("split step: bind-time kernels %d in the gradients' step, %d in the update, %d in the evaluation; want 0, 0 and some", g, u, e)
	}

	rt := NewRefTrainer(step, params)
	b := &data.Batch{X: tensor.RandomInput(step.Graph.Lookup(m.Input), 2), Y: tensor.New(step.Graph.Lookup(m.Target).Type)}
	for i := range b.Y.I {
		b.Y.I[i] = int64(i % 3)
	}
	near := func(what string, got, want float64) {
		if math.Abs(got-want) > 1e-3*max(1, math.Abs(want)) {
			t.Errorf("%s: %g, the reference's %g", what, got, want)
		}
	}
	for i := range 3 {
		if err := c.launch(b); err != nil {
			t.Fatal(err)
		}
		got, err := c.wait()
		if err != nil {
			t.Fatal(err)
		}
		want, err := rt.Run(m.stepInputs(b))
		if err != nil {
			t.Fatal(err)
		}
		near(fmt.Sprintf("step %d: loss", i), got[step.Loss].F[0], want[step.Loss].F[0])
	}
	got, err := c.runEval(m.stepInputs(b))
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Run(m.Eval, m.stepInputs(b), rt.Params)
	if err != nil {
		t.Fatal(err)
	}
	for j, w := range want[m.Output].F {
		near(fmt.Sprintf("evaluation: %s[%d]", m.Output, j), got[m.Output].F[j], w)
	}
}

func equalBits(a, b *tensor.Tensor) bool {
	if !a.Type.Equal(b.Type) || len(a.F) != len(b.F) || len(a.I) != len(b.I) {
		return false
	}
	for i := range a.F {
		if a.F[i] != b.F[i] && !(a.F[i] != a.F[i] && b.F[i] != b.F[i]) {
			return false
		}
	}
	for i := range a.I {
		if a.I[i] != b.I[i] {
			return false
		}
	}
	return true
}
