package qmma

import (
	"slices"

	"github.com/gcomp/gcomp/codegen/gemv"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// Fits returns the dequantize that dot's tensor-core GEMM reads as its weight: dot is an
// unbatched dot_general of f16 or bf16 operands, contracting dim 1 of a weight w[N, K] that is
//
//   - dequantize(q, scale[, zero]) {axis=1} of dot's dtype (f16 or bf16 scales): (q − z)·s is
//     exact in f32 and one rounding to the 16-bit dtype gives the op's value, or
//   - cast(dequantize(...) f32) to dot's dtype: the f32 product rounded by mul.rn.f32, then
//     once more to the 16-bit dtype, as the two ops do;
//
// with groups of a multiple of 16 along K (a k16 slab of the mma lies within one group) or
// one group per row, N and K not zero (an empty weight has no scales to read), whose operands are not views (the kernel reads them from their buffers
// as they lie), and which the GEMV template does not take (gemv.Fits: at most 8 rows).
func Fits(dot *ir.Value) (*ir.Value, bool) {
	if dot.Op != "dot_general" || len(dot.Args) != 2 {
		return nil, false
	}
	dt := dot.Args[0].Type.DType
	if dt != ir.F16 && dt != ir.BF16 || dot.Type.DType != dt || dot.Args[1].Type.DType != dt {
		return nil, false
	}
	if len(dot.Attrs.Ints("lhs_batch")) != 0 || len(dot.Attrs.Ints("rhs_batch")) != 0 ||
		!slices.Equal(dot.Attrs.Ints("rhs_contract"), []int{1}) || len(dot.Attrs.Ints("lhs_contract")) != 1 {
		return nil, false
	}
	dq := dot.Args[1]
	if dq.Op == "cast" {
		dq = dq.Args[0]
		if dq.Type.DType != ir.F32 {
			return nil, false
		}
	}
	if dq.Op != ops.DequantizeOp || dq.Type.Shape.Rank() != 2 || dq.Attrs.Int("axis", -1) != 1 {
		return nil, false
	}
	if b := dq.Attrs.Int("bits", 0); b != 4 && b != 8 {
		return nil, false
	}
	k, group := dq.Type.Shape[1], dq.Attrs.Int("group", 0)
	if k == 0 || dq.Type.Shape[0] == 0 || group != k && (group <= 0 || group%16 != 0) {
		return nil, false
	}
	for _, a := range dq.Args {
		switch a.Op {
		case "transpose", "slice", "broadcast_in_dim", "reshape":
			return nil, false
		}
	}
	if _, ok := gemv.Fits(dot); ok {
		return nil, false
	}
	return dq, true
}
