package compiler

import (
	"fmt"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// A batched product may have a symbolic free dim on the right (N): q·kᵀ written by hand,
// [b, t, d]·[b, seq, d]ᵀ → [b, t, seq], with t = seq in a self-attention both free dims
// symbolic. Its contraction (d) may be static. codegen/ptx's GEMM takes N at the run from the
// dims (the keys' copies, the column tiles and checks past it) and stores the result
// contiguous at the run's sizes, its row stride N at the run (symcontract_rhs.go there). The
// result's rows are then batch·M·N (every dim up to its last symbolic one), which an
// elementwise epilogue keeps; like a symbolic M's, the epilogue reads static tensors only.

// oneFreeDim reports why a product whose operands have sizes ls and rs cannot run with its
// symbolic free dims: a side whose free dims are symbolic has more than one (the template takes
// M and N at the run as one dim each, the result [batch..., M, N]); "" when it can.
func oneFreeDim(dot *ir.Value, ls, rs []sym.Expr, format func(*ir.Value) string) string {
	at := dot.Attrs
	for i, s := range [][]sym.Expr{ls, rs} {
		batch, contract := [][]int{at.Ints("lhs_batch"), at.Ints("rhs_batch")}[i], [][]int{at.Ints("lhs_contract"), at.Ints("rhs_contract")}[i]
		free := len(s) - len(batch) - len(contract)
		if f := plan.SymFree(s, batch, contract); !isConst(f) && free != 1 {
			return fmt.Sprintf("%s has a symbolic free dim (%s) over %d dims of its %s operand; a batched product runs at symbolic sizes with one free dim on each side", format(dot), f, free, [2]string{"left", "right"}[i])
		}
	}
	return ""
}

// resultRows is the rows of a batched product's result [batch, M, N] whose batch has rows
// rows: rows·M·N with a symbolic N, rows·M with a symbolic M, else rows.
func resultRows(rows, m, n sym.Expr) sym.Expr {
	switch {
	case !isConst(n):
		return sym.Mul(sym.Mul(rows, m), n)
	case !isConst(m):
		return sym.Mul(rows, m)
	}
	return rows
}
