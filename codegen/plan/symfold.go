package plan

import (
	"fmt"
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

// FoldViewBatch reports why view, an operand of a batched GEMM whose K is the symbolic rows
// read through its views, does not run at symbolic sizes, or nil: its batch dims must be static
// (the rows are K), so the copier takes each batch coordinate from blockIdx.z as the static
// kernel does.
func FoldViewBatch(view *ir.Value, sizes map[*ir.Value][]sym.Expr, batchDims []int) error {
	s := SymSizes(view, sizes)
	for _, d := range batchDims {
		if _, ok := s[d].IsConst(); !ok {
			return fmt.Errorf("a batched GEMM whose K is the symbolic rows, read through a view with a symbolic batch dim (%s), does not run at symbolic sizes", s[d])
		}
	}
	return nil
}
