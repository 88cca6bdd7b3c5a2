package onnx

import (
	"math"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// Fake-quantized weights: PyTorch exports a quantization-aware-trained layer's weight as
// QuantizeLinear(W float, scale, zero) → DequantizeLinear. Where W, the scale and the zero point
// are initializers and only DequantizeLinear reads the quantized value, import computes it now
// and gives it to DequantizeLinear as an int8 (or uint8) initializer: a product's weight then
// becomes the dequantize op (weightquant.go), so the device holds the integers, and no kernel
// quantizes W when the weights are bound. The values are those QuantizeLinear's decomposition
// computes (an f32 division, rounding half to even, the zero point, saturation).

// dequantizedOnly lists the values every consumer of which is a DequantizeLinear reading it as
// its input x (and that are not graph outputs).
func dequantizedOnly(gp *onnxpb.GraphProto) map[string]bool {
	return onlyReadAs(gp, func(np *onnxpb.NodeProto, i int) bool {
		return np.GetOpType() == "DequantizeLinear" && np.GetDomain() == "" && i == 0
	})
}

// quantizedWeight returns QuantizeLinear's result as an initializer where the comment above
// says so; ok is false where the decomposition applies.
func (n *node) quantizedWeight(x, scale, zp *val, d ir.DType) (q *val, ok bool, err error) {
	out := n.p.GetOutput()
	if len(out) != 1 || !n.dequantized[out[0]] || x.param == "" || x.t.DType != ir.F32 || scale.t.DType != ir.F32 {
		return nil, false, nil
	}
	sc, err := n.constValue(scale)
	if err != nil || sc == nil {
		return nil, false, err
	}
	var z *tensor.Tensor
	if zp != nil {
		if z, err = n.constValue(zp); err != nil || z == nil {
			return nil, false, err
		}
	}
	// the scale's (and zero point's) index of element i: all one, or along axis
	per := func(i int) int { return 0 }
	if sc.Len() != 1 || len(sc.Type.Shape) == 1 && len(x.t.Shape) > 1 && x.t.Shape[1] == 1 {
		a, err := axis(n.attrInt("axis", 1), len(x.t.Shape))
		if err != nil {
			return nil, false, err
		}
		if len(sc.Type.Shape) != 1 || sc.Type.Shape[0] != x.t.Shape[a] || z != nil && z.Len() != sc.Len() {
			return nil, false, nil // the decomposition reports it
		}
		stride := x.t.Shape[a+1:].NumElements()
		per = func(i int) int { return i / stride % x.t.Shape[a] }
	} else if z != nil && z.Len() != 1 {
		return nil, false, nil
	}
	w, err := n.src.decodeWeight(x.w.p)
	if x.w.c != nil {
		w, err = x.w.c, nil
	}
	if err != nil {
		return nil, false, err
	}
	lo, hi := 0.0, 255.0
	if d == ir.I8 {
		lo, hi = -128, 127
	}
	r := tensor.New(ir.Type{DType: d, Shape: x.t.Shape.Clone()})
	for i := range r.I {
		j := per(i)
		v := math.RoundToEven(float64(float32(w.F[i]) / float32(sc.F[j])))
		if z != nil {
			v += float64(z.I[j])
		}
		if math.IsNaN(v) {
			v = 0 // x/0 for x = 0: the cast of NaN (docs/ops.md)
		}
		r.I[i] = int64(math.Min(math.Max(v, lo), hi))
	}
	return n.constParam(x.param+"_quantized", r), true, nil
}

// constValue is v's value if import knows it (a folded constant or an initializer), else nil.
func (n *node) constValue(v *val) (*tensor.Tensor, error) {
	switch {
	case v.c != nil:
		return v.c, nil
	case v.w != nil:
		return n.src.value(v.w)
	}
	return nil, nil
}
