package lm

import (
	"testing"

	"github.com/gcomp/gcomp/codegen/splitkv"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
)

// TestCacheWrittenInPlace: in the decode program (and a prefill) of GPT-2 small and TinyLlama,
// every cache output is its input's buffer (the plan's in_place_of), the only kernels that write
// a cache are in-place kernels writing the step's rows only — update_slice kernels whose launch
// covers them, or, in the decode step, the split-KV attention kernel that appends them itself
// (passes' appendkv) — and the only kernels that read one whole are attention's: no kernel
// copies, selects over or stacks the cache.
func TestCacheWrittenInPlace(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles two large models")
	}
	for _, bc := range benchConfigs {
		for _, prog := range []struct {
			name     string
			batch, T int
		}{{"decode", 2, 1}, {"prefill", 1, 5}} {
			t.Run(bc.name+"/"+prog.name, func(t *testing.T) {
				g, err := ProgramGraph(bc.c, prog.name, prog.batch, prog.T)
				if err != nil {
					t.Fatal(err)
				}
				res, err := passes.Run(g, passes.Options{})
				if err != nil {
					t.Fatal(err)
				}
				m := &Model{Config: bc.c}
				cacheType := m.cacheType(prog.batch)
				states := m.cacheStates()
				if len(states) != 2*bc.c.Layers {
					t.Fatalf("%d cache states for %d layers", len(states), bc.c.Layers)
				}
				alias := map[string]string{}
				for i, o := range res.Plan.Outputs {
					alias[g.Outputs[i].Name] = o.InPlaceOf
				}
				for out, in := range states {
					if alias[out] != in {
						t.Errorf("output %s is in place of %q, want %s", out, alias[out], in)
					}
				}
				cache := func(b *passes.Buffer) bool { return b.Type.Equal(cacheType) }
				updates := 0
				for _, k := range res.Kernels.Kernels {
					for _, b := range k.Writes {
						if !cache(b) {
							continue
						}
						if k.Kind != passes.Update && k.Kind != passes.Attention || !k.InPlace {
							t.Errorf("%s (%s) writes the cache %s", k.Name, k.Kind, b.Name)
						}
						updates++
					}
					for _, b := range k.Reads {
						if cache(b) && k.Kind != passes.Attention && !(k.Kind == passes.Update && k.InPlace) {
							t.Errorf("%s (%s) reads the cache %s", k.Name, k.Kind, b.Name)
						}
					}
				}
				if updates != len(states) {
					t.Errorf("%d cache writes, want one per state (%d)", updates, len(states))
				}
				row := int64(cacheType.Bytes() / bc.c.MaxSeq * prog.T)
				for i, ks := range res.Stats.PerKernel {
					// A kernel writing a cache writes the step's rows of it; an appending attention
					// kernel its output and its split's partials besides.
					want, caches, k := int64(0), 0, res.Kernels.Kernels[i]
					for _, b := range k.Writes {
						if cache(b) {
							want, caches = want+row, caches+1
						} else {
							want += b.Bytes()
						}
					}
					want += 8 * int64(splitPartials(k))
					if caches > 0 && ks.WriteBytes != want {
						t.Errorf("%s writes %d bytes, want the step's rows and its output: %d", ks.Name, ks.WriteBytes, want)
					}
				}
			})
		}
	}
}

// splitPartials is the f32 partials a split-KV attention kernel writes to scratch (0 for any
// other kernel).
func splitPartials(k *passes.Kernel) int {
	for _, v := range k.Body.Values {
		if v.Op == ops.AttentionOp && k.Kind == passes.Attention {
			if p, ok := splitkv.Of(v); ok {
				return p.PartialFloats()
			}
		}
	}
	return 0
}
