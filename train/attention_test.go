package train

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/data"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/tensor"
)

// tinyAttention is one causal self-attention layer (2 heads) under an MSE loss.
func tinyAttention(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, 2, 5, 8)
	y := b.Input("y", frontend.F32, 2, 5, 8)
	heads := func(name string) *frontend.Tensor {
		w := b.Param(name, ir.T(ir.F32, 8, 8), frontend.Uniform(-0.5, 0.5))
		return frontend.Linear(x, w, nil).Reshape(2, 5, 2, 4).Transpose(1, 2)
	}
	o := frontend.ScaledDotProductAttention(heads("wq"), heads("wk"), heads("wv"), true)
	pred := o.Transpose(1, 2).Reshape(2, 5, 8)
	b.Output("loss", frontend.MSELoss(pred, y))
}

// TestStepFusedAttention: a step's forward forms the attention op before differentiation, so
// its backward is attention_grad, and the step trains as the step that differentiates the
// decomposition (UnfusedAttention) does, within f32's rounding; with AMP too (in bf16).
func TestStepFusedAttention(t *testing.T) {
	fwd, err := frontend.Build("attn", tinyAttention)
	if err != nil {
		t.Fatal(err)
	}
	count := func(s *StepGraph, op string) int {
		n := 0
		for _, v := range s.Graph.Values {
			if v.Op == op {
				n++
			}
		}
		return n
	}
	fused, err := StepFromGraph(fwd, NewSGD(0.5), Options{})
	if err != nil {
		t.Fatal(err)
	}
	unfused, err := StepFromGraph(fwd, NewSGD(0.5), Options{UnfusedAttention: true})
	if err != nil {
		t.Fatal(err)
	}
	amp, err := StepFromGraph(fwd, NewSGD(0.5), Options{AMP: "bf16"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name       string
		s          *StepGraph
		attn, grad int
	}{{"fused", fused, 1, 3}, {"unfused", unfused, 0, 0}, {"amp", amp, 1, 3}} {
		if a, g := count(c.s, ops.AttentionOp), count(c.s, ops.AttentionGradOp); a != c.attn || g != c.grad {
			t.Errorf("%s step: %d attention and %d attention_grad ops, want %d and %d", c.name, a, g, c.attn, c.grad)
		}
	}
	batch := func(i int) (map[string]*tensor.Tensor, error) {
		m := map[string]*tensor.Tensor{}
		for _, v := range fwd.Inputs() {
			m[v.Name] = tensor.RandomInput(v, uint64(10+i))
		}
		return m, nil
	}
	run := func(s *StepGraph) *Result {
		params, err := InitParams(s.Graph, 3)
		if err != nil {
			t.Fatal(err)
		}
		r, err := RunRef(s, params, 4, batch)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	got, want := run(fused), run(unfused)
	if want.Losses[3] >= want.Losses[0] {
		t.Errorf("losses %v do not fall: the comparison would not see a wrong gradient", want.Losses)
	}
	sameTraining(t, got, want, 1e-5)
}

// sameTraining compares two runs' losses and final parameters within tol relative to 1 + |want|.
func sameTraining(t *testing.T, got, want *Result, tol float64) {
	t.Helper()
	for i := range want.Losses {
		if d := math.Abs(got.Losses[i] - want.Losses[i]); !(d <= tol*(1+math.Abs(want.Losses[i]))) {
			t.Errorf("step %d: loss %g, want %g", i, got.Losses[i], want.Losses[i])
		}
	}
	for name, w := range want.Params {
		for i := range w.F {
			if d := math.Abs(got.Params[name].F[i] - w.F[i]); !(d <= tol*(1+math.Abs(w.F[i]))) {
				t.Fatalf("%s[%d] = %g after the steps, want %g", name, i, got.Params[name].F[i], w.F[i])
			}
		}
	}
}

// attentionModel regresses linear.csv's rows through causal self-attention across the batch's
// rows (two heads), so that its train step has an attention op.
func attentionModel(b *frontend.Builder) {
	x := b.Input("x", ir.F32, 16, 3)
	h := nn.NewLinear(b, "in", 3, 8).Forward(x)
	heads := func(name string) *frontend.Tensor {
		return nn.NewLinear(b, name, 8, 8).Forward(h).Reshape(1, 16, 2, 4).Transpose(1, 2)
	}
	o := frontend.ScaledDotProductAttention(heads("q"), heads("k"), heads("v"), true)
	b.Output("y", nn.NewLinear(b, "out", 8, 1).Forward(o.Transpose(1, 2).Reshape(16, 8)))
}

// TestFitFusedAttentionOnSimulator: the compiled step (the forward's attention kernel, the
// backward's attention_lse and attention_grad kernels) trains on the PTX simulator as on the
// reference interpreter.
func TestFitFusedAttentionOnSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: compiles and simulates train steps")
	}
	csv, err := data.ReadCSVFile("testdata/linear.csv", "y")
	if err != nil {
		t.Fatal(err)
	}
	m := buildModel(t, attentionModel, Loss{Name: MSELoss})
	s, err := StepFromGraph(m.Train, NewSGD(0.05), Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range s.Graph.Values {
		if v.Op == ops.AttentionOp {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d attention ops in the step, want 1", n)
	}
	fitOnSimulator(t, m, data.Head(csv, 48)) // 3 steps
}

// TestAMPStepFusedAttention: under autocast the step forms the attention op too (attention and
// attention_grad in bf16 or f16, the softmax inside in f32) and computes what the step that
// differentiates the decomposition computes: each new parameter within the sum of both steps'
// error bounds (internal/tolerance), which the two computations' distance from the exact result
// cannot exceed.
func TestAMPStepFusedAttention(t *testing.T) {
	fwd, err := frontend.Build("attn", tinyAttention)
	if err != nil {
		t.Fatal(err)
	}
	for _, amp := range []string{"bf16", "f16"} {
		t.Run(amp, func(t *testing.T) {
			bounds := map[bool]map[string]tolerance.Bound{}
			for _, unfused := range []bool{false, true} {
				s, err := StepFromGraph(fwd, NewSGD(0.5), Options{AMP: amp, UnfusedAttention: unfused, LossScale: &LossScale{Disabled: true}})
				if err != nil {
					t.Fatal(err)
				}
				if n := btoi(slices.ContainsFunc(s.Graph.Values, func(v *ir.Value) bool { return v.Op == ops.AttentionGradOp })); n == btoi(unfused) {
					t.Fatalf("UnfusedAttention %v: attention_grad in the step %v", unfused, n == 1)
				}
				params, err := InitParams(s.Graph, 3)
				if err != nil {
					t.Fatal(err)
				}
				inputs := s.InitState()
				for _, v := range fwd.Inputs() {
					inputs[v.Name] = tensor.RandomInput(v, 11)
				}
				if bounds[unfused], err = tolerance.Bounds(s.Graph, inputs, params, false); err != nil {
					t.Fatal(err)
				}
			}
			for name, u := range bounds[true] {
				if !strings.HasPrefix(name, NewPrefix) {
					continue
				}
				f := bounds[false][name]
				for i := range u.Val.F {
					if d := math.Abs(f.Val.F[i] - u.Val.F[i]); !(d <= f.At(i)+u.At(i)) {
						t.Errorf("%s[%d]: fused %g, unfused %g, bounds %g and %g", name, i, f.Val.F[i], u.Val.F[i], f.At(i), u.At(i))
						break
					}
				}
			}
		})
	}
}
