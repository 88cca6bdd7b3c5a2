package lm

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/passes"
)

// TestDecodeNormsInGEMV: GPT-2 small's and TinyLlama's decode steps run every norm as a
// prologue of the GEMVs that read it (passes' normgemv), but the first layer's, whose kernel also
// writes the residual stream (the embeddings) that the layer's residual add reads, and
// TinyLlama's final norm, which the LM head's 1000 blocks would each recompute for more L2 time
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
		{"gpt2-small", 1, 11 + 12 + 1},     // ln_1 of layers 1–11, every ln_2, ln_f
		{"tinyllama-1.1b", 2, 3*21 + 2*22}, // input norm of layers 1–21 in q, k, v; every post-attention norm in gate and up
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
			rows, prologues := 0, 0
			for _, k := range res.Passes.Kernels.Kernels {
				reduces := false
				for _, v := range k.Body.Values {
					reduces = reduces || strings.HasPrefix(v.Op, "reduce_")
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
