package plan

import (
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// FoldStrided reports whether operand a of a GEMM whose K is the symbolic rows, strided at the
// bound, keeps at the run's sizes the strides both producers' copies take (the bound's): its
// offset and the innermost stride of its free dims and of its contract dims (merged, as the
// GEMM's layout merges them) are constants.
func FoldStrided(a *ir.Value, sizes map[*ir.Value][]sym.Expr, contract []int) bool {
	_, off, st, ok := SymStridedView(a, sizes)
	if _, c := off.IsConst(); !ok || !c {
		return false
	}
	inner := func(in bool) bool {
		for d := len(st) - 1; d >= 0; d-- {
			if slices.Contains(contract, d) == in && a.Type.Shape[d] != 1 {
				_, c := st[d].IsConst()
				return c
			}
		}
		return true
	}
	return inner(true) && inner(false)
}
