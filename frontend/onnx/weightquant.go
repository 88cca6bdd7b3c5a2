package onnx

import (
	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
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
// product's weight (see above); ok is false where the decomposition applies.
func (n *node) weightDequantize(x, scale, zp *val) (w *val, ok bool, err error) {
	out := n.p.GetOutput()
	if len(out) != 1 || !n.productWeights[out[0]] || x.param == "" || len(x.t.Shape) != 2 ||
		x.t.DType != ir.I8 && x.t.DType != ir.U8 || scale.t.DType == ir.F64 || zp != nil && zp.t.DType != x.t.DType {
		return nil, false, nil
	}
	a := 1 // the scale's axis; a per-tensor scale is taken per row
	if len(scale.t.Shape) != 0 {
		if a, err = axis(n.attrInt("axis", 1), 2); err != nil {
			return nil, false, err
		}
	}
	q := 1 - a // the quantized (contracted) axis
	shape := x.t.Shape.Clone()
	shape[q] = 1
	perChannel := func(s *val) (*val, bool) {
		switch {
		case len(s.t.Shape) == 0 || s.t.Shape.Equal(ir.Shape{1}):
			r, err := n.broadcastTo(n.reshape(s, ir.Shape{}), shape)
			return r, err == nil
		case len(s.t.Shape) == 1 && s.t.Shape[0] == x.t.Shape[a]:
			return n.reshape(s, shape), true
		}
		return nil, false
	}
	args := []*val{x, nil}
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
	w, err = n.op("dequantize", ir.Attrs{"bits": 8, "group": x.t.Shape[q], "axis": q}, args...)
	return w, err == nil, err
}
