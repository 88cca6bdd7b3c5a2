package nvvm

import "github.com/gcomp/gcomp/codegen/plan"

// reducesViews reports whether symbolic kernel k is a column reduction over its rows reading
// views at the run's sizes (codegen/ptx's symfold_reduce_view.go: a bias gradient summing
// attention's heads merged back through views that move the rows, nn.MultiheadAttention's packed
// in-projection). This package's column template reads its operands at the bound's index
// arithmetic, so it borrows codegen/ptx's entry.
func reducesViews(k plan.Kernel) bool {
	return k.Symbolic && k.Sizes != nil && !plan.LayerSized(k) && plan.Template(k) == "reduction"
}
