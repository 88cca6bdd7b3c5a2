package ptx

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// dequantize evaluates element x of a dequantize (docs/ops.md): the integer q at x's position
// along the axis divided by the values per byte, a nibble shifted out of its byte for 4 bits,
// minus the group's zero point, converted exactly to f32 and multiplied by the group's scale:
// one rounding, in mul.rn.f32 for f32 scales, in the conversion to f16/bf16 otherwise (the f32
// product of a 9-bit integer and a 16-bit float is exact).
func (g *gen) dequantize(v *ir.Value, x *index) (val, error) {
	a, e := g.a, g.e
	q, s := v.Args[0], v.Args[1]
	axis, group, nbits := v.Attrs.Int("axis", 0), v.Attrs.Int("group", 1), v.Attrs.Int("bits", 8)
	per := 8 / nbits
	c := make([]string, v.Type.Shape.Rank())
	for d := range c {
		c[d] = x.getCoord(a, d)
	}
	at := func(t *ir.Value, along string) (val, error) {
		tc := append([]string(nil), c...)
		tc[axis] = along
		return g.eval(t, newIndexCoords(t.Type.Shape, tc))
	}
	qv, err := at(q, a.div(c[axis], per))
	if err != nil {
		return val{}, err
	}
	iv := e.reg(qv) // i8 sign-extended, u8 zero-extended in a 32-bit register
	if per == 2 {
		iv = e.b.reg(rU32)
		e.b.ins("shr.u32", iv, e.reg(qv), a.reg(a.mul(a.rem(c[axis], 2), 4)))
		e.b.ins("and.b32", iv, iv, "15")
	}
	group0 := a.div(c[axis], group)
	zero := imm(int(ops.DequantizeZero(nbits)))
	if len(v.Args) == 3 {
		zv, err := at(v.Args[2], group0)
		if err != nil {
			return val{}, err
		}
		zero = e.reg(zv)
	}
	sv, err := at(s, group0)
	if err != nil {
		return val{}, err
	}
	diff := e.b.reg(rU32)
	e.b.ins("sub.s32", diff, iv, zero)
	f := e.op(ir.F32, "cvt.rn.f32.s32", diff)
	p := e.op(ir.F32, "mul.rn.f32", f.r, e.reg(e.cast(sv, ir.F32)))
	return e.cast(p, v.Type.DType), nil
}
