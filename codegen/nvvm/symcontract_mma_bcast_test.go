package nvvm

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
)

// TestSymbolicContractMMAViews: batched products at symbolic sizes on tensor cores
// (symcontract_mma.go) whose epilogue reads a buffer of the run's sizes through a broadcast or
// another view (symcontract_bcast.go) are the NVVM producer's own (Lacks names nothing): a bias
// [seq] along the rows, a mask over the heads, a mask transposed before its broadcast, a
// residual reshaped to the result, a mask sliced and transposed before its broadcast, a per-row
// scale [seq, 1], in f16, bf16 and f32 on tf32. Built once at the bounds with codegen/ptx's
// launch, they assemble for sm_80 and sm_90, and on the memchecked, racechecked simulator at
// seq 1, 13 and the bound (a symbolic batch 1, 2 and its bound), every buffer laid out at the
// run's sizes, they equal codegen/ptx's entry bit for bit and the reference within tolerance.
func TestSymbolicContractMMAViews(t *testing.T) {
	const all = "f16 bf16 f32"
	p := requireProducer(t)
	qk := "  %0 = dot_general(%q, %k) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[3]} : "
	for _, tc := range []struct {
		name, src string
		dtypes    string
		rows      int // Kernel.Rows: the bound's batch elements
		heads     int // batch elements per b (the size parameter is b·heads); 0: a static batch
	}{
		{"q·kᵀ, static queries, a bias [seq] along the rows", "graph k {\n  input %q : T[2,9,16]\n  input %k : T[2,{{seq}},16]\n  input %w : T[{{seq}}]\n" +
			"  %0 = dot_general(%q, %k) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[2]} : T[2,9,{{seq}}]\n" +
			"  %1 = broadcast_in_dim(%w) {dims=[2], shape=[2,9,{{seq}}]} : T[2,9,{{seq}}]\n  %2 = add(%0, %1) : T[2,9,{{seq}}]\n  output out = %2\n}\n", all, 2, 0},
		{"a self-attention's q·kᵀ over heads, a mask [b,1,seq,seq] broadcast over the heads, symbolic batch", "graph k {\n  input %q : T[{{b}},2,{{seq}},16]\n  input %k : T[{{b}},2,{{seq}},16]\n  input %m : T[{{b}},1,{{seq}},{{seq}}]\n" +
			qk + "T[{{b}},2,{{seq}},{{seq}}]\n" +
			"  %1 = broadcast_in_dim(%m) {dims=[0,1,2,3], shape=[{{b}},2,{{seq}},{{seq}}]} : T[{{b}},2,{{seq}},{{seq}}]\n  %2 = add(%0, %1) : T[{{b}},2,{{seq}},{{seq}}]\n  output out = %2\n}\n", all, 6, 2},
		{"a self-attention's q·kᵀ over heads, a mask [b,seq,seq] transposed before its broadcast, symbolic batch", "graph k {\n  input %q : T[{{b}},2,{{seq}},16]\n  input %k : T[{{b}},2,{{seq}},16]\n  input %m : T[{{b}},{{seq}},{{seq}}]\n" +
			qk + "T[{{b}},2,{{seq}},{{seq}}]\n  %1 = transpose(%m) {perm=[0,2,1]} : T[{{b}},{{seq}},{{seq}}]\n" +
			"  %2 = broadcast_in_dim(%1) {dims=[0,2,3], shape=[{{b}},2,{{seq}},{{seq}}]} : T[{{b}},2,{{seq}},{{seq}}]\n  %3 = add(%0, %2) : T[{{b}},2,{{seq}},{{seq}}]\n  output out = %3\n}\n", all, 6, 2},
		{"scores·V (seq by seq), a residual [2·seq,16] reshaped to the result", "graph k {\n  input %p : T[2,{{seq}},{{seq}}]\n  input %v : T[2,{{seq}},16]\n  input %r : T[{{2*seq}},16]\n" +
			"  %0 = dot_general(%p, %v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : T[2,{{seq}},16]\n" +
			"  %1 = reshape(%r) {shape=[2,{{seq}},16]} : T[2,{{seq}},16]\n  %2 = add(%0, %1) : T[2,{{seq}},16]\n  output out = %2\n}\n", all, 2, 0},
		{"q·kᵀ over heads, a mask [2,seq,11] sliced and transposed before its broadcast", "graph k {\n  input %q : T[2,2,9,16]\n  input %k : T[2,2,{{seq}},16]\n  input %m : T[2,{{seq}},11]\n" +
			qk + "T[2,2,9,{{seq}}]\n  %1 = slice(%m) {start=[0,0,1], limit=[2,{{seq}},10]} : T[2,{{seq}},9]\n" +
			"  %2 = transpose(%1) {perm=[0,2,1]} : T[2,9,{{seq}}]\n  %3 = broadcast_in_dim(%2) {dims=[0,2,3], shape=[2,2,9,{{seq}}]} : T[2,2,9,{{seq}}]\n" +
			"  %4 = add(%0, %3) : T[2,2,9,{{seq}}]\n  output out = %4\n}\n", all, 4, 0},
		{"scores·V over seq, a per-row scale [seq,1] (seq by seq)", "graph k {\n  input %p : T[2,{{seq}},{{seq}}]\n  input %v : T[2,{{seq}},16]\n  input %s : T[{{seq}},1]\n" +
			"  %0 = dot_general(%p, %v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : T[2,{{seq}},16]\n" +
			"  %1 = broadcast_in_dim(%s) {dims=[1,2], shape=[2,{{seq}},16]} : T[2,{{seq}},16]\n  %2 = mul(%0, %1) : T[2,{{seq}},16]\n  output out = %2\n}\n", "f16", 2, 0},
	} {
		for _, dt := range strings.Fields(tc.dtypes) {
			t.Run(tc.name+"/"+dt, func(t *testing.T) {
				src := strings.ReplaceAll(tc.src, "T[", dt+"[")
				const bound, bBound = 40, 3
				g, sizes := dimsGraph(t, src, map[string]int64{"seq": bound, "b": bBound})
				k := plan.Kernel{Name: "k0_contract", Graph: g, Symbolic: true, Rows: tc.rows, Sizes: sizes}
				target := plan.Target{SM: 80, TF32: dt == "f32"}
				if c, err := plan.ContractionPlan(k, target); err != nil || c.Kind != "tensor core" {
					t.Fatalf("plan %q, %v; want tensor core", c.Kind, err)
				}
				text, l, ptxText, pl := bothEntries(t, p, k, target)
				assemble(t, text, []plan.Kernel{k})
				for i, seq := range []int64{1, 13, bound} {
					env := map[string]int64{"seq": seq}
					n := 0
					if tc.heads > 0 {
						env["b"] = []int64{1, 2, bBound}[i]
						n = int(env["b"]) * tc.heads
					}
					insts, pinsts := contractBothAt(t, src, k, text, l, ptxText, pl, env, n, max(16, int(seq)), 31, target.TF32)
					if seq == bound {
						t.Logf("warp instructions at %v: nvvm %d, ptx %d", env, insts, pinsts) // docs/perf.md's table
					}
				}
			})
		}
	}
}
