package nvvm_test

import (
	"testing"

	"github.com/gcomp/gcomp/codegen/nvvm"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
)

// TestFallbackReduceViews: a bias gradient over symbolic rows summing attention's heads merged
// back through views that move the rows (codegen/ptx's symfold_reduce_view.go) is borrowed:
// Lacks names it, the NVVM producer's Module refuses it, and backend.NVVM's module runs
// codegen/ptx's entry, with seq's parameter, and assembles. Without the views' sizes it is the
// column template over the bound's layout, not borrowed.
func TestFallbackReduceViews(t *testing.T) {
	p := nvvm.RequireProducer(t)
	g, err := ir.Parse("k.gir", []byte("graph k {\n  input %dq : f32[2,2,13,4]\n"+
		"  %0 = transpose(%dq) {perm=[0,2,1,3]} : f32[2,13,2,4]\n  %1 = reshape(%0) {shape=[2,13,8]} : f32[2,13,8]\n"+
		"  %2 = reduce_sum(%1) {axes=[0,1]} : f32[8]\n  output db = %2\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tgt := plan.Target{SM: 80}
	k := plan.Kernel{Name: "k0_sum", Graph: g, Symbolic: true, Rows: 26, Sizes: sizesOver(g, 13, "seq")}
	checkBorrowedSym(t, p, k, tgt, "column reduction through views at symbolic sizes")
	k.Sizes = nil
	if _, ok := nvvm.Lacks(k, tgt); ok {
		t.Error("a column reduction without the views' sizes is borrowed")
	}
}
