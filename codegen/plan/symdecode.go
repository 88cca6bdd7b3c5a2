package plan

import (
	"github.com/gcomp/gcomp/codegen/splitkv"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// SymDecodeBatch returns the split-KV plan of attention op at symbolic sizes and its batch's
// expression when its only symbolic size is a batch leading every operand, the result and an
// appended cache's rows, each read at constant strides and offset: codegen/ptx's split-KV
// decoding over a symbolic batch (symattn_decode.go) takes it; false otherwise.
func SymDecodeBatch(op *ir.Value, sizes map[*ir.Value][]sym.Expr) (splitkv.Plan, sym.Expr, bool) {
	sp, ok := splitkv.OfAnyBatch(op)
	if !ok || sizes == nil {
		return splitkv.Plan{}, sym.Expr{}, false
	}
	batch := SymSizes(op.Args[0], sizes)[0]
	if _, c := batch.IsConst(); c {
		return splitkv.Plan{}, sym.Expr{}, false
	}
	vals := append([]*ir.Value{op}, op.Args...)
	for i := 1; i <= 2; i++ {
		if u, ok := splitkv.Appended(op, i); ok {
			vals = append(vals, u.Args...)
		}
	}
	for _, v := range vals {
		if !batchLeads(v, sizes, batch) {
			return splitkv.Plan{}, sym.Expr{}, false
		}
	}
	return sp, batch, true
}

// batchLeads reports whether v's sizes are static but for a leading batch (or a broadcast 1
// there), and v reads its buffer at constant strides and offset: the bound's.
func batchLeads(v *ir.Value, sizes map[*ir.Value][]sym.Expr, batch sym.Expr) bool {
	constant := func(e sym.Expr) bool { _, ok := e.IsConst(); return ok }
	for d, e := range SymSizes(v, sizes) {
		if !constant(e) && (d > 0 || !e.Equal(batch)) {
			return false
		}
	}
	_, off, st, ok := SymStridedView(v, sizes)
	if !ok || !constant(off) {
		return false
	}
	for _, e := range st {
		if !constant(e) {
			return false
		}
	}
	return true
}
