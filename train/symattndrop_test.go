package train

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
)

// Dropout on the attention weights over symbolic sizes where the step is still refused, by the
// piece named here (docs/dynamic.md, Next). With one head, whose q, k and v projections have
// biases (transformerBlock), attention is unfused and its products and softmax run at symbolic
// sizes (TestSymbolicTransformerDropoutStep trains it with two heads, without biases), but k's
// bias gradient sums kᵀ's gradient [batch, 1, 8, seq] read through the transpose that moves seq.
// nn.TransformerEncoderLayer over a symbolic batch of static sequences splits its heads from the
// packed in-projection: q·kᵀ [batch, 2, 5, 5] reads both operands through views that move the
// batch's rows (its dims are static but the batch), inside a persistent kernel.
func TestSymbolicAttentionWeightDropoutRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		model func(b *frontend.Builder)
		batch int // WithMaxBatch's, for a model that declares b.Batch
		masks []string
		want  string
	}{
		{"1 head", func(b *frontend.Builder) { transformerBlock(b, 0.1, 1, 0.1) }, 0,
			[]string{"f32[batch,1,seq,seq]", "f32[batch,1,seq,8]", "f32[batch,1,seq,16]", "f32[batch,1,seq,8]"},
			"(reduce_sum mul add), over symbolic buffer t186: input %t186 : f32[batch,1,8,seq] has 8*batch*seq rows, %0 = transpose(%t186) {perm=[0,1,3,2]} : f32[batch,1,seq,8] has batch*seq"},
		{"nn.TransformerEncoderLayer over a symbolic batch", func(b *frontend.Builder) {
			x, y := b.Input("x", ir.F32, b.Batch(4), 5, 8), b.Input("t", ir.F32, b.Batch(4), 5, 8)
			l := nn.NewTransformerEncoderLayer(b, "enc", 8, 2, nn.TransformerEncoderLayerOptions{DimFeedforward: 16, Dropout: 0.1, BatchFirst: true})
			b.Output(DefaultLoss, frontend.MSELoss(l.Forward(x), y))
		}, 4, []string{"f32[batch,2,5,5]", "f32[batch,5,8]", "f32[batch,5,16]", "f32[batch,5,8]"},
			"stage s2_matmul_scale (dot_general mul): %6 = dot_general(%3, %5) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[2]} : f32[batch,2,5,5] has two symbolic operands whose rows are not exactly its batch dims"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := dropoutStep(t, tc.model, tc.batch, &SGD{LR: 0.1}, tc.masks)
			_, err := compiler.Compile(s.Graph, StepCompilerOptions(compiler.Options{}))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Compile = %v, want %q", err, tc.want)
			}
		})
	}
}
