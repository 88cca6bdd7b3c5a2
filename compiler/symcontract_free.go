package compiler

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/passes"
)

// A batched product contracting a symbolic dim may have a symbolic M beside (the left operand's
// free dims): scores·V written by hand, [b, t, seq]·[b, seq, d] → [b, t, d], t = seq in a
// self-attention that attention formation did not catch. codegen/ptx's GEMM takes M at the run
// from the dims (copies, edge checks and row tiles past it) and stores the result contiguous at
// the run's sizes (its batch stride t·d). Its epilogue indexes other tensors by the result's
// coordinates at the bound's strides, so it may read static tensors only (a bias over d):
// a tensor at the run's sizes beside the product is refused.

// freeEpilogue reports why kernel k, a product with M m and N n whose operands' views and the
// product are skip, cannot run at the run's M and N: an input of symbolic sizes its epilogue
// reads; "" when M and N are static or the epilogue reads static tensors only.
func freeEpilogue(k *passes.Kernel, skip map[*ir.Value]bool, types map[*ir.Value]ir.Type, m, n sym.Expr, format func(*ir.Value) string) string {
	side, f := "M", m
	if isConst(m) {
		side, f = "N", n
	}
	if isConst(f) {
		return ""
	}
	for _, v := range k.Body.Values {
		if !skip[v] && buffer(v) && types[v].Sym != nil {
			return fmt.Sprintf("%s is read at the run's sizes beside a product with a symbolic %s (%s), which the GEMM templates' epilogue does not index yet", format(v), side, f)
		}
	}
	return ""
}
