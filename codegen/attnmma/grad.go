package attnmma

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// GradKeys is how many keys a block of the tensor-core dk/dv template owns (16 per warp); it
// stages GradRows query rows at a time.
const (
	GradKeys = 64
	GradRows = 32
)

// FitsGrad reports whether the tensor-core dk/dv template computes attention_grad op v: the
// gradient of k or v reading the rows' LSE, f16/bf16, mask none or causal, no bias, head dims
// multiples of 16 up to 64 (the warp's K and V fragments and both accumulators stay in
// registers), at least one batch entry, KV head and key, q and do read with contiguous rows.
func FitsGrad(v *ir.Value) bool {
	if v.Op != ops.AttentionGradOp || len(v.Args) < 6 || !v.Attrs.Bool("lse", false) {
		return false
	}
	switch v.Attrs.String("wrt", "") {
	case "k", "v":
	default:
		return false
	}
	d := v.Args[0].Type.DType
	if d != ir.F16 && d != ir.BF16 || v.Attrs.Bool("additive", false) {
		return false
	}
	switch v.Attrs.String("mask", "") {
	case ops.MaskNone, ops.MaskCausal:
	default:
		return false
	}
	q, k, val := v.Args[0].Type.Shape, v.Args[1].Type.Shape, v.Args[2].Type.Shape
	if len(q) != 4 || len(k) != 4 || len(val) != 4 || q[0] == 0 || k[1] == 0 || k[2] == 0 {
		return false
	}
	for _, e := range []int{q[3], val[3]} {
		if e == 0 || e%16 != 0 || e > 64 {
			return false
		}
	}
	_, do := ops.AttentionGradOperands(v)
	for _, a := range []*ir.Value{v.Args[0], v.Args[do]} {
		if _, _, st, ok := ops.StridedView(a); !ok || st[3] != 1 {
			return false
		}
	}
	return true
}

// GradBlocks is the tensor-core dk/dv template's grid for an op FitsGrad takes: a block per
// GradKeys keys of each (batch entry, KV head).
func GradBlocks(v *ir.Value) int {
	k := v.Args[1].Type.Shape
	return k[0] * k[1] * ((k[2] + GradKeys - 1) / GradKeys)
}
