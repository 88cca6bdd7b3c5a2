package nvvm

import (
	"cmp"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
)

// TestSymbolicContractMMA: batched products at symbolic sizes that codegen/ptx computes on
// tensor cores (symcontract_mma.go) are the NVVM producer's own (Lacks names nothing): K
// symbolic (xᵀ·y, scores·V; operands strided with the run's batch stride or generic, through
// views, a symbolic batch, a symbolic M) and N symbolic on the right (q·kᵀ by hand), in f16,
// bf16 and f32 on tf32. Codegen/ptx's parameters, launch and work; they assemble for sm_80
// and sm_90, and on the memchecked, racechecked simulator at seq 0, 1, a prime, a multiple of 8
// and the bound, every buffer laid out at the run's sizes, they equal codegen/ptx's entry bit
// for bit and the reference within tolerance, writing nothing past the run's result.
func TestSymbolicContractMMA(t *testing.T) {
	p := requireProducer(t)
	const all = "f16 bf16 f32"
	for _, tc := range []struct {
		name, src string
		dtypes    string // the element types it runs in (f32: on tf32)
		batch     int64  // the run's batch when it is the dim b (0: static)
		rows      int    // Kernel.Rows
		bound     int64  // seq's bound (0: 40)
	}{
		{"xᵀ·y over seq, both strided", "graph k {\n  input %x : T[2,{{seq}},16]\n  input %y : T[2,{{seq}},24]\n" +
			"  %0 = dot_general(%x, %y) {lhs_batch=[0], lhs_contract=[1], rhs_batch=[0], rhs_contract=[1]} : T[2,16,24]\n  output out = %0\n}\n", all, 0, 2, 0},
		{"scores·V, the scores generic", "graph k {\n  input %p : T[3,12,{{seq}}]\n  input %v : T[3,{{seq}},16]\n" +
			"  %0 = dot_general(%p, %v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : T[3,12,16]\n  output out = %0\n}\n", all, 0, 3, 0},
		// Strided at the bound but read through the generic copier: K, its contiguous dim, is
		// symbolic (a chunk could cross the run's K).
		{"a weighting per batch element over seq, contiguous K", "graph k {\n  input %w : T[3,{{seq}}]\n  input %v : T[3,{{seq}},16]\n" +
			"  %0 = dot_general(%w, %v) {lhs_batch=[0], lhs_contract=[1], rhs_batch=[0], rhs_contract=[1]} : T[3,16]\n  output out = %0\n}\n", "f16 f32", 0, 3, 0},
		{"symbolic batch and seq, a bias epilogue", "graph k {\n  input %x : T[{{b}},{{seq}},8]\n  input %y : T[{{b}},{{seq}},24]\n  input %c : T[24]\n" +
			"  %0 = dot_general(%x, %y) {lhs_batch=[0], lhs_contract=[1], rhs_batch=[0], rhs_contract=[1]} : T[{{b}},8,24]\n" +
			"  %1 = broadcast_in_dim(%c) {shape=[{{b}},8,24], dims=[2]} : T[{{b}},8,24]\n  %2 = add(%0, %1) : T[{{b}},8,24]\n  output out = %2\n}\n", "f16", 3, 4, 0},
		{"scores·V with a symbolic M (seq by seq) over two row tiles", "graph k {\n  input %p : T[2,{{seq}},{{seq}}]\n  input %v : T[2,{{seq}},16]\n" +
			"  %0 = dot_general(%p, %v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : T[2,{{seq}},16]\n  output out = %0\n}\n", "bf16", 0, 2, 136},
		{"heads merged through a view, contracted over seq", "graph k {\n  input %x : T[2,2,{{seq}},8]\n  input %y : T[2,{{seq}},16]\n" +
			"  %0 = transpose(%x) {perm=[0,2,1,3]} : T[2,{{seq}},2,8]\n  %1 = reshape(%0) {shape=[2,{{seq}},16]} : T[2,{{seq}},16]\n" +
			"  %2 = dot_general(%1, %y) {lhs_batch=[0], lhs_contract=[1], rhs_batch=[0], rhs_contract=[1]} : T[2,16,16]\n  output out = %2\n}\n", "f16 f32", 0, 2, 0},
		// A symbolic free dim on the right: N is seq, K static or not.
		{"q·kᵀ, static queries, N over two column tiles", "graph k {\n  input %q : T[2,9,16]\n  input %k : T[2,{{seq}},16]\n" +
			"  %0 = dot_general(%q, %k) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[2]} : T[2,9,{{seq}}]\n  output out = %0\n}\n", all, 0, 2, 136},
		{"a self-attention's q·kᵀ, symbolic batch, a mask of the result's sizes added", "graph k {\n  input %q : T[{{b}},{{seq}},16]\n  input %k : T[{{b}},{{seq}},16]\n  input %m : T[{{b}},{{seq}},{{seq}}]\n" +
			"  %0 = dot_general(%q, %k) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[2]} : T[{{b}},{{seq}},{{seq}}]\n  %1 = add(%0, %m) : T[{{b}},{{seq}},{{seq}}]\n  output out = %1\n}\n", "bf16", 3, 4, 0},
		{"q·kᵀ, the keys through a transpose, negated after", "graph k {\n  input %q : T[3,5,8]\n  input %kt : T[3,8,{{seq}}]\n" +
			"  %0 = transpose(%kt) {perm=[0,2,1]} : T[3,{{seq}},8]\n  %1 = dot_general(%q, %0) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[2]} : T[3,5,{{seq}}]\n" +
			"  %2 = neg(%1) : T[3,5,{{seq}}]\n  output out = %2\n}\n", "f16 f32", 0, 3, 0},
		{"scores·V, V's columns symbolic too (K and N seq)", "graph k {\n  input %p : T[2,5,{{seq}}]\n  input %v : T[2,{{seq}},{{seq}}]\n" +
			"  %0 = dot_general(%p, %v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : T[2,5,{{seq}}]\n  output out = %0\n}\n", all, 0, 2, 0},
	} {
		for _, dt := range strings.Fields(tc.dtypes) {
			t.Run(tc.name+"/"+dt, func(t *testing.T) {
				src := strings.ReplaceAll(tc.src, "T[", dt+"[")
				bound := cmp.Or(tc.bound, 40)
				benv := map[string]int64{"seq": bound, "b": 4}
				g, sizes := dimsGraph(t, src, benv)
				k := plan.Kernel{Name: "k0_contract", Graph: g, Symbolic: true, Rows: tc.rows, Sizes: sizes}
				target := plan.Target{SM: 80, TF32: dt == "f32"}
				if c, err := plan.ContractionPlan(k, target); err != nil || c.Kind != "tensor core" {
					t.Fatalf("plan %q, %v; want tensor core", c.Kind, err)
				}
				checkContractEntries(t, p, src, k, target, tc.batch, []int64{0, 1, 13, 24, bound}, 29, 16)
			})
		}
	}
}
