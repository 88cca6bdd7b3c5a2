package onnx

import (
	"fmt"
	"strings"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
)

// Linear quantization (ONNX opsets 10, 13 and, for DequantizeLinear, 21's blocked scales): compositions of casts, rounding, clamps and the
// float or integer contractions.

func init() {
	converters["QuantizeLinear"] = convQuantize
	converters["DequantizeLinear"] = convDequantize
	converters["DynamicQuantizeLinear"] = convDynamicQuantize
	converters["MatMulInteger"] = convMatMulInteger
	converters["ConvInteger"] = convConvInteger
	for _, op := range []string{"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "MatMulInteger", "ConvInteger"} {
		delete(refused, op)
	}
}

// perAxis broadcasts a scale or zero point (a scalar, or 1-D along axis) to x's shape.
func (n *node) perAxis(s, x *val) (*val, error) {
	if len(s.t.Shape) == 0 || s.t.Shape.NumElements() == 1 && len(s.t.Shape) == 1 && x.t.Shape[min(1, len(x.t.Shape)-1)] != 1 {
		return n.broadcastLike(n.reshape(s, ir.Shape{}), x.t)
	}
	if len(s.t.Shape) != 1 {
		return nil, fmt.Errorf("scale %s of %s: per-axis quantization wants a scalar or a 1-D scale (blocked quantization wants block_size, opset 21)", s.t, x.t)
	}
	a, err := axis(n.attrInt("axis", 1), len(x.t.Shape))
	if err != nil {
		return nil, err
	}
	if s.t.Shape[0] != x.t.Shape[a] {
		return nil, fmt.Errorf("scale %s does not fit axis %d of %s", s.t, a, x.t)
	}
	return n.opWant("broadcast_in_dim", ir.Attrs{"shape": []int(x.t.Shape.Clone()), "dims": []int{a}}, x.t.Sym, s)
}

// saturate rounds x half to even, clamps it to d's range and converts.
func (n *node) saturate(x *val, d ir.DType) *val {
	lo, hi := 0.0, 255.0
	if d == ir.I8 {
		lo, hi = -128, 127
	}
	r := n.roundEven(x)
	r = n.bin("min", n.bin("max", r, n.splat(r, lo)), n.splat(r, hi))
	return n.cast(r, d)
}

func convQuantize(n *node) ([]*val, error) {
	if err := n.inputs(2, 3); err != nil {
		return nil, err
	}
	x, scale := n.in[0], n.in[1]
	if !x.t.DType.IsFloat() || !scale.t.DType.IsFloat() {
		return nil, fmt.Errorf("QuantizeLinear of %s with scale %s", x.t, scale.t)
	}
	d := ir.U8
	zp := n.arg(2)
	if zp != nil {
		d = zp.t.DType
	}
	if d != ir.U8 && d != ir.I8 || is4(zp) {
		return nil, unsupportedf("quantizing to %s is not supported (supported: uint8, int8)", zpType(zp, d))
	}
	if q, ok, err := n.quantizedWeight(x, scale, zp, d); ok || err != nil {
		return []*val{q}, err
	}
	s, err := n.perAxis(n.cast(scale, x.t.DType), x)
	if err != nil {
		return nil, err
	}
	y := n.bin("div", x, s)
	if zp != nil {
		z, err := n.perAxis(zp, x)
		if err != nil {
			return nil, err
		}
		y = n.roundEven(y)
		y = n.bin("add", y, n.cast(z, x.t.DType))
	}
	return []*val{n.saturate(y, d)}, nil
}

func convDequantize(n *node) ([]*val, error) {
	if err := n.inputs(2, 3); err != nil {
		return nil, err
	}
	x, scale := n.in[0], n.in[1]
	if !scale.t.DType.IsFloat() || x.t.DType.IsFloat() || x.t.DType == ir.Bool {
		return nil, fmt.Errorf("DequantizeLinear of %s with scale %s", x.t, scale.t)
	}
	bs := n.attrInt("block_size", 0)
	if bs < 0 {
		return nil, fmt.Errorf("block_size %d is negative", bs)
	}
	if zp := n.arg(2); zp != nil && is4(zp) != is4(x) {
		return nil, fmt.Errorf("the zero point (%s) and x (%s) differ in element type", zpType(zp, zp.t.DType), zpType(x, x.t.DType))
	}
	spread := func(s *val) (*val, error) { // a scale or zero point at x's shape
		if bs > 0 {
			return n.blocked(s, x, bs)
		}
		return n.perAxis(s, x)
	}
	if bs > 0 { // the shapes are checked before the weight's conversion looks at them
		for _, s := range []*val{scale, n.arg(2)} {
			if s == nil {
				continue
			}
			if _, err := n.blockAxis(s, x, bs); err != nil {
				return nil, err
			}
		}
	}
	if w, ok, err := n.weightDequantize(x, scale, n.arg(2), bs); ok || err != nil {
		return []*val{w}, err
	}
	f := n.cast(x, scale.t.DType)
	if zp := n.arg(2); zp != nil {
		z, err := spread(zp)
		if err != nil {
			return nil, err
		}
		f = n.bin("sub", f, n.cast(z, scale.t.DType))
	}
	s, err := spread(scale)
	if err != nil {
		return nil, err
	}
	return []*val{n.bin("mul", f, s)}, nil
}

// is4 reports whether v is a 4-bit initializer (its values read as u8 or i8).
func is4(v *val) bool { return v != nil && v.w != nil && v.w.p != nil && packed4(v.w.p) }

// zpType names a zero point's element type in messages: d, or the 4-bit type it was read from.
func zpType(zp *val, d ir.DType) string {
	if is4(zp) {
		return strings.ToLower(onnxpb.TensorProto_DataType(zp.w.p.GetDataType()).String())
	}
	return d.String()
}

// blockAxis checks a blocked scale or zero point s (opset 21) against x: s has x's rank, and
// along the axis attribute ⌈D/bs⌉ for x's D, x's size elsewhere. It returns the axis.
func (n *node) blockAxis(s, x *val, bs int) (int, error) {
	a, err := axis(n.attrInt("axis", 1), len(x.t.Shape))
	if err != nil {
		return 0, err
	}
	want := x.t.Shape.Clone()
	want[a] = (x.t.Shape[a] + bs - 1) / bs
	if !s.t.Shape.Equal(want) {
		return 0, fmt.Errorf("blocked quantization of %s%v in blocks of %d along axis %d wants scales and zero points of shape %v, not %s", zpType(x, x.t.DType), x.t.Shape, bs, a, want, s.t)
	}
	return a, nil
}

// blocked repeats each element of the blocked scale or zero point s bs times along the axis, cut
// to x's shape: element j of the axis reads s's ⌊j/bs⌋.
func (n *node) blocked(s, x *val, bs int) (*val, error) {
	a, err := n.blockAxis(s, x, bs)
	if err != nil {
		return nil, err
	}
	r, blocks := len(x.t.Shape), s.t.Shape[a]
	wide := append(append(s.t.Shape[:a+1].Clone(), bs), s.t.Shape[a+1:]...) // [..., S, bs, ...]
	dims := make([]int, 0, r)
	for i := range r + 1 {
		if i != a+1 {
			dims = append(dims, i)
		}
	}
	e, err := n.op("broadcast_in_dim", ir.Attrs{"shape": []int(wide), "dims": dims}, s)
	if err != nil {
		return nil, err
	}
	full := s.t.Shape.Clone()
	full[a] = blocks * bs
	e = n.reshape(e, full)
	if full[a] != x.t.Shape[a] {
		e = n.sliceAxis(e, a, 0, x.t.Shape[a], 1)
	}
	return e, nil
}

func convDynamicQuantize(n *node) ([]*val, error) {
	if err := n.inputs(1, 1); err != nil {
		return nil, err
	}
	x := n.in[0]
	if x.t.DType != ir.F32 {
		return nil, fmt.Errorf("DynamicQuantizeLinear of %s", x.t)
	}
	all := allAxes(len(x.t.Shape))
	zero := n.splat(x, 0)
	lo := n.bin("min", n.reduce("reduce_min", x, all, false), zero)
	hi := n.bin("max", n.reduce("reduce_max", x, all, false), zero)
	scale := n.bin("div", n.bin("sub", hi, lo), n.splat(x, 255))
	zp := n.saturate(n.bin("sub", zero, n.bin("div", lo, scale)), ir.U8)
	sb := must(n.broadcastLike(scale, x.t))
	zb := must(n.broadcastLike(n.cast(zp, ir.F32), x.t))
	y := n.saturate(n.bin("add", n.roundEven(n.bin("div", x, sb)), zb), ir.U8)
	return []*val{y, scale, zp}, nil
}

// centered returns x - zp in i32 (zp a scalar or, for b of MatMulInteger, per column).
func (n *node) centered(x, zp *val, perAxis int) (*val, error) {
	if x.t.DType != ir.U8 && x.t.DType != ir.I8 {
		return nil, fmt.Errorf("%s operand is %s, want uint8 or int8", n.p.GetOpType(), x.t)
	}
	y := n.cast(x, ir.I32)
	if zp == nil {
		return y, nil
	}
	z := n.cast(zp, ir.I32)
	if z.t.Shape.NumElements() == 1 {
		z = n.reshape(z, ir.Shape{})
		return n.binary("sub", y, z)
	}
	if len(z.t.Shape) != 1 || perAxis < 0 || z.t.Shape[0] != x.t.Shape[perAxis] {
		return nil, unsupportedf("zero point %s is not supported for %s", zp.t, x.t)
	}
	zb, err := n.opWant("broadcast_in_dim", ir.Attrs{"shape": []int(x.t.Shape.Clone()), "dims": []int{perAxis}}, x.t.Sym, z)
	if err != nil {
		return nil, err
	}
	return n.binary("sub", y, zb)
}

func convMatMulInteger(n *node) ([]*val, error) {
	if err := n.inputs(2, 4); err != nil {
		return nil, err
	}
	a, err := n.centered(n.in[0], n.arg(2), len(n.in[0].t.Shape)-2)
	if err != nil {
		return nil, err
	}
	b, err := n.centered(n.in[1], n.arg(3), len(n.in[1].t.Shape)-1)
	if err != nil {
		return nil, err
	}
	return one(n.matmul(a, b))
}

func convConvInteger(n *node) ([]*val, error) {
	if err := n.inputs(2, 4); err != nil {
		return nil, err
	}
	x, err := n.centered(n.in[0], n.arg(2), -1)
	if err != nil {
		return nil, err
	}
	w, err := n.centered(n.in[1], n.arg(3), 0)
	if err != nil {
		return nil, err
	}
	// The convolution runs in f64, where these integer products and sums are exact.
	y, err := n.conv(n.cast(x, ir.F64), n.cast(w, ir.F64), nil)
	if err != nil {
		return nil, err
	}
	return []*val{n.cast(y, ir.I32)}, nil
}

func init() {
	converters["QLinearMatMul"] = convQLinear
	converters["QLinearConv"] = convQLinear
	delete(refused, "QLinearMatMul")
	delete(refused, "QLinearConv")
}

// convQLinear is the integer contraction of the centered operands (exact in i32, or in f64 for
// the convolution), rescaled by a_scale·b_scale/y_scale in f32, rounded half to even, shifted by
// y's zero point and saturated.
func convQLinear(n *node) ([]*val, error) {
	isConv := n.p.GetOpType() == "QLinearConv"
	hi := 8
	if isConv {
		hi = 9 // and an optional i32 bias
	}
	if err := n.inputs(8, hi); err != nil {
		return nil, err
	}
	a, as, azp, b, bs, bzp, ys, yzp := n.in[0], n.in[1], n.in[2], n.in[3], n.in[4], n.in[5], n.in[6], n.in[7]
	for _, s := range []*val{as, bs, ys} {
		if s.t.DType != ir.F32 || s.t.Shape.NumElements() != 1 {
			return nil, unsupportedf("%s with scale %s is not supported (supported: f32 scalars)", n.p.GetOpType(), s.t)
		}
	}
	if d := yzp.t.DType; d != ir.U8 && d != ir.I8 {
		return nil, fmt.Errorf("y_zero_point is %s, want uint8 or int8", d)
	}
	ac, err := n.centered(a, azp, -1)
	if err != nil {
		return nil, err
	}
	bc, err := n.centered(b, bzp, -1)
	if err != nil {
		return nil, err
	}
	var acc *val
	if isConv {
		y, err := n.conv(n.cast(ac, ir.F64), n.cast(bc, ir.F64), nil)
		if err != nil {
			return nil, err
		}
		acc = n.cast(y, ir.I32)
		if bias := n.arg(8); bias != nil {
			bb, err := n.channel(n.cast(bias, ir.I32), acc)
			if err != nil {
				return nil, err
			}
			acc = n.bin("add", acc, bb)
		}
	} else if acc, err = n.matmul(ac, bc); err != nil {
		return nil, err
	}
	scalarOf := func(v *val) *val { return n.reshape(v, ir.Shape{}) }
	m := n.bin("div", n.bin("mul", scalarOf(as), scalarOf(bs)), scalarOf(ys))
	y := must(n.binary("mul", n.cast(acc, ir.F32), m))
	y = n.roundEven(y)
	y = must(n.binary("add", y, n.cast(scalarOf(yzp), ir.F32)))
	return []*val{n.saturate(y, yzp.t.DType)}, nil
}
