package nvvm

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// TestSymbolicContract: batched products contracting a symbolic dim that is not the rows
// (symcontract.go) are the NVVM producer's own on FFMA (Lacks names nothing): codegen/ptx's
// parameters (the dims' values, then a symbolic batch's count), launch and work; operands
// strided with the run's batch stride, read through the generic copier (the scores, whose row
// stride follows seq, or views), a symbolic batch and a symbolic M. They assemble for sm_80 and
// sm_90 without spills, and on the memchecked, racechecked simulator at seq 0, 1, a prime and the
// bound, every buffer laid out at the run's sizes, they equal codegen/ptx's entry bit for bit
// and the reference within tolerance, writing nothing past the run's result.
func TestSymbolicContract(t *testing.T) {
	p := requireProducer(t)
	for _, tc := range []struct {
		name, src string
		batch     int64 // the run's batch when it is the dim b (0: static)
		rows      int   // Kernel.Rows
		bound     int64 // seq's bound (0: 13)
	}{
		{"xᵀ·y over seq, both strided", "graph k {\n  input %x : f32[2,{{seq}},12]\n  input %y : f32[2,{{seq}},20]\n" +
			"  %0 = dot_general(%x, %y) {lhs_batch=[0], lhs_contract=[1], rhs_batch=[0], rhs_contract=[1]} : f32[2,12,20]\n  output out = %0\n}\n", 0, 2, 0},
		{"scores·V, the scores generic", "graph k {\n  input %p : f32[3,12,{{seq}}]\n  input %v : f32[3,{{seq}},16]\n" +
			"  %0 = dot_general(%p, %v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : f32[3,12,16]\n  output out = %0\n}\n", 0, 3, 0},
		{"symbolic batch and seq, a bias epilogue", "graph k {\n  input %x : f32[{{b}},{{seq}},8]\n  input %y : f32[{{b}},{{seq}},24]\n  input %c : f32[24]\n" +
			"  %0 = dot_general(%x, %y) {lhs_batch=[0], lhs_contract=[1], rhs_batch=[0], rhs_contract=[1]} : f32[{{b}},8,24]\n" +
			"  %1 = broadcast_in_dim(%c) {shape=[{{b}},8,24], dims=[2]} : f32[{{b}},8,24]\n  %2 = add(%0, %1) : f32[{{b}},8,24]\n  output out = %2\n}\n", 3, 4, 0},
		{"scores·V with a symbolic M (seq by seq)", "graph k {\n  input %p : f32[2,{{seq}},{{seq}}]\n  input %v : f32[2,{{seq}},16]\n" +
			"  %0 = dot_general(%p, %v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : f32[2,{{seq}},16]\n  output out = %0\n}\n", 0, 2, 0},
		{"heads merged through a view, contracted over seq", "graph k {\n  input %x : f32[2,2,{{seq}},4]\n  input %y : f32[2,{{seq}},20]\n" +
			"  %0 = transpose(%x) {perm=[0,2,1,3]} : f32[2,{{seq}},2,4]\n  %1 = reshape(%0) {shape=[2,{{seq}},8]} : f32[2,{{seq}},8]\n" +
			"  %2 = dot_general(%1, %y) {lhs_batch=[0], lhs_contract=[1], rhs_batch=[0], rhs_contract=[1]} : f32[2,8,20]\n  output out = %2\n}\n", 0, 2, 0},
		// A symbolic free dim on the right (symcontract_rhs.go): N is seq, K static or not.
		{"q·kᵀ, static queries, N over three column tiles", "graph k {\n  input %q : f32[2,9,16]\n  input %k : f32[2,{{seq}},16]\n" +
			"  %0 = dot_general(%q, %k) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[2]} : f32[2,9,{{seq}}]\n  output out = %0\n}\n", 0, 2, 140},
		{"a self-attention's q·kᵀ, symbolic batch, a mask of the result's sizes added", "graph k {\n  input %q : f32[{{b}},{{seq}},16]\n  input %k : f32[{{b}},{{seq}},16]\n  input %m : f32[{{b}},{{seq}},{{seq}}]\n" +
			"  %0 = dot_general(%q, %k) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[2]} : f32[{{b}},{{seq}},{{seq}}]\n  %1 = add(%0, %m) : f32[{{b}},{{seq}},{{seq}}]\n  output out = %1\n}\n", 3, 4, 37},
		{"q·kᵀ, the keys through a transpose, negated after", "graph k {\n  input %q : f32[3,5,8]\n  input %kt : f32[3,8,{{seq}}]\n" +
			"  %0 = transpose(%kt) {perm=[0,2,1]} : f32[3,{{seq}},8]\n  %1 = dot_general(%q, %0) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[2]} : f32[3,5,{{seq}}]\n" +
			"  %2 = neg(%1) : f32[3,5,{{seq}}]\n  output out = %2\n}\n", 0, 3, 0},
		{"scores·V, V's columns symbolic too (K and N seq)", "graph k {\n  input %p : f32[2,5,{{seq}}]\n  input %v : f32[2,{{seq}},{{seq}}]\n" +
			"  %0 = dot_general(%p, %v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : f32[2,5,{{seq}}]\n  output out = %0\n}\n", 0, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bound := cmp.Or(tc.bound, 13)
			benv := map[string]int64{"seq": bound, "b": 4}
			g, sizes := dimsGraph(t, tc.src, benv)
			k := plan.Kernel{Name: "k0_contract", Graph: g, Symbolic: true, Rows: tc.rows, Sizes: sizes}
			target := plan.Target{SM: 80}
			if c, err := plan.ContractionPlan(k, target); err != nil || c.Kind != "ffma" {
				t.Fatalf("plan %q, %v; want ffma", c.Kind, err)
			}
			checkContractEntries(t, p, tc.src, k, target, tc.batch, []int64{0, 1, 7, bound}, 17, 1)
		})
	}
}

// checkContractEntries builds symbolic product k (graph src over seq, and b when batch is the
// run's batch) with the NVVM producer and codegen/ptx under target: codegen/ptx's launch and
// size parameters (seq's, after b's for a symbolic batch), assembled without spills; at each of
// seqs on the memchecked, racechecked simulator (inputs drawn from seed + seq), every buffer laid
// out at the run's sizes, the result equals codegen/ptx's bit for bit and the reference within
// tolerance (k at least minK), nothing written past it. It logs both entries' warp
// instructions at the last (docs/perf.md's tables).
func checkContractEntries(t *testing.T, p *Producer, src string, k plan.Kernel, target plan.Target, batch int64, seqs []int64, seed uint64, minK int) {
	t.Helper()
	text, l, ptxText, pl := bothEntries(t, p, k, target)
	want := "[seq]"
	if batch > 0 {
		want = "[b seq ]"
	}
	var exprs []string
	for _, a := range l.Params {
		if a.Kind == plan.ArgSize {
			exprs = append(exprs, a.Expr)
		}
	}
	if fmt.Sprint(exprs) != want {
		t.Errorf("size parameters %q, want %s", exprs, want)
	}
	assemble(t, text, []plan.Kernel{k})
	for i, r := range seqs {
		env := map[string]int64{"seq": r, "b": max(batch, 1)}
		insts, pinsts := contractBothAt(t, src, k, text, l, ptxText, pl, env, int(env["b"]), max(minK, int(r)), seed, target.TF32)
		if i == len(seqs)-1 {
			t.Logf("warp instructions at seq %d: nvvm %d, ptx %d", r, insts, pinsts)
		}
	}
}

// contractBothAt runs symbolic kernel k's NVVM entry (text, l) and codegen/ptx's (ptxText, pl)
// at the sizes env (n the size parameter) on src's graph there: the outputs must be equal bit
// for bit and within tolerance of the reference (k the summed terms); it returns both entries'
// warp instructions. Inputs are drawn from seed and the sizes; tf32 says the product rounds its
// operands to tf32.
func contractBothAt(t *testing.T, src string, k plan.Kernel, text string, l plan.Launch, ptxText string, pl plan.Launch, env map[string]int64, n, terms int, seed uint64, tf32 bool) (nvvm, ptx int64) {
	t.Helper()
	gr, _ := dimsGraph(t, src, env)
	for _, name := range slices.Sorted(maps.Keys(env)) {
		seed = seed*31 + uint64(env[name])
	}
	in := inputsFor(gr, seed)
	got, st := runDims(t, text, k, l, gr, in, env, n)
	emitted, pst := runDims(t, ptxText, k, pl, gr, in, env, n)
	o := gr.Outputs[0]
	if !bytes.Equal(got[o.Name], emitted[o.Name]) {
		t.Errorf("%s at %v: differs from codegen/ptx's", o.Name, env)
	}
	ref1, err := ref.Run(gr, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	x, err := tensor.FromBytes(o.Value.Type, got[o.Name])
	if err != nil {
		t.Fatal(err)
	}
	compare(t, fmt.Sprintf("%s at %v (reference)", o.Name, env), x, ref1[o.Name], false, o.Value.Type.DType, tf32, terms)
	return int64(st.WarpInsts), int64(pst.WarpInsts)
}
