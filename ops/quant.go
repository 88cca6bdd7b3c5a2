package ops

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// DequantizeOp is the name of weight-only dequantization: integer weights (int8, or int4 packed
// two to a byte) with per-group scales and optional zero points, widened to the scales' float
// dtype. It stays an op of its own (rather than casts, subtractions and multiplies) so that the
// passes can leave it in the graph before a contraction and the GEMV template can read the
// packed integers, not a bind-time f32 copy of them.
const DequantizeOp = "dequantize"

func init() {
	register(&Op{Name: DequantizeOp, Arity: Variadic, Class: Other, Infer: inferDequantize, Eval: evalDequantize,
		Attrs: []AttrSpec{{"bits", AttrInt, false}, {"group", AttrInt, false}, {"axis", AttrInt, false}},
		Doc: "dequantize(q, scale[, zero]) {bits, group, axis}: w = (q − zero)·scale, w's dtype scale's (f32, f16 or " +
			"bf16). axis is w's quantized dim, of size K: each run of group consecutive elements along it shares one " +
			"scale and zero (group = K is per-channel; group must divide K). bits 8: q is i8 or u8 of w's shape. " +
			"bits 4: q is u8 with w's shape except K/2 along axis (K even): element k of the axis is byte k/2's low " +
			"nibble (bits 0–3) for even k, its high nibble for odd k, an unsigned value u in [0,15]. scale and zero " +
			"have w's shape with K/group along axis. zero has q's dtype (bits 4: u8, one value in [0,15] per byte, " +
			"unpacked). Without zero the zero point is 0 (bits 8) or 8 (bits 4: u − 8 in [−8,7], symmetric int4). " +
			"(q − zero)·scale is computed exactly and rounded once to scale's dtype (for f16 and bf16 the f32 product " +
			"is already exact); a NaN or ±inf scale propagates (0·inf = NaN). A linear layer's weight is stored [N, K] " +
			"(out, in) with axis 1, so each output channel's K values are contiguous: the order the GEMV template " +
			"streams (x·wᵀ, dot_general contracting dim 1 of both). GPTQ's int32 words (eight nibbles along K, element j in " +
			"bits 4j..4j+3, stored [K/8, N]) transposed to [N, K/8] are, as little-endian bytes, this layout."})
}

// dqSpec is a dequantize op's sizes, checked.
type dqSpec struct {
	w             ir.Shape // the result's shape
	axis, k       int      // the quantized dim and its size
	per, group    int      // elements per q element along axis (2 for bits 4), group size
	inner, outerK int      // elements after axis; K/group
	zero          bool
}

func dequantizeSpec(args []ir.Type, a ir.Attrs) (dqSpec, error) {
	var sp dqSpec
	if len(args) != 2 && len(args) != 3 {
		return sp, errf("takes q, scale and optionally zero, have %d operands", len(args))
	}
	q, s := args[0], args[1]
	sp.zero = len(args) == 3
	bits, group := a.Int("bits", 0), a.Int("group", 0)
	switch bits {
	case 8:
		if q.DType != ir.I8 && q.DType != ir.U8 {
			return sp, errf("bits 8 wants q of i8 or u8, have %s", q)
		}
		sp.per = 1
	case 4:
		if q.DType != ir.U8 {
			return sp, errf("bits 4 wants q of u8 (two 4-bit values per byte), have %s", q)
		}
		sp.per = 2
	default:
		return sp, errf("bits is %d, want 4 or 8", bits)
	}
	r := len(q.Shape)
	sp.axis = a.Int("axis", -1)
	if sp.axis < 0 || sp.axis >= r {
		return sp, errf("axis %d is outside q's %d dims (%s)", sp.axis, r, q)
	}
	if s.DType != ir.F32 && s.DType != ir.F16 && s.DType != ir.BF16 {
		return sp, errf("scale must be f32, f16 or bf16, have %s", s)
	}
	sp.w = q.Shape.Clone()
	sp.k = q.Shape[sp.axis] * sp.per
	sp.w[sp.axis] = sp.k
	if group < 1 || sp.k%group != 0 {
		return sp, errf("group %d does not divide the %d elements of axis %d (K); group K is per-channel", group, sp.k, sp.axis)
	}
	sp.group = group
	sp.outerK = sp.k / group
	want := sp.w.Clone()
	want[sp.axis] = sp.outerK
	if !s.Shape.Equal(want) {
		return sp, errf("scale must be %s%s (K/%d along axis %d), have %s", s.DType, want, group, sp.axis, s)
	}
	if sp.zero {
		if z := args[2]; z.DType != q.DType || !z.Shape.Equal(want) {
			return sp, errf("zero must be %s%s like q's dtype and scale's shape, have %s", q.DType, want, z)
		}
	}
	sp.inner = 1
	for _, n := range sp.w[sp.axis+1:] {
		sp.inner *= n
	}
	return sp, nil
}

func inferDequantize(args []ir.Type, a ir.Attrs) (ir.Type, error) {
	sp, err := dequantizeSpec(args, a)
	if err != nil {
		return ir.Type{}, err
	}
	return ir.Type{DType: args[1].DType, Shape: sp.w}, nil
}

// DequantizeZero is the zero point of a dequantize without the zero operand.
func DequantizeZero(bits int) int64 {
	if bits == 4 {
		return 8
	}
	return 0
}

func evalDequantize(args []*tensor.Tensor, a ir.Attrs, out ir.Type) (*tensor.Tensor, error) {
	types := make([]ir.Type, len(args))
	for i, t := range args {
		types[i] = t.Type
	}
	sp, err := dequantizeSpec(types, a)
	if err != nil {
		return nil, err
	}
	res := tensor.New(out)
	q, s := args[0].I, args[1].F
	z0 := DequantizeZero(a.Int("bits", 8))
	for i := range res.F {
		in, k := i%sp.inner, i/sp.inner%sp.k
		outer := i / (sp.inner * sp.k)
		qv := q[(outer*(sp.k/sp.per)+k/sp.per)*sp.inner+in]
		if sp.per == 2 {
			qv = qv >> (4 * (k % 2)) & 15
		}
		g := (outer*sp.outerK+k/sp.group)*sp.inner + in
		z := z0
		if sp.zero {
			z = args[2].I[g]
		}
		// (q − z) has at most 9 bits and scale at most 24: the float64 product is exact.
		res.F[i] = tensor.RoundFloat(out.DType, float64(qv-z)*s[g])
	}
	return res, nil
}
