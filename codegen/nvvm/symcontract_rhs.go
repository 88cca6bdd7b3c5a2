package nvvm

import "github.com/llir/llvm/ir/value"

// A batched product with a symbolic free dim on the right, as codegen/ptx's symcontract_rhs.go:
// q·kᵀ written by hand, [b, t, d]·[b, seq, d]ᵀ → [b, t, seq] (N is seq; with t = seq both free
// dims are symbolic). N at the run, evaluated from the dims (contractPrologue), bounds the right
// operand's copies (zero fill past it: freeBelow), the epilogue's column checks and the column
// tiles (grid.x stays the bound's; a tile starting at or past N exits), and it is the result's
// row stride (outLin). Stores go element by element: a group of four columns could straddle the
// run's row end (symContract clears ColGroups). K may be static (q·kᵀ) or symbolic.

// nBelow is the bound a GEMM column is compared with (col < bound) to lie below N − d: N at
// the run's sizes less d when it is symbolic, else the immediate.
func (mm *gemm) nBelow(d int) value.Value {
	if mm.symN == nil {
		return ci(mm.p.N - d)
	}
	return mm.kg.sub(mm.symN, ci(d))
}

// outLin is the result's element index of row, column col of batch element bz: the result is
// [batch..., M, N] contiguous, at the run's M and N where they are symbolic.
func (mm *gemm) outLin(bz, row, col value.Value) value.Value {
	kg := mm.kg
	r := kg.add(mm.outRows(bz), row)
	if mm.symN == nil {
		return kg.add(kg.mul(r, mm.p.N), col)
	}
	return kg.add(kg.b.NewMul(r, mm.symN), col)
}
