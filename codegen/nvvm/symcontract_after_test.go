package nvvm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
)

// TestSymbolicContractBatchAfter: batched products contracting seq whose symbolic batch dim b
// (at most 4) follows a static one (symcontract_after.go), on FFMA and on tensor cores, are the
// NVVM producer's own: codegen/ptx's size parameters (b, seq, then the batch count 2·b, which
// grid.z follows), assembled without spills; on the memchecked, racechecked simulator at
// (seq, b) = (1, 1), (13, 3) and the bounds, every buffer laid out at the run's sizes, they equal
// codegen/ptx's entry bit for bit and the reference within tolerance. At b 1 and 4 the bound's
// split of grid.z would address the same elements; b = 3 tells them apart.
func TestSymbolicContractBatchAfter(t *testing.T) {
	p := requireProducer(t)
	for _, tc := range []struct {
		name, src, kind string
		bound           int64 // seq's
	}{
		{"xᵀ·y over seq, a static batch then b, a bias epilogue (FFMA)", "graph k {\n  input %x : f32[2,{{b}},{{seq}},8]\n  input %y : f32[2,{{b}},{{seq}},24]\n  input %c : f32[24]\n" +
			"  %0 = dot_general(%x, %y) {lhs_batch=[0,1], lhs_contract=[2], rhs_batch=[0,1], rhs_contract=[2]} : f32[2,{{b}},8,24]\n" +
			"  %1 = broadcast_in_dim(%c) {shape=[2,{{b}},8,24], dims=[3]} : f32[2,{{b}},8,24]\n  %2 = add(%0, %1) : f32[2,{{b}},8,24]\n  output out = %2\n}\n", "ffma", 13},
		{"scores·V, a static batch then b, the scores generic (FFMA)", "graph k {\n  input %p : f32[2,{{b}},12,{{seq}}]\n  input %v : f32[2,{{b}},{{seq}},16]\n" +
			"  %0 = dot_general(%p, %v) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[2]} : f32[2,{{b}},12,16]\n  output out = %0\n}\n", "ffma", 13},
		{"scores·V, a static batch then b (f16 tensor cores)", "graph k {\n  input %p : f16[2,{{b}},12,{{seq}}]\n  input %v : f16[2,{{b}},{{seq}},16]\n" +
			"  %0 = dot_general(%p, %v) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[2]} : f16[2,{{b}},12,16]\n  output out = %0\n}\n", "tensor core", 40},
		{"xᵀ·y over seq, a static batch then b (bf16 tensor cores)", "graph k {\n  input %x : bf16[2,{{b}},{{seq}},16]\n  input %y : bf16[2,{{b}},{{seq}},24]\n" +
			"  %0 = dot_general(%x, %y) {lhs_batch=[0,1], lhs_contract=[2], rhs_batch=[0,1], rhs_contract=[2]} : bf16[2,{{b}},16,24]\n  output out = %0\n}\n", "tensor core", 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, sizes := dimsGraph(t, tc.src, map[string]int64{"seq": tc.bound, "b": 4})
			k := plan.Kernel{Name: "k0_contract", Graph: g, Symbolic: true, Rows: 8, Sizes: sizes}
			target := plan.Target{SM: 80}
			if c, err := plan.ContractionPlan(k, target); err != nil || c.Kind != tc.kind {
				t.Fatalf("plan %q, %v; want %s", c.Kind, err, tc.kind)
			}
			text, l, ptxText, pl := bothEntries(t, p, k, target)
			var exprs []string
			for _, a := range l.Params {
				if a.Kind == plan.ArgSize {
					exprs = append(exprs, a.Expr)
				}
			}
			if fmt.Sprint(exprs) != "[b seq ]" {
				t.Errorf("size parameters %q, want [b seq ]", exprs)
			}
			if l.Work == nil || l.Work.Axis != 2 {
				t.Fatalf("work %+v, want grid.z to follow the batch", l.Work)
			}
			assemble(t, text, []plan.Kernel{k})
			for _, r := range [][2]int64{{1, 1}, {13, 3}, {tc.bound, 4}} {
				env := map[string]int64{"seq": r[0], "b": r[1]}
				insts, pinsts := contractBothAt(t, tc.src, k, text, l, ptxText, pl, env, int(2*r[1]), max(16, int(r[0])), 41, false)
				t.Logf("warp instructions at seq %d, batch 2×%d: nvvm %d, ptx %d", r[0], r[1], insts, pinsts)
			}
			if strings.Contains(tc.kind, "tensor") != strings.Contains(text, "mma.sync") {
				t.Errorf("mma.sync in the entry: %v, want %v", !strings.Contains(tc.kind, "tensor"), strings.Contains(tc.kind, "tensor"))
			}
		})
	}
}
