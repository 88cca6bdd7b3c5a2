package passes

import (
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// sizeDependent reports whether v's value over constant operands depends on the run's sizes, so
// that folding it at the bound would fix the bound's answer: any op but an elementwise one or a
// view over an operand with symbolic sizes (a sum over a splat's symbolic rows is the splat
// times the rows; a mean's count is such a sum). Elementwise ops and views of splats stay splats
// at every size, and a symbolic constant is always a splat: a result with symbolic sizes whose
// operands are not all splats (a table broadcast over the batch) stays computed, since a constant
// holds one value per element of the bound.
func sizeDependent(v *ir.Value) bool {
	if v.Type.Sym != nil && slices.ContainsFunc(v.Args, func(a *ir.Value) bool { _, ok := splatValue(a); return !ok }) {
		return true
	}
	for _, a := range v.Args {
		if a.Type.Sym != nil {
			return ops.ClassOf(v.Op) != ops.Elementwise && v.Op != "select" && !isView(v.Op)
		}
	}
	return false
}
