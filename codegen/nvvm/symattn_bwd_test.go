package nvvm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
)

// TestSymbolicAttentionGradTemplate: attention's backward at symbolic sizes (L = S = seq; a
// bias's seq dims follow), attention_lse alone, dq, dk and dv in one kernel and each alone, on
// CUDA cores and on tensor cores, built once at the bound, is the NVVM producer's own (Lacks
// names nothing), takes codegen/ptx's parameters, launch and work (dk/dv's a block per key
// block at the run's S), assembles for sm_80 and sm_90 without spills, and runs on the
// memchecked simulator at seq = 1, 2, primes and the bound with its inputs contiguous at the
// run's seq: bit for bit codegen/ptx's entry, within codegen/ptx's tolerance of the reference,
// nothing written past the run's rows. Masks none and causal (the dk/dv blocks above the diagonal
// skipped from the run's key blocks), grouped KV heads, E ≠ Ev, an additive bias broadcast over
// heads or batch, f16 operands at a head dim the tensor-core templates do not take; f16 and bf16
// on tensor cores.
func TestSymbolicAttentionGradTemplate(t *testing.T) {
	p := requireProducer(t)
	all := []string{"lse", "q", "kv", "k", "v"}
	for _, tc := range []struct {
		c    attnCase
		wrts []string
	}{
		{attnCase{b: 2, h: 4, kvh: 2, l: 37, s: 37, e: 16, ev: 12, mask: ops.MaskCausal, d: ir.F32}, all},
		{attnCase{b: 2, h: 2, kvh: 1, l: 23, s: 23, e: 8, ev: 8, mask: ops.MaskNone, bias: []int{2, 1, 23, 23}, d: ir.F32}, all},
		{attnCase{b: 1, h: 2, kvh: 2, l: 40, s: 40, e: 64, ev: 64, mask: ops.MaskCausal, bias: []int{1, 2, 40, 40}, d: ir.F32}, all},
		{attnCase{b: 2, h: 2, kvh: 2, l: 33, s: 33, e: 12, ev: 12, mask: ops.MaskCausal, d: ir.F16}, all},
		// dq, dk and dv on tensor cores.
		{attnCase{b: 2, h: 4, kvh: 2, l: 70, s: 70, e: 16, ev: 32, mask: ops.MaskCausal, d: ir.F16}, all},
		{attnCase{b: 2, h: 2, kvh: 1, l: 45, s: 45, e: 64, ev: 64, mask: ops.MaskNone, bias: []int{2, 1, 45, 45}, d: ir.BF16}, all[1:]},
		{attnCase{b: 1, h: 2, kvh: 2, l: 40, s: 40, e: 32, ev: 32, mask: ops.MaskCausal, bias: []int{1, 2, 40, 40}, d: ir.F16}, all[1:]},
	} {
		c := tc.c
		for _, wrt := range tc.wrts {
			t.Run(fmt.Sprintf("%s_d%s", c, wrt), func(t *testing.T) {
				at := func(n int) *ir.Graph {
					cn := c
					cn.l, cn.s = n, n
					if c.bias != nil {
						cn.bias = []int{c.bias[0], c.bias[1], n, n}
					}
					if wrt == "lse" {
						return lseGraph(t, cn, false)
					}
					return attnGradGraph(t, cn, wrt)
				}
				bound := c.l
				g := at(bound)
				k := plan.Kernel{Name: "k0_attention_" + wrt, Graph: g, Symbolic: true, Rows: 1, Sizes: seqSizes(g, at(bound-1), bound)}
				text, l, ptxText, pl := bothSymbolic(t, p, k, plan.Target{SM: 80})
				op := g.Outputs[0].Value
				mma := wrt != "lse" && (attnmma.FitsGradDQ(op) || attnmma.FitsGradWide(op))
				if !strings.Contains(l.Work.Elements, "seq") || strings.Contains(text, "mma.sync") != mma {
					t.Fatalf("work %+v (want the block count over seq), tensor cores %v, want %v", *l.Work, !mma, mma)
				}
				regs, pregs := assemble(t, text, []plan.Kernel{k}), assemble(t, ptxText, []plan.Kernel{k})
				for _, n := range []int{bound, 1, 2, 13, 17} {
					gn := at(n)
					in := inputsFor(gn, uint64(n)+3)
					if wrt != "lse" {
						in = attnGradInputs(t, gn, uint64(n)+3)
					}
					got, st := symRun(t, text, k, l, in, nil, bound, n)
					emitted, pst := symRun(t, ptxText, k, pl, in, nil, bound, n)
					if n == bound {
						t.Logf("warp instructions at seq %d: nvvm %d, ptx %d; registers nvvm %v, ptx %v", n, st.WarpInsts, pst.WarpInsts, regs[k.Name], pregs[k.Name])
					}
					want, err := ref.Run(gn, in, nil)
					if err != nil {
						t.Fatal(err)
					}
					for _, o := range g.Outputs {
						what := fmt.Sprintf("%s at seq %d", o.Name, n)
						if string(got[o.Name].Bytes()) != string(emitted[o.Name].Bytes()) {
							t.Errorf("%s differs from codegen/ptx's", what)
						}
						checkWithin(t, what, got[o.Name], want[o.Name], gradTolerance)
					}
				}
			})
		}
	}
}
