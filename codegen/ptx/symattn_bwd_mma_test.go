package ptx

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
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

// TestSymbolicAttentionGradMMAStaticKeys: the tensor-core backward over a symbolic query length
// with the keys static (S = 70 at every run: keys attending from a symbolic number of queries),
// so that L and S differ at the run: dq and dk/dv, causal (rows above the diagonal of later keys
// see none) and with a bias [batch, 1, seq, 70], run at L 1, 13 and the bound against the
// reference and the static kernel of the run's sizes.
func TestSymbolicAttentionGradMMAStaticKeys(t *testing.T) {
	for _, c := range []attnCase{
		{2, 2, 1, 40, 70, 64, 64, ops.MaskCausal, nil, nil, ir.F16},
		{2, 2, 2, 40, 70, 64, 64, ops.MaskNone, []int{2, 1, 40, 70}, nil, ir.BF16},
	} {
		for _, wrt := range []string{"q", "kv"} {
			t.Run(fmt.Sprintf("%s_d%s", c, wrt), func(t *testing.T) {
				g := attnGradGraph(t, c, wrt)
				sizes := symGradSizes(g, c.b)
				for _, v := range g.Inputs() { // k, v and the bias's keys: static
					switch v.Name {
					case "k", "v":
						sizes[v][2] = sym.Const(int64(c.s))
					case "bias":
						sizes[v][3] = sym.Const(int64(c.s))
					}
				}
				for _, o := range g.Outputs {
					sizes[o.Value] = sizes[o.Value.Args[map[string]int{"dq": 0, "dk": 1, "dv": 2}[o.Name]]]
				}
				text, launches, err := Module([]Kernel{{Name: "k0_attention_grad", Graph: g, Symbolic: true, Sizes: sizes}}, Target{SM: 80})
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(text, "mma.sync") {
					t.Fatal("not on tensor cores")
				}
				assemble(t, text)
				for _, r := range [][2]int{{1, 1}, {2, 13}, {c.b, c.l}} {
					b, n := r[0], r[1]
					cs := c
					cs.b, cs.l = b, n
					if c.bias != nil {
						cs.bias = []int{b, 1, n, c.s}
					}
					checkSymGradRun(t, text, launches[0], g, cs, wrt, uint64(3*n+b))
				}
			})
		}
	}
}
