package nvvm

import (
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
)

// bcastMaskSrc is q·kᵀ by hand over 2 heads, t and seq symbolic (M and N), plus a mask of shape
// mask broadcast over what it lacks: [nb, 2, t, 16]·[nb, 2, seq, 16]ᵀ + mask → [nb, 2, t, seq].
func bcastMaskSrc(nb, mask string) string {
	return fmt.Sprintf("graph k {\n  input %%q : f32[%[1]s,2,{{t}},16]\n  input %%k : f32[%[1]s,2,{{seq}},16]\n  input %%m : f32[%[2]s]\n"+
		"  %%0 = dot_general(%%q, %%k) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[3]} : f32[%[1]s,2,{{t}},{{seq}}]\n"+
		"  %%1 = broadcast_in_dim(%%m) {dims=[0,1,2,3], shape=[%[1]s,2,{{t}},{{seq}}]} : f32[%[1]s,2,{{t}},{{seq}}]\n"+
		"  %%2 = add(%%0, %%1) : f32[%[1]s,2,{{t}},{{seq}}]\n  output out = %%2\n}\n", nb, mask)
}

// TestSymbolicContractBroadcast: FFMA batched products at symbolic sizes whose epilogue reads a
// buffer of the run's sizes through a broadcast or another view (symcontract_bcast.go) are the
// NVVM producer's own (Lacks names nothing): a mask over the heads, over the batch and the heads,
// a bias along the rows, a per-row scale [t, 1], a residual over the rows beside a symbolic K
// alone, a mask transposed before its broadcast (tensor cores: TestSymbolicContractMMAViews). Built
// once at the bounds, they assemble for sm_80 and sm_90, and on the memchecked simulator at 0
// where the dims allow it, 1, primes and the bounds, every buffer laid out at the run's sizes
// (the broadcast dims' stride 0), they equal codegen/ptx's entry bit for bit and the reference
// within tolerance.
func TestSymbolicContractBroadcast(t *testing.T) {
	p := requireProducer(t)
	for _, tc := range []struct {
		name, src string
		bound     map[string]int64
		rows      int       // Kernel.Rows: the bound's batch elements
		heads     int       // batch elements per b (the size parameter is b·heads)
		runs      [][]int64 // t, seq, b at each run
	}{
		{"a mask over the heads, symbolic batch", bcastMaskSrc("{{b}}", "{{b}},1,{{t}},{{seq}}"),
			map[string]int64{"b": 3, "t": 37, "seq": 40}, 6, 2, [][]int64{{1, 1, 1}, {13, 7, 2}, {5, 31, 3}, {37, 40, 3}}},
		{"a mask over the batch and the heads, static batch", bcastMaskSrc("3", "1,1,{{t}},{{seq}}"),
			map[string]int64{"t": 37, "seq": 40}, 6, 0, [][]int64{{1, 1, 0}, {0, 5, 0}, {13, 0, 0}, {7, 13, 0}, {37, 40, 0}}},
		{"q·kᵀ, a bias over the keys along the rows", "graph k {\n  input %q : f32[2,9,16]\n  input %k : f32[2,{{seq}},16]\n  input %w : f32[{{seq}}]\n" +
			"  %0 = dot_general(%q, %k) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[2]} : f32[2,9,{{seq}}]\n" +
			"  %1 = broadcast_in_dim(%w) {dims=[2], shape=[2,9,{{seq}}]} : f32[2,9,{{seq}}]\n  %2 = add(%0, %1) : f32[2,9,{{seq}}]\n  output out = %2\n}\n",
			map[string]int64{"seq": 140}, 2, 0, [][]int64{{0, 0, 0}, {0, 1, 0}, {0, 67, 0}, {0, 140, 0}}},
		{"scores·V, a per-row scale [t, 1]", "graph k {\n  input %p : f32[2,{{t}},{{seq}}]\n  input %v : f32[2,{{seq}},8]\n  input %s : f32[{{t}},1]\n" +
			"  %0 = dot_general(%p, %v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : f32[2,{{t}},8]\n" +
			"  %1 = broadcast_in_dim(%s) {dims=[1,2], shape=[2,{{t}},8]} : f32[2,{{t}},8]\n  %2 = mul(%0, %1) : f32[2,{{t}},8]\n  output out = %2\n}\n",
			map[string]int64{"t": 140, "seq": 37}, 2, 0, [][]int64{{1, 1, 0}, {131, 5, 0}, {7, 37, 0}, {140, 37, 0}}},
		{"xᵀ·y over seq, a residual over the rows, symbolic batch", "graph k {\n  input %x : f32[{{b}},{{seq}},12]\n  input %y : f32[{{b}},{{seq}},20]\n  input %r : f32[{{b}},1,20]\n" +
			"  %0 = dot_general(%x, %y) {lhs_batch=[0], lhs_contract=[1], rhs_batch=[0], rhs_contract=[1]} : f32[{{b}},12,20]\n" +
			"  %1 = broadcast_in_dim(%r) {dims=[0,1,2], shape=[{{b}},12,20]} : f32[{{b}},12,20]\n  %2 = add(%0, %1) : f32[{{b}},12,20]\n  output out = %2\n}\n",
			map[string]int64{"b": 4, "seq": 13}, 4, 1, [][]int64{{0, 0, 1}, {0, 1, 3}, {0, 7, 2}, {0, 13, 4}}},
		{"a mask [b, seq, t] transposed before its broadcast over the heads, symbolic batch", "graph k {\n  input %q : f32[{{b}},2,{{t}},16]\n  input %k : f32[{{b}},2,{{seq}},16]\n  input %m : f32[{{b}},{{seq}},{{t}}]\n" +
			"  %0 = dot_general(%q, %k) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[3]} : f32[{{b}},2,{{t}},{{seq}}]\n" +
			"  %1 = transpose(%m) {perm=[0,2,1]} : f32[{{b}},{{t}},{{seq}}]\n  %2 = broadcast_in_dim(%1) {dims=[0,2,3], shape=[{{b}},2,{{t}},{{seq}}]} : f32[{{b}},2,{{t}},{{seq}}]\n" +
			"  %3 = add(%0, %2) : f32[{{b}},2,{{t}},{{seq}}]\n  output out = %3\n}\n",
			map[string]int64{"b": 3, "t": 37, "seq": 40}, 6, 2, [][]int64{{1, 1, 1}, {13, 7, 2}, {37, 40, 3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, sizes := dimsGraph(t, tc.src, tc.bound)
			k := plan.Kernel{Name: "k0_contract", Graph: g, Symbolic: true, Rows: tc.rows, Sizes: sizes}
			target := plan.Target{SM: 80}
			if c, err := plan.ContractionPlan(k, target); err != nil || c.Kind != "ffma" {
				t.Fatalf("plan %q, %v; want ffma", c.Kind, err)
			}
			text, l, ptxText, pl := bothEntries(t, p, k, target)
			assemble(t, text, []plan.Kernel{k})
			for _, r := range tc.runs {
				env := map[string]int64{}
				for i, name := range []string{"t", "seq", "b"} {
					if _, ok := tc.bound[name]; ok {
						env[name] = r[i]
					}
				}
				n := int(r[2]) * tc.heads
				insts, pinsts := contractBothAt(t, tc.src, k, text, l, ptxText, pl, env, n, max(1, int(r[1]), 16), 17, false)
				if r[0] == tc.bound["t"] && r[1] == tc.bound["seq"] {
					// docs/perf.md's table.
					t.Logf("warp instructions at %v: nvvm %d, ptx %d", env, insts, pinsts)
				}
			}
		})
	}
}
