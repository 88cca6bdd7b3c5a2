package plan

import (
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// FoldStrided reports whether operand a of a GEMM whose K is the symbolic rows, strided at the
// bound, keeps at the run's sizes the strides both producers' copies take (the bound's): its
// offset, each stride of its batch dims (each taken apart, from blockIdx.z) and the innermost
// stride of its free dims and of its contract dims (merged, as the GEMM's layout merges them)
// are constants.
func FoldStrided(a *ir.Value, sizes map[*ir.Value][]sym.Expr, batch, contract []int) bool {
	_, off, st, ok := SymStridedView(a, sizes)
	if _, c := off.IsConst(); !ok || !c {
		return false
	}
	for _, d := range batch {
		if _, c := st[d].IsConst(); !c && a.Type.Shape[d] != 1 {
			return false
		}
	}
	inner := func(in bool) bool {
		for d := len(st) - 1; d >= 0; d-- {
			if slices.Contains(contract, d) == in && !slices.Contains(batch, d) && a.Type.Shape[d] != 1 {
				_, c := st[d].IsConst()
				return c
			}
		}
		return true
	}
	return inner(true) && inner(false)
}

// FoldsSymbolicBatch reports whether dot, the product of a symbolic kernel whose values' sizes
// are sizes, folds the rows (its K leads with its left operand's leading axis) in a product
// batched over a symbolic dim (per-head weight gradients with the heads, or a batch beside
// them, symbolic). Such a fold is no static result: its result's rows are the batch. Both
// producers take it as a batched product contracting a symbolic dim (their symcontract.go):
// grid.z follows the run's batch (a block past it exits), the generic copier takes each batch,
// free and k coordinate with the strides of the run's sizes, and K at the run bounds the k loop.
func FoldsSymbolicBatch(dot *ir.Value, sizes map[*ir.Value][]sym.Expr) bool {
	if sizes == nil || !slices.Contains(dot.Attrs.Ints("lhs_contract"), 0) {
		return false
	}
	s := SymSizes(dot.Args[0], sizes)
	for _, d := range dot.Attrs.Ints("lhs_batch") {
		if _, ok := s[d].IsConst(); !ok {
			return true
		}
	}
	return false
}
