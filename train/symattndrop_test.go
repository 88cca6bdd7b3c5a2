package train

import (
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// Dropout on the attention weights over symbolic sizes, in the layouts that refused it before
// (docs/dynamic.md, "Folds through views"). With one head, whose q, k and v projections have
// biases (transformerBlock), attention is unfused and k's bias and weight gradients read kᵀ's
// gradient [batch, 1, 8, seq] back through the transpose that moves seq: the fold reads it at
// the run's sizes. nn.TransformerEncoderLayer over a symbolic batch of static sequences splits
// its heads from the packed in-projection: q·kᵀ [batch, 2, 5, 5] reads both operands through
// views that keep the batch leading, its batch dims [batch, 2], the rows and then the static
// heads, inside a persistent kernel. Each runs at sizes 1, primes and the bounds, smallest
// first, within tolerance of the reference interpreter's step and of the static build's; the
// batch-only one bit for bit the static build's (its kernels are the static build's at every
// size). The one head's differs from the static build in the last bits, as the two heads' of
// TestSymbolicTransformerDropoutStep: the static build runs the scores' products in persistent
// kernels, which a product with a symbolic free dim on the right is not (passes/persist_symfree.go).
func TestSymbolicAttentionWeightDropoutStep(t *testing.T) {
	overBoth := []map[string]int64{
		{"batch": 1, "seq": 1}, {"batch": 1, "seq": 5}, {"batch": 3, "seq": 2}, {"batch": 2, "seq": 7}, {"batch": 4, "seq": 7},
	}
	for _, tc := range []struct {
		name  string
		model func(b *frontend.Builder)
		batch int // WithMaxBatch's, for a model that declares b.Batch
		masks []string
		envs  []map[string]int64
		bits  bool // bit for bit the static build's
	}{
		{"1 head", func(b *frontend.Builder) { transformerBlock(b, 0.1, 1, 0.1) }, 0,
			[]string{"f32[batch,1,seq,seq]", "f32[batch,1,seq,8]", "f32[batch,1,seq,16]", "f32[batch,1,seq,8]"}, overBoth, false},
		{"nn.TransformerEncoderLayer over a symbolic batch", func(b *frontend.Builder) {
			x, y := b.Input("x", ir.F32, b.Batch(4), 5, 8), b.Input("t", ir.F32, b.Batch(4), 5, 8)
			l := nn.NewTransformerEncoderLayer(b, "enc", 8, 2, nn.TransformerEncoderLayerOptions{DimFeedforward: 16, Dropout: 0.1, BatchFirst: true})
			b.Output(DefaultLoss, frontend.MSELoss(l.Forward(x), y))
		}, 4, []string{"f32[batch,2,5,5]", "f32[batch,5,8]", "f32[batch,5,16]", "f32[batch,5,8]"},
			[]map[string]int64{{frontend.BatchDim: 1}, {frontend.BatchDim: 3}, {frontend.BatchDim: 4}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := dropoutStep(t, tc.model, tc.batch, &SGD{LR: 0.1}, tc.masks)
			var runs []stepRun
			checkSymbolicStepAt(t, s, tc.envs, func(env map[string]int64, inputs map[string]*tensor.Tensor) {
				runs = append(runs, stepRun{env, inputs})
			})
			if tc.bits {
				checkStaticBits(t, s, runs)
			}
		})
	}
}
