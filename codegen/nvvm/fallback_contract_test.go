package nvvm_test

import (
	"slices"
	"testing"

	"github.com/gcomp/gcomp/codegen/nvvm"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// TestFallbackContract: batched products at symbolic sizes, contracting seq (a symbolic dim
// that is not the rows: codegen/ptx's symcontract.go) or q·kᵀ by hand with seq its N
// (symcontract_rhs.go), are the NVVM producer's own on FFMA (f32) and on tensor cores (f16, bf16,
// and f32 on tf32: symcontract_mma.go): Lacks names nothing and its Module builds them with
// seq's parameter, as it does a batched product over a symbolic batch with a static K.
func TestFallbackContract(t *testing.T) {
	p := nvvm.RequireProducer(t)
	for _, tc := range []struct {
		src  string
		tf32 bool
	}{
		{"graph k {\n  input %x : f32[2,13,12]\n  input %y : f32[2,13,20]\n  %0 = dot_general(%x, %y) {lhs_batch=[0], lhs_contract=[1], rhs_batch=[0], rhs_contract=[1]} : f32[2,12,20]\n  output out = %0\n}\n", false},
		{"graph k {\n  input %p : f16[2,12,13]\n  input %v : f16[2,13,16]\n  %0 = dot_general(%p, %v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : f16[2,12,16]\n  output out = %0\n}\n", false},
		{"graph k {\n  input %p : f32[2,12,13]\n  input %v : f32[2,13,16]\n  %0 = dot_general(%p, %v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : f32[2,12,16]\n  output out = %0\n}\n", true},
		// q·kᵀ by hand, seq its N (symcontract_rhs.go).
		{"graph k {\n  input %q : f32[2,9,16]\n  input %k : f32[2,13,16]\n  %0 = dot_general(%q, %k) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[2]} : f32[2,9,13]\n  output out = %0\n}\n", false},
		{"graph k {\n  input %q : bf16[2,9,16]\n  input %k : bf16[2,13,16]\n  %0 = dot_general(%q, %k) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[2]} : bf16[2,9,13]\n  output out = %0\n}\n", false},
	} {
		g, err := ir.Parse("k.gir", []byte(tc.src))
		if err != nil {
			t.Fatal(err)
		}
		tgt := plan.Target{SM: 80, TF32: tc.tf32}
		k := plan.Kernel{Name: "k0_contract", Graph: g, Symbolic: true, Rows: 2, Sizes: sizesOver(g, 13, "seq")}
		if note, ok := nvvm.Lacks(k, tgt); ok {
			t.Errorf("%s: a batched product over seq is borrowed: %s", g.Inputs()[0].Type, note)
		}
		if _, launches, err := p.Module([]plan.Kernel{k}, tgt); err != nil {
			t.Errorf("%s: %v", g.Inputs()[0].Type, err)
		} else if !slices.ContainsFunc(launches[0].Params, func(a plan.Arg) bool { return a.Expr == "seq" }) {
			t.Errorf("%s: params %+v: no parameter for seq", g.Inputs()[0].Type, launches[0].Params)
		}
		// The batch symbolic, K static: not borrowed.
		k.Sizes = sizesOver(g, 2, "b")
		if _, ok := nvvm.Lacks(k, tgt); ok {
			t.Error("a batched product over a symbolic batch with a static K is borrowed")
		}
	}
}

// sizesOver is the sizes of g's values but the products', dim name where a size is n.
func sizesOver(g *ir.Graph, n int, name string) map[*ir.Value][]sym.Expr {
	sizes := map[*ir.Value][]sym.Expr{}
	for _, v := range g.Values {
		if v.Op == "dot_general" {
			continue
		}
		e := make([]sym.Expr, len(v.Type.Shape))
		for i, m := range v.Type.Shape {
			e[i] = sym.Const(int64(m))
			if m == n {
				e[i] = sym.Sym(name)
			}
		}
		sizes[v] = e
	}
	return sizes
}
