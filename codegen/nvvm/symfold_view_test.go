package nvvm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/internal/symtest"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// TestSymbolicFoldViews: GEMMs whose K is the symbolic rows, reading attention's heads merged
// back through a transpose and a reshape at the run's sizes (seq not leading the buffers), or a
// transpose of [m, seq] (strided at the bound by seq) at the run's strides, batched over a
// static dim or not, are
// the NVVM producer's own (Lacks names nothing; symfold_view.go): codegen/ptx's parameters (the
// dims' values, then K), launch and work, on FFMA and tensor cores, one operand or both read
// through views; they assemble for sm_80 and sm_90 without spills, and on the memchecked,
// racechecked simulator at 0, 1, a prime and the bound, every buffer laid out at the run's sizes
// and no longer, they equal the reference within tolerance and codegen/ptx's entry bit for bit.
// Without sizes both producers refuse them alike (TestSymbolicTemplatesRefused).
func TestSymbolicFoldViews(t *testing.T) {
	p := requireProducer(t)
	for _, tc := range []struct {
		name, src string // src has %[1]d for seq
		kind      string
		per       int // the rows (K) per seq
	}{
		{"left operand merged (FFMA)", "graph k {\n  input %%dq : f32[2,2,%[1]d,4]\n  input %%x : f32[2,%[1]d,8]\n  %%0 = transpose(%%dq) {perm=[0,2,1,3]} : f32[2,%[1]d,2,4]\n" +
			"  %%1 = reshape(%%0) {shape=[2,%[1]d,8]} : f32[2,%[1]d,8]\n  %%2 = dot_general(%%1, %%x) {lhs_contract=[0,1], rhs_contract=[0,1]} : f32[8,8]\n  output out = %%2\n}\n", "ffma", 2},
		{"right operand merged (tensor cores)", "graph k {\n  input %%x : f16[2,%[1]d,16]\n  input %%dv : f16[2,2,%[1]d,8]\n  %%0 = transpose(%%dv) {perm=[0,2,1,3]} : f16[2,%[1]d,2,8]\n" +
			"  %%1 = reshape(%%0) {shape=[2,%[1]d,16]} : f16[2,%[1]d,16]\n  %%2 = dot_general(%%x, %%1) {lhs_contract=[0,1], rhs_contract=[0,1]} : f16[16,16]\n  output out = %%2\n}\n", "tensor core", 2},
		{"both operands merged (FFMA)", "graph k {\n  input %%a : f32[2,2,%[1]d,3]\n  input %%b : f32[2,2,%[1]d,5]\n  %%0 = transpose(%%a) {perm=[0,2,1,3]} : f32[2,%[1]d,2,3]\n" +
			"  %%1 = reshape(%%0) {shape=[2,%[1]d,6]} : f32[2,%[1]d,6]\n  %%2 = transpose(%%b) {perm=[0,2,1,3]} : f32[2,%[1]d,2,5]\n  %%3 = reshape(%%2) {shape=[2,%[1]d,10]} : f32[2,%[1]d,10]\n" +
			"  %%4 = dot_general(%%1, %%3) {lhs_contract=[0,1], rhs_contract=[0,1]} : f32[6,10]\n  output out = %%4\n}\n", "ffma", 2},
		// Strided at the bound by seq (a transpose of [m, seq]): read through the transpose at
		// the run's strides, as codegen/ptx's symFoldGeneric makes GEMMPlan's operand generic.
		{"a transpose of [2, seq] (FFMA)", "graph k {\n  input %%a : f32[2,%[1]d]\n  input %%x : f32[%[1]d,8]\n  %%0 = transpose(%%a) {perm=[1,0]} : f32[%[1]d,2]\n" +
			"  %%1 = dot_general(%%0, %%x) {lhs_contract=[0], rhs_contract=[0]} : f32[2,8]\n  output out = %%1\n}\n", "ffma", 1},
		{"a transpose of [16, seq] on the right (tensor cores)", "graph k {\n  input %%x : f16[%[1]d,16]\n  input %%a : f16[16,%[1]d]\n  %%0 = transpose(%%a) {perm=[1,0]} : f16[%[1]d,16]\n" +
			"  %%1 = dot_general(%%x, %%0) {lhs_contract=[0], rhs_contract=[0]} : f16[16,16]\n  output out = %%1\n}\n", "tensor core", 1},
		// Batched over a static dim (the rows are K): each batch coordinate from blockIdx.z.
		{"batched, heads merged (FFMA)", "graph k {\n  input %%a : f32[%[1]d,2,4,3]\n  input %%b : f32[%[1]d,4,5]\n  %%0 = transpose(%%a) {perm=[0,2,1,3]} : f32[%[1]d,4,2,3]\n" +
			"  %%1 = reshape(%%0) {shape=[%[1]d,4,6]} : f32[%[1]d,4,6]\n  %%2 = dot_general(%%1, %%b) {lhs_batch=[1], rhs_batch=[1], lhs_contract=[0], rhs_contract=[0]} : f32[4,6,5]\n  output out = %%2\n}\n", "ffma", 1},
		{"batched, heads merged (tensor cores)", "graph k {\n  input %%a : f16[%[1]d,2,4,8]\n  input %%b : f16[%[1]d,4,16]\n  %%0 = transpose(%%a) {perm=[0,2,1,3]} : f16[%[1]d,4,2,8]\n" +
			"  %%1 = reshape(%%0) {shape=[%[1]d,4,16]} : f16[%[1]d,4,16]\n  %%2 = dot_general(%%1, %%b) {lhs_batch=[1], rhs_batch=[1], lhs_contract=[0], rhs_contract=[0]} : f16[4,16,16]\n  output out = %%2\n}\n", "tensor core", 1},
	} {
		t.Run(tc.name, func(t *testing.T) { runFoldViews(t, p, tc.src, tc.kind, tc.per) })
	}
}

// runFoldViews builds the fold of src (%[1]d for seq, the sizes' symbol at the bound; K is per
// rows per seq), checks
// codegen/ptx's parameters and plan kind, assembles it, and runs both producers' entries at 0,
// 1, a prime and the bound against the reference and each other bit for bit; it returns the
// NVVM producer's text.
func runFoldViews(t *testing.T, p *Producer, src, kind string, per int) string {
	t.Helper()
	const bound = 13
	parse := func(seq int) *ir.Graph {
		g, err := ir.Parse("k.gir", fmt.Appendf(nil, src, seq))
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	g := parse(bound)
	sizes := symtest.SizesOver(g, bound, "seq", nil)
	k := plan.Kernel{Name: "k0", Graph: g, Symbolic: true, Rows: per * bound, Sizes: sizes}
	target := plan.Target{SM: 80}
	if c, err := plan.ContractionPlan(k, target); err != nil || c.Kind != kind {
		t.Fatalf("plan %q, %v; want %s", c.Kind, err, kind)
	}
	text, l, ptxText, pl := bothSymbolic(t, p, k, target)
	var params []string
	for _, a := range l.Params {
		if a.Kind == plan.ArgSize {
			params = append(params, a.Expr)
		}
	}
	if strings.Join(params, ",") != "seq," || l.Work.Axis != 2 || l.Work.MaxBlocks != 1 {
		t.Errorf("size parameters %q, work %+v: want seq, then K; one block along z", params, *l.Work)
	}
	assemble(t, text, []plan.Kernel{k})
	for _, r := range []int{0, 1, 5, bound} {
		gr := parse(r)
		in := inputsFor(gr, uint64(3+r))
		want, err := ref.Run(gr, in, nil)
		if err != nil {
			t.Fatal(err)
		}
		size := func(w *plan.SymWork) func(plan.Arg) int {
			return func(a plan.Arg) int {
				if a.Expr == "seq" {
					return r
				}
				return per * r * w.Scale
			}
		}
		static := func(string) bool { return false }
		got := runRows(t, text, k, l, in, per*bound, per*r, size(l.Work), static)
		emitted := runRows(t, ptxText, k, pl, in, per*bound, per*r, size(pl.Work), static)
		o := g.Outputs[0]
		what := fmt.Sprintf("%s at seq %d", o.Name, r)
		w, err := tensor.FromBytes(ir.T(o.Value.Type.DType, want[o.Name].Len()), want[o.Name].Bytes())
		if err != nil {
			t.Fatal(err)
		}
		compare(t, what+" (reference)", got[o.Name], w, false, precision(g, o.Value), false, max(1, per*r*contractionLen(g)/(per*bound)))
		compare(t, what+" (codegen/ptx)", got[o.Name], emitted[o.Name], true, precision(g, o.Value), false, 1)
	}
	return text
}
