package ptx

import (
	"strconv"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// philox computes one element of philox_uniform: the Philox4x32-10 block of the element's
// counter (ten rounds of mul.hi/mul.lo and xors in 32-bit registers), the element's word of it,
// and (w >> 8)·2⁻²⁴, exactly as ops' reference does. Neighbouring elements recompute the same
// block; the rounds are a few dozen integer instructions, well under an element's memory time.
func (g *gen) philox(v *ir.Value, x *index) (val, error) {
	key, err := g.eval(v.Args[0], newIndexLin(ir.Shape{}, "0"))
	if err != nil {
		return val{}, err
	}
	b := g.e.b
	u32 := func(s string) string { // an operand in a register (mul.hi takes one immediate at most)
		r := b.reg(rU32)
		b.ins("mov.b32", r, s)
		return r
	}
	var k0, k1 string
	if n, err := strconv.ParseInt(key.r, 10, 64); err == nil {
		k0, k1 = u32(imm(int(uint32(n)))), u32(imm(int(uint32(uint64(n)>>32))))
	} else {
		k0, k1 = b.reg(rU32), b.reg(rU32)
		b.ins("mov.b64", "{"+k0+", "+k1+"}", key.r)
	}
	stream := uint64(v.Attrs.Int("stream", 0))
	lin := g.a.reg(x.getLin(g.a))
	c := [4]string{b.reg(rU32), u32("0"), u32(imm(int(uint32(stream)))), u32(imm(int(uint32(stream >> 32))))}
	b.ins("shr.u32", c[0], lin, "2")
	for r := range 10 {
		if r > 0 {
			b.ins("add.u32", k0, k0, imm(ops.PhiloxW0))
			b.ins("add.u32", k1, k1, imm(ops.PhiloxW1))
		}
		hi0, lo0, hi1, lo1 := b.reg(rU32), b.reg(rU32), b.reg(rU32), b.reg(rU32)
		b.ins("mul.hi.u32", hi0, c[0], imm(ops.PhiloxM0))
		b.ins("mul.lo.u32", lo0, c[0], imm(ops.PhiloxM0))
		b.ins("mul.hi.u32", hi1, c[2], imm(ops.PhiloxM1))
		b.ins("mul.lo.u32", lo1, c[2], imm(ops.PhiloxM1))
		n0, n2 := b.reg(rU32), b.reg(rU32)
		b.ins("xor.b32", n0, hi1, c[1])
		b.ins("xor.b32", n0, n0, k0)
		b.ins("xor.b32", n2, hi0, c[3])
		b.ins("xor.b32", n2, n2, k1)
		c = [4]string{n0, lo1, n2, lo0}
	}
	// The element's word: lane = lin mod 4 picks c[lane].
	lane := b.reg(rU32)
	b.ins("and.b32", lane, lin, "3")
	w := c[3]
	for j := 2; j >= 0; j-- {
		p, s := b.reg(rPred), b.reg(rU32)
		b.ins("setp.eq.u32", p, lane, imm(j))
		b.ins("selp.b32", s, c[j], w, p)
		w = s
	}
	f := b.reg(rF32)
	b.ins("shr.u32", w, w, "8")
	b.ins("cvt.rn.f32.u32", f, w)
	b.ins("mul.f32", f, f, immF32(0x1p-24))
	return val{ir.F32, f}, nil
}
