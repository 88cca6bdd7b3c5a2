package plan

import (
	"github.com/gcomp/gcomp/codegen/splitkv"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// AttnWarps is the attention template's warps per block, one query row each.
const AttnWarps = 4

// AttentionGradKeys is how many keys a block of the dk/dv template takes (a warp per key).
const AttentionGradKeys = AttnWarps

// attnSharedBytes bounds the two tiles' shared memory (under the 48 KB of static shared memory).
const attnSharedBytes = 40 << 10

// AttentionPlan is the attention template's tiling, shared with any other producer.
type AttentionPlan struct {
	Op                     *ir.Value // the attention op
	B, H, KVH, L, S, E, Ev int
	Keys                   int // keys per shared-memory tile
	RowTiles               int // blocks per (batch, head)
	Grid, Block            [3]int
}

// PlanAttention tiles the kernel's attention op; ok is false when the kernel has none.
func PlanAttention(g *ir.Graph) (p AttentionPlan, ok bool) {
	for _, v := range live(g) {
		if v.Op == ops.AttentionOp {
			p.Op, ok = v, true
		}
	}
	if !ok {
		return p, false
	}
	return PlanAttentionOp(p.Op, p.Op.Args[2].Type.Shape[3]), true
}

// PlanAttentionOp tiles an op with attention's operands (attention, attention_lse,
// attention_grad) whose rows carry ev value columns (0: the rows' statistics alone).
func PlanAttentionOp(op *ir.Value, ev int) (p AttentionPlan) {
	q, k := op.Args[0].Type.Shape, op.Args[1].Type.Shape
	p.Op = op
	p.B, p.H, p.L, p.E = q[0], q[1], q[2], q[3]
	p.KVH, p.S, p.Ev = k[1], k[2], ev
	p.Keys = max(1, min(32, attnSharedBytes/(4*max(1, p.E+p.Ev))))
	p.RowTiles = ceilDiv(p.L, AttnWarps)
	p.Grid = [3]int{max(1, p.B*p.H*p.RowTiles), 1, 1}
	p.Block = [3]int{32 * AttnWarps, 1, 1}
	return p
}

// AttentionAppends reports whether kernel graph g's attention op appends rows to a cache (the
// template codegen/nvvm borrows).
func AttentionAppends(g *ir.Graph) bool {
	p, ok := PlanAttention(g)
	return ok && splitkv.AppendedRows(p.Op) > 0
}

// BackwardAttention returns the kernel's attention_grad or attention_lse op, which the backward
// templates compute; ok is false when the kernel has none, or an attention op (whose template
// writes the attention_lse of its operands beside its result: forwardLSE).
func BackwardAttention(g *ir.Graph) (op *ir.Value, ok bool) {
	for _, v := range live(g) {
		switch v.Op {
		case ops.AttentionOp:
			return nil, false
		case ops.AttentionGradOp, ops.AttentionLSEOp:
			op, ok = v, true
		}
	}
	return op, ok
}

// AttentionTileVector is how many elements of dtype d a K or V operand of n columns (offset off,
// strides per dim) loads into a shared tile at once, in both producers: 16 bytes' worth when a
// row's columns are contiguous and every offset and stride keeps 16-byte alignment (buffers are
// 16-byte aligned), else 1.
func AttentionTileVector(d ir.DType, n, off int, strides []int) int {
	v := 16 / d.Size()
	if n%v != 0 || strides[3] != 1 || off%v != 0 {
		return 1
	}
	for _, st := range strides[:3] {
		if st%v != 0 {
			return 1
		}
	}
	return v
}
