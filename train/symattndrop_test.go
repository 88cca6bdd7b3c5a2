package train

import (
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
)

// Dropout on the attention weights over a symbolic batch and sequence with one head, whose q, k
// and v projections have biases (transformerBlock): attention is unfused and its products and
// softmax run at symbolic sizes (TestSymbolicTransformerDropoutStep trains it with two heads),
// but the step is refused by the piece named here: k's bias gradient sums kᵀ's gradient
// [batch, 1, 8, seq] read through the transpose that moves seq (docs/dynamic.md, Next).
func TestSymbolicAttentionWeightDropoutRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		heads int
		masks []string
		want  string
	}{
		{"1 head", 1, []string{"f32[batch,1,seq,seq]", "f32[batch,1,seq,8]", "f32[batch,1,seq,16]", "f32[batch,1,seq,8]"},
			"(reduce_sum mul add), over symbolic buffer t186: input %t186 : f32[batch,1,8,seq] has 8*batch*seq rows, %0 = transpose(%t186) {perm=[0,1,3,2]} : f32[batch,1,seq,8] has batch*seq"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fwd, err := frontend.Build("m", func(b *frontend.Builder) { transformerBlock(b, 0.1, tc.heads, 0.1) }, frontend.WithTraining())
			if err != nil {
				t.Fatal(err)
			}
			s, err := StepFromGraph(fwd, &SGD{LR: 0.1}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var masks []string
			for _, v := range s.Graph.Values {
				if v.Op == "philox_uniform" {
					masks = append(masks, v.Type.String())
				}
			}
			if !slices.Equal(masks, tc.masks) {
				t.Fatalf("the step's masks are %v, want %v", masks, tc.masks)
			}
			_, err = compiler.Compile(s.Graph, StepCompilerOptions(compiler.Options{}))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Compile = %v, want %q", err, tc.want)
			}
		})
	}
}
