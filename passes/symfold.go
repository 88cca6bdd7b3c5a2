package passes

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// sizeDependent reports whether v's value over constant operands depends on the run's sizes, so
// that folding it at the bound would fix the bound's answer: any op but an elementwise one or a
// view over an operand with symbolic sizes (a sum over a splat's symbolic rows is the splat
// times the rows; a mean's count is such a sum). Elementwise ops and views of splats stay splats
// at every size, and a symbolic constant is always a splat.
func sizeDependent(v *ir.Value) bool {
	for _, a := range v.Args {
		if a.Type.Sym != nil {
			return ops.ClassOf(v.Op) != ops.Elementwise && v.Op != "select" && !isView(v.Op)
		}
	}
	return false
}
