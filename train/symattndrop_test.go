package train

import (
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
)

// Dropout on the attention weights over a symbolic batch and sequence (nn.MultiheadAttention's
// dropout_p in training) unfuses attention: q·kᵀ [batch, h, seq, seq] has symbolic free dims on
// both sides, and so do its backward's products (dO·vᵀ; pᵀ·dO, dsᵀ·q and ds·k contract seq
// beside a symbolic M), which run at symbolic sizes (docs/dynamic.md, "A symbolic free dim on
// the right"). The step is still refused, by the piece named here: the softmax over the keys
// reduces the symbolic seq inside rows batch·h·seq, a row reduction whose row length follows
// the sizes (docs/dynamic.md, Next).
func TestSymbolicAttentionWeightDropoutRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		heads int
		masks []string
		want  string
	}{
		{"1 head", 1, []string{"f32[batch,1,seq,seq]", "f32[batch,1,seq,8]", "f32[batch,1,seq,16]", "f32[batch,1,seq,8]"},
			"input %t20 : f32[batch,1,seq,seq] has batch*seq*seq rows, %0 = reduce_max(%t20) {axes=[3], keepdims=true} : f32[batch,1,seq,1] has batch*seq"},
		{"2 heads", 2, []string{"f32[batch,2,seq,seq]", "f32[batch,seq,8]", "f32[batch,seq,16]", "f32[batch,seq,8]"},
			"f32[batch,2,seq,seq] has 2*batch*seq*seq rows, %0 = reduce_max("},
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
			if err == nil || !strings.Contains(err.Error(), "_softmax (reduce_max") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Compile = %v, want the softmax refused: %q", err, tc.want)
			}
		})
	}
}
