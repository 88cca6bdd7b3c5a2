package lm

import (
	"testing"

	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
)

// TestDecodeAppendsInAttention: the decode step of GPT-2 small and TinyLlama launches no update
// kernel; each layer's split-KV attention kernel writes its two caches' rows itself (passes'
// appendkv). GPT-2 small runs 5 kernels per layer — the QKV GEMV with the LN1 prologue,
// attention, the output projection (+residual), the fc GEMV with the LN2 prologue (+gelu), the
// MLP's second GEMV (+residual) — and 2 outside them (the first LayerNorm, which gathers the
// embeddings at pos and writes them, and the LM head with the final norm as its prologue): 62
// kernels. One token's positions are pos itself (passes' fold: pos + a one-element iota), so no
// kernel computes them.
// A prefill keeps its update kernels (its attention is the prefill template).
func TestDecodeAppendsInAttention(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles two large models")
	}
	for _, c := range []struct {
		name             string
		prog             string
		T                int
		kernels          int // -1: not checked
		perLayer         int // kernels from one layer's attention to the next's; -1: not checked
		updates, appends int
	}{
		{"gpt2-small", "decode", 1, 61, 5, 0, 12},
		{"tinyllama-1.1b", "decode", 1, -1, -1, 0, 22},
		{"gpt2-small", "prefill", 5, -1, -1, 24, 0},
	} {
		t.Run(c.name+"/"+c.prog, func(t *testing.T) {
			var cfg Config
			for _, bc := range benchConfigs {
				if bc.name == c.name {
					cfg = bc.c
				}
			}
			g, err := ProgramGraph(cfg, c.prog, 1, c.T)
			if err != nil {
				t.Fatal(err)
			}
			res, err := passes.Run(g, passes.Options{})
			if err != nil {
				t.Fatal(err)
			}
			ks := res.Kernels.Kernels
			updates, appends := 0, 0
			var at []int
			for i, k := range ks {
				switch k.Kind {
				case passes.Update:
					updates++
				case passes.Attention:
					at = append(at, i)
					n := 0
					for _, o := range k.Body.Outputs {
						if o.Value.Op == ops.UpdateSliceOp {
							n++
						}
					}
					if n == 2 && k.InPlace {
						appends++
					} else if n != 0 {
						t.Errorf("%s appends to %d caches (in place: %v), want both or none", k.Name, n, k.InPlace)
					}
				}
			}
			if updates != c.updates || appends != c.appends {
				t.Errorf("%d update kernels and %d attention kernels appending both caches, want %d and %d", updates, appends, c.updates, c.appends)
			}
			if c.kernels >= 0 && len(ks) != c.kernels {
				t.Errorf("%d kernels, want %d", len(ks), c.kernels)
			}
			for i := 1; c.perLayer >= 0 && i < len(at); i++ {
				if n := at[i] - at[i-1]; n != c.perLayer {
					t.Errorf("layer %d: %d kernels from its attention to the next's, want %d", i-1, n, c.perLayer)
				}
			}
		})
	}
}
