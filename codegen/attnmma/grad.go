package attnmma

import "github.com/gcomp/gcomp/ir"

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
	if !FitsGradWide(v) || v.Attrs.Bool("additive", false) {
		return false
	}
	return v.Args[0].Type.Shape[3] <= 64 && v.Args[2].Type.Shape[3] <= 64
}

// GradBlocks is the tensor-core dk/dv template's grid for an op FitsGrad takes: a block per
// GradKeys keys of each (batch entry, KV head).
func GradBlocks(v *ir.Value) int {
	k := v.Args[1].Type.Shape
	return k[0] * k[1] * ((k[2] + GradKeys - 1) / GradKeys)
}
