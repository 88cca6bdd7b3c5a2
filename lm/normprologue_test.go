package lm

import (
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
)

// TestDecodeNormsInGEMV: GPT-2 small's and TinyLlama's decode steps run every norm as a
// prologue of the GEMVs that read it (passes' normgemv), the first layer's too: its prologue
// gathers the embeddings, which the first of those GEMVs also writes for the layer's residual
// add (gemv.RowOutput). The one norm kernel left is TinyLlama's final norm, which the LM head's 1000 blocks would each recompute for more L2 time
// than the launch saved. GPT-2 small's final norm is the LM head's prologue: its LayerNorm keeps
// the row in shared memory (gemv.StagedRows), so each of the 1571 blocks reads it from L2 once,
// not twice. The count is of kernels by kind: row kernels left, and contraction kernels that
// reduce (a norm prologue: the only reductions a contraction kernel holds).
func TestDecodeNormsInGEMV(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles two large models")
	}
	for _, c := range []struct {
		name            string
		rows, prologues int
	}{
		{"gpt2-small", 0, 12 + 12 + 1},     // every ln_1 (layer 0's over wte[token] + wpe[pos]), every ln_2, ln_f
		{"tinyllama-1.1b", 1, 3*22 + 2*22}, // every input norm in q, k, v (layer 0's over embed_tokens[token]); every post-attention norm in gate and up
	} {
		t.Run(c.name, func(t *testing.T) {
			var cfg Config
			for _, bc := range benchConfigs {
				if bc.name == c.name {
					cfg = bc.c
				}
			}
			g, err := ProgramGraph(cfg, "decode", 1, 1)
			if err != nil {
				t.Fatal(err)
			}
			res, err := compiler.Compile(g, compiler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			rows, prologues, tokens := 0, 0, 0
			for _, k := range res.Passes.Kernels.Kernels {
				reduces := false
				for _, v := range k.Body.Values {
					reduces = reduces || strings.HasPrefix(v.Op, "reduce_")
				}
				// The embedding gather runs in the prologues of the first layer's GEMVs (Llama's
				// q, k and v), the first of which also writes the embeddings that the first
				// residual reads.
				if slices.ContainsFunc(k.Reads, func(b *passes.Buffer) bool { return b.Name == "tokens" }) {
					tokens++
					if k.Kind != passes.Contraction || !reduces {
						t.Errorf("%s reads the tokens: want a GEMV with a norm prologue", k.Name)
					}
					if tokens == 1 && (len(k.Writes) != 2 || !k.Writes[1].Type.Shape.Equal(ir.Shape{1, 1, cfg.Hidden})) {
						t.Errorf("%s, the first kernel reading the tokens, does not write the embeddings [1,1,%d]", k.Name, cfg.Hidden)
					}
				}
				switch {
				case k.Kind == passes.Row:
					rows++
					t.Logf("row kernel %s", k.Name)
				case k.Kind == passes.Contraction && reduces:
					prologues++
				}
			}
			if rows != c.rows || prologues != c.prologues {
				t.Errorf("%d row kernels and %d GEMVs with a norm prologue, want %d and %d", rows, prologues, c.rows, c.prologues)
			}
		})
	}
}
