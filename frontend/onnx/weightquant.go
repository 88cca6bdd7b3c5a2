package onnx

import (
	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// Weight-only int8: a DequantizeLinear of a 2-D int8 or uint8 initializer with a per-tensor or
// per-axis scale, whose result only MatMul and Gemm read as their weight, becomes gcomp's
// dequantize op (docs/ops.md) with the other axis quantized per channel (group = its size).
// The passes keep it beside the product, so the weight stays int8 on the device and a decode
// product reads its int8 bytes; decomposed into casts and multiplies, the dequantization of a
// constant would run at bind time and every run would read its f32 result.

// productWeights lists the values every consumer of which is a MatMul or Gemm reading it as
// input B (and that are not graph outputs).
func productWeights(gp *onnxpb.GraphProto) map[string]bool {
	return onlyReadAs(gp, func(np *onnxpb.NodeProto, i int) bool {
		return (np.GetOpType() == "MatMul" || np.GetOpType() == "Gemm") && i == 1
	})
}

// onlyReadAs lists the values that are no graph output and that every node reading them reads
// as an input of which use(node, input index) holds.
func onlyReadAs(gp *onnxpb.GraphProto, use func(np *onnxpb.NodeProto, i int) bool) map[string]bool {
	m := map[string]bool{}
	other := map[string]bool{}
	for _, np := range gp.GetNode() {
		for i, in := range np.GetInput() {
			if use(np, i) {
				m[in] = true
			} else {
				other[in] = true
			}
		}
	}
	for _, o := range gp.GetOutput() {
		other[o.GetName()] = true
	}
	for name := range other {
		delete(m, name)
	}
	return m
}

// weightDequantize converts this DequantizeLinear to a dequantize op if it dequantizes a
// product's weight (see above); ok is false where the decomposition applies. bs is the opset-21
// block size (0: per tensor or per axis), its scale's shape already checked (blockAxis).
func (n *node) weightDequantize(x, scale, zp *val, bs int) (w *val, ok bool, err error) {
	out := n.p.GetOutput()
	if len(out) != 1 || !n.productWeights[out[0]] || x.param == "" || len(x.t.Shape) != 2 ||
		x.t.DType != ir.I8 && x.t.DType != ir.U8 || scale.t.DType == ir.F64 || zp != nil && zp.t.DType != x.t.DType {
		return nil, false, nil
	}
	var q int           // the op's quantized axis (the contracted one for per-axis scales)
	var sshape ir.Shape // the op's scales' shape
	args := []*val{x, scale}
	if bs > 0 {
		if q, err = n.blockAxis(scale, x, bs); err != nil || x.t.Shape[q]%bs != 0 {
			return nil, false, err // blocks that do not divide the axis: the decomposition
		}
		sshape = scale.t.Shape
		if zp != nil {
			args = append(args, zp)
		}
	} else {
		a := 1 // the scale's axis; a per-tensor scale is taken per row
		if len(scale.t.Shape) != 0 {
			if a, err = axis(n.attrInt("axis", 1), 2); err != nil {
				return nil, false, err
			}
		}
		q = 1 - a
		sshape = x.t.Shape.Clone()
		sshape[q] = 1
		perChannel := func(s *val) (*val, bool) {
			switch {
			case len(s.t.Shape) == 0 || s.t.Shape.Equal(ir.Shape{1}):
				r, err := n.broadcastTo(n.reshape(s, ir.Shape{}), sshape)
				return r, err == nil
			case len(s.t.Shape) == 1 && s.t.Shape[0] == x.t.Shape[a]:
				return n.reshape(s, sshape), true
			}
			return nil, false
		}
		if args[1], ok = perChannel(scale); !ok {
			return nil, false, nil
		}
		if zp != nil {
			z, ok := perChannel(zp)
			if !ok {
				return nil, false, nil
			}
			args = append(args, z)
		}
		bs = x.t.Shape[q]
	}
	if !is4(x) {
		w, err = n.op("dequantize", ir.Attrs{"bits": 8, "group": bs, "axis": q}, args...)
		return w, err == nil, err
	}
	if args, ok, err = n.packed4Args(x, zp, args, q, sshape); !ok || err != nil {
		return nil, false, err
	}
	w, err = n.op("dequantize", ir.Attrs{"bits": 4, "group": bs, "axis": q}, args...)
	return w, err == nil, err
}

// packed4Args turns the operands of a 4-bit weight's dequantize (x a uint4 or int4 initializer,
// its values read as u8 or i8) into the op's: the values as unsigned nibbles u (int4's v as
// v + 8) packed two a byte along the op's axis q (element k in byte k/2's low nibble for even
// k), and the zero points unpacked as u8 at the scales' shape sshape, shifted alike; none for
// int4 without a zero point (the op's default 8 is int4's 0), zeros for uint4 without one
// (ONNX's default 0). ok is false when q's size is odd or the zero point is not an initializer.
func (n *node) packed4Args(x, zp *val, args []*val, q int, sshape ir.Shape) ([]*val, bool, error) {
	if x.t.Shape[q]%2 != 0 {
		return nil, false, nil
	}
	shift := int64(0)
	if x.t.DType == ir.I8 {
		shift = 8
	}
	v, err := x.w.c, error(nil)
	if v == nil { // not kept: a weight is converted once, here
		if v, err = n.src.decodeWeight(x.w.p); err != nil {
			return nil, false, err
		}
	}
	rows, cols := x.t.Shape[0], x.t.Shape[1]
	ps := x.t.Shape.Clone()
	ps[q] /= 2
	p := tensor.New(ir.Type{DType: ir.U8, Shape: ps})
	for i := range rows {
		for j := range cols {
			k, at := j, i*ps[1]+j/2 // q = 1: pairs along the row
			if q == 0 {
				k, at = i, i/2*ps[1]+j
			}
			p.I[at] |= (v.I[i*cols+j] + shift) << (4 * (k % 2))
		}
	}
	packed := []*val{n.constParam(x.param+"_packed", p), args[1]}
	switch {
	case zp != nil:
		zv, err := n.constValue(zp)
		if err != nil || zv == nil {
			return nil, false, err
		}
		z := tensor.New(ir.Type{DType: ir.U8, Shape: sshape.Clone()})
		for i := range z.I {
			j := i // blocked, or per axis: sshape is [1, N] or [N, 1]
			if zv.Len() != z.Len() {
				j = 0 // one for the tensor
			}
			z.I[i] = zv.I[j] + shift
		}
		packed = append(packed, n.constParam(x.param+"_zero", z))
	case shift == 0:
		packed = append(packed, n.constParam(x.param+"_zero", tensor.New(ir.Type{DType: ir.U8, Shape: sshape.Clone()})))
	}
	return packed, true, nil
}

// constParam is a parameter import computed, holding t.
func (n *node) constParam(name string, t *tensor.Tensor) *val {
	return &val{t: t.Type, w: &weight{t: t.Type, c: t}, param: n.paramName(name)}
}
