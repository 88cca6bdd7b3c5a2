package plan

import (
	"github.com/gcomp/gcomp/codegen/splitkv"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
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

// SymDecodeLength returns the split-KV plan of attention op at symbolic sizes whose key length S
// is symbolic (a cache grown by concatenation: ONNX's past_key_values, K [b, h, past+1, d]),
// with its batch's and S's expressions: codegen/ptx's split-KV decoding over a symbolic cache
// length (symattn_decode_len.go) takes it. The heads, the query length and the head dims are
// static, K and V share S, and the op appends no cache (a cache appended to has a static
// length). The split is planned once for every length up to the bound's S
// (splitkv.OfAnyLength, over every batch up to the bound when the batch is symbolic too); false
// otherwise.
func SymDecodeLength(op *ir.Value, sizes map[*ir.Value][]sym.Expr) (sp splitkv.Plan, batch, length sym.Expr, ok bool) {
	if sizes == nil || op.Op != ops.AttentionOp || len(op.Args) < 3 || splitkv.AppendedRows(op) > 0 {
		return splitkv.Plan{}, batch, length, false
	}
	q, k, v := SymSizes(op.Args[0], sizes), SymSizes(op.Args[1], sizes), SymSizes(op.Args[2], sizes)
	if len(q) != 4 || len(k) != 4 || len(v) != 4 || isConst(k[2]) || !k[2].Equal(v[2]) {
		return splitkv.Plan{}, batch, length, false
	}
	for _, e := range []sym.Expr{q[1], q[2], q[3], k[1], k[3], v[1], v[3]} {
		if !isConst(e) {
			return splitkv.Plan{}, batch, length, false
		}
	}
	sp, ok = splitkv.OfAnyLength(op, !isConst(q[0]))
	return sp, q[0], k[2], ok
}

func isConst(e sym.Expr) bool { _, ok := e.IsConst(); return ok }
