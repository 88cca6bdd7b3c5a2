package nvvm

import (
	irg "github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// dequantize evaluates element x of a dequantize as codegen/ptx does (docs/ops.md): the integer
// at x's position along the axis (a nibble of its byte for 4 bits) minus the group's zero
// point, converted exactly to f32, times the group's scale, rounded once to the result dtype.
func (kg *kgen) dequantize(v *irg.Value, x *index) (value.Value, error) {
	q, s := v.Args[0], v.Args[1]
	axis, group, nbits := v.Attrs.Int("axis", 0), v.Attrs.Int("group", 1), v.Attrs.Int("bits", 8)
	per := 8 / nbits
	c := make([]value.Value, v.Type.Shape.Rank())
	for d := range c {
		c[d] = kg.coord(x, d)
	}
	at := func(t *irg.Value, along value.Value) (value.Value, error) {
		r, err := kg.eval(t, newIndexCoords(t.Type.Shape, replaced(c, axis, along)))
		if err != nil {
			return nil, err
		}
		return kg.cast(t.Type.DType, r, irg.I32), nil // i8 sign-, u8 zero-extended
	}
	iv, err := at(q, kg.div(c[axis], per))
	if err != nil {
		return nil, err
	}
	if per == 2 {
		iv = kg.b.NewAnd(kg.b.NewLShr(iv, kg.mul(kg.rem(c[axis], 2), 4)), ci(15))
	}
	g0 := kg.div(c[axis], group)
	var zero value.Value = ci(int(ops.DequantizeZero(nbits)))
	if len(v.Args) == 3 {
		if zero, err = at(v.Args[2], g0); err != nil {
			return nil, err
		}
	}
	sv, err := kg.eval(s, newIndexCoords(s.Type.Shape, replaced(c, axis, g0)))
	if err != nil {
		return nil, err
	}
	f := kg.b.NewSIToFP(kg.b.NewSub(iv, zero), types.Float)
	p := kg.b.NewFMul(f, kg.cast(s.Type.DType, sv, irg.F32))
	return kg.cast(irg.F32, p, v.Type.DType), nil
}

func replaced(c []value.Value, d int, x value.Value) []value.Value {
	r := append([]value.Value(nil), c...)
	r[d] = x
	return r
}
