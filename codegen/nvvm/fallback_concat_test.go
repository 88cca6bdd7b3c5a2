package nvvm_test

import (
	"testing"

	"github.com/gcomp/gcomp/codegen/nvvm"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// TestFallbackConcat: no concat along a symbolic dim is borrowed: one fused with elementwise ops
// (symconcat_fused.go), a broadcast among them too, a concat of views (symconcat.go), the same
// kernels without sizes (static) and a copy through views are this package's own (compiler's
// TestSymbolicConcatFusedNVVM runs them).
func TestFallbackConcat(t *testing.T) {
	parse := func(src string) *ir.Graph {
		g, err := ir.Parse("k.gir", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	concat := parse("graph k {\n  input %a : f32[2,4,9,8]\n  input %b : f32[2,1,4,8]\n  %0 = transpose(%b) {perm=[0,2,1,3]} : f32[2,4,1,8]\n  %1 = concat(%a, %0) {axis=2} : f32[2,4,10,8]\n  output out = %1\n}\n")
	fused := parse("graph k {\n  input %a : f16[2,4,9,8]\n  input %b : f32[2,4,1,8]\n  %0 = cast(%b) {to=f16} : f16[2,4,1,8]\n  %1 = concat(%a, %0) {axis=2} : f16[2,4,10,8]\n  %2 = tanh(%1) : f16[2,4,10,8]\n  output out = %2\n}\n")
	scaled := parse("graph k {\n  input %a : f16[2,4,9,8]\n  input %b : f16[2,4,1,8]\n  input %s : f16[8]\n  %0 = concat(%a, %b) {axis=2} : f16[2,4,10,8]\n" +
		"  %1 = broadcast_in_dim(%s) {dims=[3], shape=[2,4,10,8]} : f16[2,4,10,8]\n  %2 = mul(%0, %1) : f16[2,4,10,8]\n  output out = %2\n}\n")
	copy := parse("graph k {\n  input %b : f32[2,9,4,8]\n  %0 = transpose(%b) {perm=[0,2,1,3]} : f32[2,4,9,8]\n  output out = %0\n}\n")
	sizes := func(g *ir.Graph) map[*ir.Value][]sym.Expr {
		m := map[*ir.Value][]sym.Expr{}
		for _, v := range g.Values {
			e := make([]sym.Expr, len(v.Type.Shape))
			for i, n := range v.Type.Shape {
				e[i] = sym.Const(int64(n))
				switch n {
				case 9:
					e[i] = sym.Sym("past")
				case 10:
					e[i] = sym.Add(sym.Sym("past"), sym.Const(1))
				}
			}
			m[v] = e
		}
		return m
	}
	tgt := plan.Target{SM: 80}
	for _, tc := range []struct {
		name string
		k    plan.Kernel
		want bool // borrowed
	}{
		{"symbolic concat", plan.Kernel{Name: "k0_concat", Graph: concat, Symbolic: true, Sizes: sizes(concat)}, false},
		{"symbolic concat fused with a cast and tanh", plan.Kernel{Name: "k0_cast_concat_tanh", Graph: fused, Symbolic: true, Sizes: sizes(fused)}, false},
		{"symbolic concat scaled by a broadcast", plan.Kernel{Name: "k0_concat_mul", Graph: scaled, Symbolic: true, Sizes: sizes(scaled)}, false},
		{"static concat", plan.Kernel{Name: "k0_concat", Graph: concat}, false},
		{"static fused concat", plan.Kernel{Name: "k0_cast_concat_tanh", Graph: fused}, false},
		{"symbolic copy", plan.Kernel{Name: "k0_transpose", Graph: copy, Symbolic: true, Sizes: sizes(copy)}, false},
	} {
		note, ok := nvvm.Lacks(tc.k, tgt)
		if ok != tc.want {
			t.Errorf("%s: Lacks = %q, %v; want %v", tc.name, note, ok, tc.want)
		}
	}
}
