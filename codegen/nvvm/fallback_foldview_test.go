package nvvm_test

import (
	"testing"

	"github.com/gcomp/gcomp/codegen/nvvm"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// TestFallbackFoldView: a GEMM whose K is the symbolic rows, reading attention's heads merged
// back through a transpose and a reshape at the run's sizes (codegen/ptx's symfold_view.go), is
// borrowed (f32 and f16): Lacks names it, the NVVM producer's Module refuses it, and
// backend.NVVM's module runs codegen/ptx's entry for it, with the dims' parameters, and
// assembles. Without sizes it is not borrowed (both producers refuse it; TestSymbolicTemplatesRefused).
func TestFallbackFoldView(t *testing.T) {
	p := nvvm.RequireProducer(t)
	for _, src := range []string{
		"graph k {\n  input %dq : f32[2,2,13,4]\n  input %x : f32[2,13,8]\n  %0 = transpose(%dq) {perm=[0,2,1,3]} : f32[2,13,2,4]\n  %1 = reshape(%0) {shape=[2,13,8]} : f32[2,13,8]\n  %2 = dot_general(%1, %x) {lhs_contract=[0,1], rhs_contract=[0,1]} : f32[8,8]\n  output out = %2\n}\n",
		"graph k {\n  input %x : f16[2,13,16]\n  input %dv : f16[2,2,13,8]\n  %0 = transpose(%dv) {perm=[0,2,1,3]} : f16[2,13,2,8]\n  %1 = reshape(%0) {shape=[2,13,16]} : f16[2,13,16]\n  %2 = dot_general(%x, %1) {lhs_contract=[0,1], rhs_contract=[0,1]} : f16[16,16]\n  output out = %2\n}\n",
	} {
		g, err := ir.Parse("k.gir", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		sizes := map[*ir.Value][]sym.Expr{}
		for _, v := range g.Values {
			if v.Op == "dot_general" {
				continue
			}
			e := make([]sym.Expr, len(v.Type.Shape))
			for i, n := range v.Type.Shape {
				e[i] = sym.Const(int64(n))
				if n == 13 {
					e[i] = sym.Sym("seq")
				}
			}
			sizes[v] = e
		}
		tgt := plan.Target{SM: 80}
		k := plan.Kernel{Name: "k0_fold", Graph: g, Symbolic: true, Rows: 26, Sizes: sizes}
		checkBorrowedSym(t, p, k, tgt, "GEMM folding its symbolic rows through a view")
		k.Sizes = nil
		if _, ok := nvvm.Lacks(k, tgt); ok {
			t.Error("a fold through a view without sizes is borrowed")
		}
	}
}
