package autodiff

import (
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// TestGradCheckComposites checks whole layers and losses of the front end, where several rules
// meet (broadcasts inside layer norm, masks in attention, gathers, recurrent gates).
func TestGradCheckComposites(t *testing.T) {
	p := func(b *frontend.Builder, name string, dims ...int) *frontend.Tensor {
		return b.Param(name, ir.T(ir.F64, dims...), frontend.Zeros())
	}
	tests := []struct {
		name  string
		build func(b *frontend.Builder) *frontend.Tensor
	}{
		{"layer_norm", func(b *frontend.Builder) *frontend.Tensor {
			return frontend.LayerNorm(p(b, "x", 3, 4), []int{4}, p(b, "w", 4), p(b, "b", 4), 1e-5)
		}},
		{"softmax_log_softmax", func(b *frontend.Builder) *frontend.Tensor {
			x := p(b, "x", 2, 5)
			return x.Softmax(1).Add(x.LogSoftmax(0))
		}},
		{"causal_attention", func(b *frontend.Builder) *frontend.Tensor {
			return frontend.ScaledDotProductAttention(p(b, "q", 2, 3, 4), p(b, "k", 2, 3, 4), p(b, "v", 2, 3, 2), true)
		}},
		{"lstm_cell", func(b *frontend.Builder) *frontend.Tensor {
			h, c := frontend.LSTMCell(p(b, "x", 2, 3), p(b, "h", 2, 2), p(b, "c", 2, 2), p(b, "wih", 8, 3), p(b, "whh", 8, 2), p(b, "bih", 8), p(b, "bhh", 8))
			return h.Add(c)
		}},
		{"gru_cell", func(b *frontend.Builder) *frontend.Tensor {
			return frontend.GRUCell(p(b, "x", 2, 3), p(b, "h", 2, 2), p(b, "wih", 6, 3), p(b, "whh", 6, 2), p(b, "bih", 6), p(b, "bhh", 6))
		}},
		{"embedding", func(b *frontend.Builder) *frontend.Tensor {
			idx := b.Tensor([]float64{3, 0, 3, 1}, frontend.I32, 2, 2)
			return frontend.Embedding(idx, p(b, "table", 5, 3)).Tanh()
		}},
		{"conv_bias_avgpool_gelu", func(b *frontend.Builder) *frontend.Tensor {
			y := frontend.Conv2d(p(b, "x", 1, 2, 6, 6), p(b, "w", 3, 2, 3, 3), p(b, "b", 3), frontend.Conv2dOptions{Padding: [2]int{1, 1}})
			return frontend.AvgPool2d(y, [2]int{2, 2}, frontend.PoolOptions{}).Gelu()
		}},
		{"batched_matmul_broadcast", func(b *frontend.Builder) *frontend.Tensor {
			return p(b, "a", 2, 3, 4).Matmul(p(b, "b", 4, 5)).GeluTanh().Add(p(b, "c", 5)).Silu()
		}},
		{"cross_entropy", func(b *frontend.Builder) *frontend.Tensor {
			return frontend.CrossEntropyLossWith(p(b, "logits", 4, 3), b.Tensor([]float64{2, 0, 1, 2}, frontend.I64, 4),
				frontend.LossOptions{Reduction: frontend.ReductionNone})
		}},
		{"bce_mse", func(b *frontend.Builder) *frontend.Tensor {
			x, y := p(b, "x", 2, 3), p(b, "y", 2, 3)
			return frontend.BCEWithLogitsLoss(x, y.Sigmoid()).Add(frontend.MSELossWith(x, y, frontend.LossOptions{Reduction: frontend.ReductionSum}))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkBuilt(t, tt.name, tt.build) })
	}
}
