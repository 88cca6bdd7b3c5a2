package nvvm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
)

// TestSymbolicAttentionTemplate: the CUDA-core attention template at symbolic sizes (queries and
// keys over seq; a bias's seq dims follow), built once at the bound, is the NVVM producer's own
// (Lacks names nothing), takes codegen/ptx's parameters (seq's value, then the block count),
// launch and work, assembles for sm_80 and sm_90 without spills, and runs on the memchecked
// simulator at seq = 1, 2, primes and the bound with its inputs contiguous at the run's seq:
// bit for bit codegen/ptx's entry and within tolerance of the reference at that seq. Masks none,
// causal (tiles past the limit skipped from the run's length) and position (pos[b] clamped to
// the run's S), grouped KV heads, E ≠ Ev, an additive bias; the rows' log-sum-exp
// beside the result (a train step's forward) at the run's L, bit for bit codegen/ptx's.
func TestSymbolicAttentionTemplate(t *testing.T) {
	p := requireProducer(t)
	for _, c := range []struct {
		attnCase
		lse bool // the rows' log-sum-exp beside the result (a train step's forward)
	}{
		{attnCase{b: 2, h: 2, kvh: 2, l: 40, s: 40, e: 8, ev: 8, mask: ops.MaskNone, d: ir.F32}, false},
		{attnCase{b: 2, h: 4, kvh: 2, l: 37, s: 37, e: 16, ev: 12, mask: ops.MaskCausal, d: ir.F32}, false},
		{attnCase{b: 2, h: 2, kvh: 1, l: 19, s: 19, e: 8, ev: 8, mask: ops.MaskNone, bias: []int{2, 1, 19, 19}, d: ir.F32}, false},
		{attnCase{b: 3, h: 4, kvh: 2, l: 23, s: 23, e: 16, ev: 12, mask: ops.MaskPosition, d: ir.F32}, false},
		{attnCase{b: 1, h: 2, kvh: 2, l: 33, s: 33, e: 8, ev: 8, mask: ops.MaskCausal, bias: []int{1, 2, 33, 33}, d: ir.F32}, false},
		// Decoding (one query row over seq keys) takes split-KV over a symbolic cache length
		// (symattn_decode_len.go, TestSymbolicDecodeLengthTemplate).
		{attnCase{b: 2, h: 2, kvh: 2, l: 40, s: 40, e: 8, ev: 8, mask: ops.MaskNone, d: ir.F32}, true},
		{attnCase{b: 3, h: 4, kvh: 2, l: 37, s: 37, e: 16, ev: 12, mask: ops.MaskCausal, d: ir.F32}, true},
		{attnCase{b: 3, h: 4, kvh: 2, l: 23, s: 23, e: 16, ev: 12, mask: ops.MaskPosition, d: ir.F32}, true}, // rows that see no key: -inf
		{attnCase{b: 2, h: 2, kvh: 1, l: 19, s: 19, e: 8, ev: 8, mask: ops.MaskNone, bias: []int{2, 1, 19, 19}, d: ir.F32}, true},
		{attnCase{b: 2, h: 2, kvh: 2, l: 33, s: 33, e: 12, ev: 12, mask: ops.MaskCausal, d: ir.F16}, true}, // a head dim tensor cores do not take
	} {
		t.Run(fmt.Sprintf("%s_lse%v", c, c.lse), func(t *testing.T) {
			bound := c.s
			at := func(n int) *ir.Graph {
				cn := c.attnCase
				cn.s, cn.l = n, n
				if c.bias != nil {
					cn.bias = []int{c.bias[0], c.bias[1], n, n}
				}
				if c.lse {
					return lseGraph(t, cn, true)
				}
				return cn.graph(t)
			}
			g := at(bound)
			k := plan.Kernel{Name: "k0_attention", Graph: g, Symbolic: true, Rows: 1, Sizes: seqSizes(g, at(bound-1), bound)}
			target := plan.Target{SM: 80}
			text, l, ptxText, pl := bothSymbolic(t, p, k, target)
			if !strings.Contains(l.Work.Elements, "seq") || strings.Contains(text, "mma.sync") {
				t.Fatalf("work %+v (want the block count over seq), tensor cores %v", *l.Work, strings.Contains(text, "mma.sync"))
			}
			assemble(t, text, []plan.Kernel{k})
			for _, n := range []int{bound, 1, 2, 5, 13, 17} {
				if n > bound {
					continue
				}
				gn := at(n)
				in := inputsFor(gn, uint64(n)+3)
				if x := in["pos"]; x != nil {
					for i := range x.I {
						x.I[i] = int64(i*7%(n+3)) - 1 // -1 and past S too: clamped
					}
				}
				units := bound // the output's rows follow seq
				got, st := symRun(t, text, k, l, in, nil, units, n)
				emitted, pst := symRun(t, ptxText, k, pl, in, nil, units, n)
				if n == bound {
					t.Logf("warp instructions at seq %d: nvvm %d, ptx %d", n, st.WarpInsts, pst.WarpInsts)
				}
				want, err := ref.Run(gn, in, nil)
				if err != nil {
					t.Fatal(err)
				}
				compare(t, "o (codegen/ptx)", got["o"], emitted["o"], true, c.d, false, 0)
				checkAttention(t, got["o"], want["o"])
				if c.lse {
					compare(t, "lse (codegen/ptx)", got["lse"], emitted["lse"], true, ir.F32, false, 0)
					checkLSE(t, got["lse"], want["lse"], false)
				}
			}
		})
	}
}
