package ptx

import (
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// Strides over symbolic sizes are codegen/plan's (symstride.go there), shared with codegen/nvvm.

// SymSizes is plan.SymSizes (compiler shares it).
func SymSizes(v *ir.Value, sizes map[*ir.Value][]sym.Expr) []sym.Expr { return plan.SymSizes(v, sizes) }

func symContiguous(s []sym.Expr) []sym.Expr { return plan.SymContiguous(s) }

func isOne(e sym.Expr) bool { return plan.IsOne(e) }

func symStridedView(v *ir.Value, sizes map[*ir.Value][]sym.Expr) (base *ir.Value, off sym.Expr, st []sym.Expr, ok bool) {
	return plan.SymStridedView(v, sizes)
}
