package train

import (
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/runtime/ref"
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
			res, err := passes.Run(s.Graph, passes.Options{VerifyEach: true})
			if err != nil {
				t.Fatal(err)
			}
			st := res.Stats
			t.Logf("%d kernels (%d unfused), arena %d bytes (lower bound %d), modeled %.1f µs on %s",
				st.Kernels, st.EagerKernels, st.ArenaBytes, st.LowerBoundBytes, st.ModeledTimeUS, st.Model)
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
