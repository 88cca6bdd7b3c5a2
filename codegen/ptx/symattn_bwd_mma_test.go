package ptx

import (
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// TestSymbolicAttentionGradMMA: the tensor-core backward templates, dq and dk/dv (the dk and dv
// of one kernel, and each alone), f16 and bf16, over a symbolic batch and sequence length, built
// once at the bounds and run at batch and length 1, primes and the bound (two row tiles and key
// blocks) on the memchecked, racechecked simulator: masks none and causal, grouped KV heads, a
// bias broadcast over heads, head dims 64 and 128 (a bias at 128: TestSymbolicAttentionGrad's f16 dq) (16-row q/do tiles in dk/dv). Each
// run matches the float64 reference at its sizes, leaves the gradients' bytes past the run's
// sizes untouched, and is bit for bit the static kernel built for its sizes: the templates do the
// same arithmetic in the same order at every size, only the sizes' sources differ.
func TestSymbolicAttentionGradMMA(t *testing.T) {
	for _, c := range []symGradCase{
		{attnCase{3, 4, 2, 70, 70, 64, 64, ops.MaskCausal, nil, nil, ir.F16}, "q kv k v"},
		{attnCase{3, 2, 1, 70, 70, 64, 64, ops.MaskNone, []int{3, 1, 70, 70}, nil, ir.BF16}, "q kv k v"},
		{attnCase{2, 2, 2, 70, 70, 128, 128, ops.MaskCausal, nil, nil, ir.BF16}, "q kv"},
	} {
		wrts := []string{"q", "kv", "k", "v"}
		if c.e == 128 {
			wrts = []string{"q", "kv"}
		}
		c.run(t, wrts)
	}
}
