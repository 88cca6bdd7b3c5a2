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
// the run's sizes (its batch stride t·d). Its epilogue evaluates every value at the result
// element's coordinates and its linear index at the run's sizes: a static tensor (a bias over
// d) is read at the coordinates, a tensor of the result's own sizes (a residual added to
// scores·V, a mask added to q·kᵀ) at the linear index, which is its element's at the run. So a
// tensor at the run's sizes is read by elementwise ops at the result's sizes, or through a
// chain of views of it (a broadcast, a transpose, a reshape, a slice), read at its strides at the
// run (symcontract_bcast.go).

// freeEpilogue reports why kernel k, a product dot with M m and N n whose operands' views and the
// product are skip, cannot run at the run's M and N: a tensor of symbolic sizes its epilogue
// reads other than elementwise at the result's sizes; "" when M and N are static or it reads
// none so.
func freeEpilogue(k *passes.Kernel, skip map[*ir.Value]bool, types map[*ir.Value]ir.Type, dot *ir.Value, m, n sym.Expr, format func(*ir.Value) string) string {
	side, f := "M", m
	if isConst(m) {
		side, f = "N", n
	}
	if isConst(f) {
		return ""
	}
	for _, v := range k.Body.Values {
		if !skip[v] && buffer(v) && types[v].Sym != nil {
			if why := runSized(v, types, types[dot]); why != "" {
				return fmt.Sprintf("%s is read at the run's sizes beside a product with a symbolic %s (%s) %s, which the GEMM templates' epilogue does not index yet", format(v), side, f, why)
			}
		}
	}
	return ""
}

// runSized reports why the epilogue's tensor t, of symbolic sizes, is not read at the product's
// linear index at the run (result type res): t has other sizes than the result's; "" when it
// has the same. (Other views of t in the epilogue than those symcontract_bcast.go reads at the
// run's strides change its rows, which rowKernelViews refuses.)
func runSized(t *ir.Value, types map[*ir.Value]ir.Type, res ir.Type) string {
	if !sameSizes(types[t].Sym, res.Sym) {
		return "at other sizes than the product's " + res.String()
	}
	return ""
}

// sameSizes reports whether a and b are the same sizes at every run.
func sameSizes(a, b []sym.Expr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}
