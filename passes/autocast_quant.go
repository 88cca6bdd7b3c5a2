package passes

import (
	"maps"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// Autocast's choice for a quantized weight: under f16, an f32 dequantize(q, s, z) that a
// contraction reads is not cast after it (cast(dequantize(q, s, z), f16), a kernel of its own
// per run) but dequantized in f16 with its scales cast once (dequantize(q, cast(s, f16), z)),
// which the GEMV and the quantized tensor-core GEMM read as integers. The two agree wherever the
// scales are f16 values, as every GPTQ/AWQ checkpoint's are (lm widens them to f32): (q − z)·s
// of a 9-bit integer and an 11-bit significand is exact in f32, so both round the exact
// product once to f16. For other f32 scales the rewrite rounds the scale first (at most one
// more rounding of the weight, the kind autocast makes by design), which is why it is
// autocast's choice rather than a simplify rule: those are exact for every input. Under bf16
// rounding the f16 scales to bf16 would change the weights, so the cast stays: the GEMV and the
// tensor-core GEMM read cast(dequantize) itself, computing the f32 product and rounding it as
// the cast does (exact for any scale).
func lowDequantize(a *ir.Value, dt ir.DType, low map[*ir.Value]*ir.Value, mk func(*ir.Value) *ir.Value) *ir.Value {
	if dt != ir.F16 || a.Op != ops.DequantizeOp || a.Type.DType != ir.F32 {
		return nil
	}
	s := a.Args[1]
	ls := low[s]
	if ls == nil {
		ls = mk(&ir.Value{Op: "cast", Type: ir.Type{DType: dt, Shape: s.Type.Shape.Clone()}, Attrs: ir.Attrs{"to": dt}, Args: []*ir.Value{s}, Pos: a.Pos})
		low[s] = ls
	}
	args := append([]*ir.Value{a.Args[0], ls}, a.Args[2:]...)
	return mk(&ir.Value{Op: ops.DequantizeOp, Type: ir.Type{DType: dt, Shape: a.Type.Shape.Clone()}, Attrs: maps.Clone(a.Attrs), Args: args, Pos: a.Pos})
}
