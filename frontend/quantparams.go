package frontend

import "github.com/gcomp/gcomp/ir"

// QuantRule says how a parameter is stored quantized: nil keeps it a float parameter of type t
// (after WithParamDType); otherwise Param declares its integers and scales and returns their
// Dequantize (see WithQuantizedParams).
type QuantRule func(name string, t ir.Type) *Quant

// WithQuantizedParams stores the parameters rule picks as integers on the device: Param("weight")
// of a picked name NAME declares "NAME_q" (u8, two 4-bit values a byte along Axis for Bits 4),
// "NAME_scale" (t's dtype, one per Group elements along Axis) and "NAME_zero" (u8, unpacked) and
// returns Dequantize of the three, which the passes fuse into the GEMV that reads it. A model
// written against float weights (nn.Linear's Weight) thus runs a quantized checkpoint unchanged;
// what Param returns is then no parameter (SetInit refuses it).
func WithQuantizedParams(rule QuantRule) Option { return func(s *state) { s.quantRule = rule } }

// quantized declares the parts of the parameter full of type t if the graph's QuantRule picks it.
func (b *Builder) quantized(full string, t ir.Type) *Tensor {
	if b.st.quantRule == nil {
		return nil
	}
	q := b.st.quantRule(full, t)
	if q == nil {
		return nil
	}
	a := q.Axis
	if a < 0 || a >= len(t.Shape) || q.Group < 1 || t.Shape[a]%q.Group != 0 || q.Bits != 8 && q.Bits != 4 || q.Bits == 4 && t.Shape[a]%2 != 0 || q.Permuted && (len(t.Shape) != 2 || a != 1) {
		b.st.failf("parameter %s %s: cannot store it quantized as %d bits in groups of %d along axis %d", full, t, q.Bits, q.Group, q.Axis)
	}
	qs, ss := append([]int(nil), t.Shape...), append([]int(nil), t.Shape...)
	qs[a] = t.Shape[a] * q.Bits / 8
	ss[a] = t.Shape[a] / q.Group
	param := func(suffix string, t ir.Type) *Tensor {
		b.st.declare("parameter", full+suffix)
		return b.st.add(b.st.g.Param(full+suffix, t, Zeros().attrs.Clone()))
	}
	w := Dequantize(param("_q", ir.T(ir.U8, qs...)), param("_scale", ir.T(t.DType, ss...)), param("_zero", ir.T(ir.U8, ss...)), *q)
	if q.Permuted {
		w.perm = param("_perm", ir.T(ir.I32, t.Shape[a]))
	}
	return w
}
