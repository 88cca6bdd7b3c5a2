package frontend_test

import (
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// TestLossesMatchPyTorch compares every loss and reduction, in f64, with values PyTorch 1.13
// printed for the same inputs (F.mse_loss, F.cross_entropy, F.nll_loss,
// F.binary_cross_entropy_with_logits).
func TestLossesMatchPyTorch(t *testing.T) {
	x := []float64{0.5, -1.25, 2.0, 3.0, 0.25, -0.75}
	y := []float64{1.0, 0.0, 0.5, 0.0, 1.0, 0.25}
	labels := []int64{2, 0}
	type loss func(p, q, l *frontend.Tensor, o frontend.LossOptions) *frontend.Tensor
	losses := map[string]loss{
		"mse": func(p, q, l *frontend.Tensor, o frontend.LossOptions) *frontend.Tensor {
			return frontend.MSELossWith(p, q, o)
		},
		"ce": func(p, q, l *frontend.Tensor, o frontend.LossOptions) *frontend.Tensor {
			return frontend.CrossEntropyLossWith(p, l, o)
		},
		"nll": func(p, q, l *frontend.Tensor, o frontend.LossOptions) *frontend.Tensor {
			return frontend.NLLLossWith(p, l, o)
		},
		"bce": func(p, q, l *frontend.Tensor, o frontend.LossOptions) *frontend.Tensor {
			return frontend.BCEWithLogitsLossWith(p, q, o)
		},
	}
	tests := []struct {
		loss string
		red  frontend.Reduction
		want []float64
	}{
		{"mse", frontend.ReductionMean, []float64{2.4375}},
		{"mse", frontend.ReductionSum, []float64{14.625}},
		{"mse", frontend.ReductionNone, []float64{0.25, 1.5625, 2.25, 9.0, 0.5625, 1.0}},
		{"ce", frontend.ReductionMean, []float64{0.15822672466890733}},
		{"ce", frontend.ReductionSum, []float64{0.31645344933781466}},
		{"ce", frontend.ReductionNone, []float64{0.23262198310203266, 0.083831466235782}},
		{"nll", frontend.ReductionMean, []float64{-2.5}},
		{"nll", frontend.ReductionSum, []float64{-5.0}},
		{"nll", frontend.ReductionNone, []float64{-2.0, -3.0}},
		{"bce", frontend.ReductionMean, []float64{1.0086386423559897}},
		{"bce", frontend.ReductionSum, []float64{6.051831854135938}},
		{"bce", frontend.ReductionNone, []float64{0.4740769841801067, 0.25192908134537295, 1.1269280110429727,
			3.048587351573742, 0.5759394198788437, 0.5743710061149}},
	}
	for _, tt := range tests {
		t.Run(tt.loss+"_"+tt.red.String(), func(t *testing.T) {
			g, err := frontend.Build("loss", func(b *frontend.Builder) {
				p := b.Input("x", frontend.F64, 2, 3)
				q := b.Input("y", frontend.F64, 2, 3)
				l := b.Input("labels", frontend.I64, 2)
				b.Output("loss", losses[tt.loss](p, q, l, frontend.LossOptions{Reduction: tt.red}))
			})
			if err != nil {
				t.Fatal(err)
			}
			out, err := ref.Run(g, map[string]*tensor.Tensor{
				"x":      tensor.FromFloats(ir.T(ir.F64, 2, 3), x),
				"y":      tensor.FromFloats(ir.T(ir.F64, 2, 3), y),
				"labels": {Type: ir.T(ir.I64, 2), I: labels},
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := out["loss"].F
			if len(got) != len(tt.want) {
				t.Fatalf("got %d values, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if math.Abs(got[i]-tt.want[i]) > 1e-14*max(1, math.Abs(tt.want[i])) {
					t.Errorf("[%d] = %.17g, PyTorch %.17g", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestLossErrors(t *testing.T) {
	tests := []struct {
		model func(b *frontend.Builder) *frontend.Tensor
		want  string
	}{
		{func(b *frontend.Builder) *frontend.Tensor {
			return frontend.NLLLoss(b.Input("x", frontend.F32, 2, 3), b.Input("l", frontend.F32, 2))
		}, "nll_loss: want logits[N, C] and integer labels[N]"},
		{func(b *frontend.Builder) *frontend.Tensor {
			return frontend.BCEWithLogitsLoss(b.Input("x", frontend.F32, 2, 3), b.Input("y", frontend.F32, 3))
		}, "binary_cross_entropy_with_logits: want float logits and targets of one shape"},
		{func(b *frontend.Builder) *frontend.Tensor {
			x := b.Input("x", frontend.F32, 2)
			return frontend.MSELossWith(x, x, frontend.LossOptions{Reduction: 7})
		}, "mse_loss: unknown reduction 7"},
	}
	for _, tt := range tests {
		_, err := frontend.Build("bad", func(b *frontend.Builder) { b.Output("loss", tt.model(b)) })
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error %v, want %q", err, tt.want)
		}
	}
}
