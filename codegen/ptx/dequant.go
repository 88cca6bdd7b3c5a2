package ptx

import (
	"github.com/gcomp/gcomp/codegen/gemv"
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

// quantWeightOf is the GEMV template's vector read of a dequantized weight: w[N, K] =
// dequantize(q, scale[, zero]) with axis 1 (each column's K contiguous, docs/ops.md's layout
// for a linear layer) whose q is a buffer view with rows of whole 16-byte vectors. Each of a
// column's 8 threads then loads 16 bytes of q at a time (16 int8 or 32 int4 values), unpacks
// them in registers and dequantizes them with its group's scale and zero point, loaded once per
// vector: a vector must not straddle a group (group a multiple of 16 or 32). Per-channel int8
// stored [K, N] has a vector read of its own (quantColumnsOf); other quantized weights (odd
// sizes, int4 or groups in the [K, N] order) are read element by element.
//
// The weight may also be an f32 dequantize cast to dot's 16-bit dtype (autocast's bf16 weight):
// the f32 product rounded by mul.rn.f32 and then by the cast, as the two ops do (out).
func quantWeightOf(dot *ir.Value, p gemv.Plan) (gemvWeight, bool) {
	dq := dot.Args[1]
	out := dq.Type.DType
	if dq.Op == "cast" && dq.Args[0].Op == ops.DequantizeOp && dq.Args[0].Type.DType == ir.F32 {
		dq = dq.Args[0]
	}
	rc := dot.Attrs.Ints("rhs_contract")
	if dq.Op != ops.DequantizeOp || dq.Type.Shape.Rank() != 2 || len(dot.Attrs.Ints("rhs_batch")) != 0 ||
		len(rc) != 1 || rc[0] != dq.Attrs.Int("axis", -1) {
		return gemvWeight{}, false
	}
	l, err := layoutOf(dq.Args[0], nil, rc)
	if err != nil || l.view != nil {
		return gemvWeight{}, false
	}
	if rc[0] == 0 {
		w, ok := quantColumnsOf(dq, l, p)
		w.out = out
		return w, ok
	}
	if l.kSt != 1 {
		return gemvWeight{}, false
	}
	v := 16 * 8 / dq.Attrs.Int("bits", 8) // w elements per 16 bytes of q
	ok := l.off%16 == 0 && (p.N == 1 || l.freeSt%16 == 0) && p.K%v == 0 && dq.Attrs.Int("group", 0)%v == 0 && p.KPer%v == 0
	return gemvWeight{kContig: true, v: v, l: l, quant: dq, out: out}, ok
}

// quantVector loads the 16 bytes of w.quant's q holding w[col, kk:kk+v] with one 128-bit load
// and dequantizes each value as dequantize does: the integer field minus the zero point,
// exactly in f32, times the group's scale, rounded once to the scale's dtype.
func (gn *gen) quantVector(w gemvWeight, kk, col, colOff string) ([]val, error) {
	a, e := gn.a, gn.e
	dq := w.quant
	nbits, group := dq.Attrs.Int("bits", 8), dq.Attrs.Int("group", 1)
	words := make([]string, 4)
	for i := range words {
		words[i] = e.b.reg(rU32)
	}
	ad := gn.addr(gn.ptr[w.l.v], a.add(a.div(kk, 8/nbits), colOff), 1)
	e.b.ins("ld.global.v4.b32", "{"+joinRegs(words)+"}", ad)
	at := []string{col, a.div(kk, group)}
	sv, err := gn.eval(dq.Args[1], newIndexCoords(dq.Args[1].Type.Shape, at))
	if err != nil {
		return nil, err
	}
	if dq.Type.DType == ir.F16 {
		return gn.quantVectorF16(dq, words, sv, at)
	}
	scale := e.reg(e.cast(sv, ir.F32))
	// The integers become floats without a conversion instruction (I2F issues at a quarter of
	// the FP32 rate): a field u < 2²³ or'ed into the bits of 2²³ is the float 2²³ + u, and
	// subtracting 2²³ + zero (one conversion per vector) leaves u − zero exactly. An i8 field
	// is flipped to u = q + 128 first, and 128 more subtracted.
	bias := 1 << 23
	signed := dq.Args[0].Type.DType == ir.I8
	if signed {
		bias += 128
	}
	zmagic, err := gn.biasedZero(dq, at, bias)
	if err != nil {
		return nil, err
	}
	var vs []val
	for _, wd := range words {
		for j := 0; j < 32/nbits; j++ {
			u := e.b.reg(rU32)
			e.b.ins("bfe.u32", u, wd, imm(j*nbits), imm(nbits))
			if signed {
				e.b.ins("xor.b32", u, u, "128")
			}
			e.b.ins("or.b32", u, u, "0x4B000000")
			f := e.b.reg(rF32)
			e.b.ins("mov.b32", f, u)
			e.b.ins("sub.f32", f, f, zmagic)
			e.b.ins("mul.rn.f32", f, f, scale)
			vs = append(vs, e.cast(val{ir.F32, f}, w.out))
		}
	}
	return vs, nil
}

// quantVectorF16 dequantizes a vector for f16 scales two values at a time, in f16x2 registers
// (FasterTransformer's trick): lop3 puts two fields u into the mantissas of two 1024s (f16
// 0x6400: 1024 + u is exact for u < 1024), sub.f16x2 of 1024 + zero leaves u − zero exactly,
// and mul.rn.f16x2 by the scale rounds the product once to f16, as dequantize does: 1.5
// instructions per value instead of a conversion (I2F, quarter rate), a multiply and a
// rounding each. Halves hold fields 16 bits apart: for 4 bits, word >> 4s gives k = s and s + 4
// of the word's 8; for 8 bits, word >> 8s gives bytes s and s + 2.
func (gn *gen) quantVectorF16(dq *ir.Value, words []string, sv val, at []string) ([]val, error) {
	e := gn.e
	nbits := dq.Attrs.Int("bits", 8)
	bias := 1024
	signed := dq.Args[0].Type.DType == ir.I8
	if signed {
		bias += 128 // fields flipped to q + 128
	}
	half := func(f32 string) string {
		h := e.b.reg(rB16)
		e.b.ins("cvt.rn.f16.f32", h, f32)
		p := e.b.reg(rU32)
		e.b.ins("mov.b32", p, "{"+h+", "+h+"}")
		return p
	}
	scale := half(e.reg(sv)) // an f16 value: exact
	zf, err := gn.biasedZero(dq, at, bias)
	if err != nil {
		return nil, err
	}
	zero := half(zf) // at most 1024 + 128 + 255: exact
	mask := "0x000F000F"
	if nbits == 8 {
		mask = "0x00FF00FF"
	}
	per := 32 / nbits // values per word
	vs := make([]val, 4*per)
	for wi, wd := range words {
		if signed {
			e.b.ins("xor.b32", wd, wd, "0x80808080")
		}
		for s := 0; s < per/2; s++ {
			t := wd
			if s > 0 {
				t = e.b.reg(rU32)
				e.b.ins("shr.u32", t, wd, imm(s*nbits))
			}
			p := e.b.reg(rU32)
			e.b.ins("lop3.b32", p, t, mask, "0x64006400", "0xEA") // (t & mask) | 0x64006400
			e.b.ins("sub.rn.f16x2", p, p, zero)
			e.b.ins("mul.rn.f16x2", p, p, scale)
			lo, hi := e.b.reg(rB16), e.b.reg(rB16)
			e.b.ins("mov.b32", "{"+lo+", "+hi+"}", p)
			vs[wi*per+s] = e.widenHalf(ir.F16, lo)
			vs[wi*per+s+per/2] = e.widenHalf(ir.F16, hi)
		}
	}
	return vs, nil
}

// quantLHS returns, for the quantized vector read, a loader of row m's x[m, kk:kk+v] by 128-bit
// loads where the lhs is a buffer view whose k is contiguous and whose rows start on 16 bytes:
// a vector of 32 int4 weights meets 32 values of x, which element loads would fetch one by one
// with an address each. It returns nil (read x element by element) otherwise.
func (gn *gen) quantLHS(dot *ir.Value, w gemvWeight, p gemv.Plan) func(m int, kk string) []val {
	if w.quant == nil || w.v == 1 {
		return nil
	}
	lhs := dot.Args[0]
	d := lhs.Type.DType
	l, err := layoutOf(lhs, dot.Attrs.Ints("lhs_batch"), dot.Attrs.Ints("lhs_contract"))
	per := 16 / d.Size() // elements per 16 bytes
	if err != nil || l.view != nil || l.kSt != 1 || len(l.batchStrides) != 0 || l.off%per != 0 ||
		p.M > 1 && l.freeSt%per != 0 || w.v%per != 0 {
		return nil
	}
	a, e := gn.a, gn.e
	return func(m int, kk string) []val {
		var xs []val
		for i := 0; i < w.v; i += per {
			ad := gn.addr(gn.ptr[l.v], a.add(kk, imm(l.off+m*l.freeSt+i)), d.Size())
			regs := make([]string, 4)
			for r := range regs {
				regs[r] = e.b.reg(rU32)
			}
			e.b.ins("ld.global.v4.b32", "{"+joinRegs(regs)+"}", ad)
			for _, r := range regs {
				if d == ir.F32 {
					xs = append(xs, val{ir.F32, r})
					continue
				}
				lo, hi := e.b.reg(rB16), e.b.reg(rB16)
				e.b.ins("mov.b32", "{"+lo+", "+hi+"}", r)
				xs = append(xs, e.widenHalf(d, lo), e.widenHalf(d, hi))
			}
		}
		return xs
	}
}

// biasedZero is bias + the zero point of the group at coordinates at of dequantize dq, in an
// f32 register (exact: both are small integers).
func (gn *gen) biasedZero(dq *ir.Value, at []string, bias int) (string, error) {
	e := gn.e
	r := e.b.reg(rF32)
	if len(dq.Args) < 3 {
		e.b.ins("mov.f32", r, immF32(float64(bias+int(ops.DequantizeZero(dq.Attrs.Int("bits", 8))))))
		return r, nil
	}
	zv, err := gn.eval(dq.Args[2], newIndexCoords(dq.Args[2].Type.Shape, at))
	if err != nil {
		return "", err
	}
	e.b.ins("cvt.rn.f32.s32", r, e.reg(zv))
	e.b.ins("add.f32", r, r, immF32(float64(bias)))
	return r, nil
}

// quantColumnsOf is the vector read of a per-channel int8 weight stored [K, N] (axis 0: an
// ONNX MatMul's weight under a per-column DequantizeLinear): 16 columns per 128-bit load, each
// column's scale and zero point loaded once before the k loop (quantColumnPrologue). Groups
// along K and packed int4 in this order are read element by element.
func quantColumnsOf(dq *ir.Value, l operandLayout, p gemv.Plan) (gemvWeight, bool) {
	ok := dq.Attrs.Int("bits", 0) == 8 && dq.Attrs.Int("group", 0) == p.K && l.freeSt == 1 &&
		l.off%16 == 0 && p.N%16 == 0 && (p.K == 1 || l.kSt%16 == 0)
	return gemvWeight{v: 16, l: l, quant: dq}, ok
}

// quantColumnPrologue loads, for the thread's 16 columns from col, each column's f32 scale and
// 2²³ + 128 + zero (see quantVector).
func (gn *gen) quantColumnPrologue(w gemvWeight, col string) ([][2]string, error) {
	dq := w.quant
	cs := make([][2]string, w.v)
	for j := range cs {
		at := []string{"0", gn.a.add(col, imm(j))}
		sv, err := gn.eval(dq.Args[1], newIndexCoords(dq.Args[1].Type.Shape, at))
		if err != nil {
			return nil, err
		}
		bias := 1 << 23
		if dq.Args[0].Type.DType == ir.I8 {
			bias += 128
		}
		z, err := gn.biasedZero(dq, at, bias)
		if err != nil {
			return nil, err
		}
		cs[j] = [2]string{gn.e.reg(gn.e.cast(sv, ir.F32)), z}
	}
	return cs, nil
}

// quantColumns loads the 16 bytes of q holding w[kk, col:col+16] and dequantizes them with the
// columns' scales and zeros cs, as quantVector does one at a time.
func (gn *gen) quantColumns(w gemvWeight, kk, colOff string, cs [][2]string) []val {
	a, e := gn.a, gn.e
	dq := w.quant
	words := make([]string, 4)
	for i := range words {
		words[i] = e.b.reg(rU32)
	}
	e.b.ins("ld.global.v4.b32", "{"+joinRegs(words)+"}", gn.addr(gn.ptr[w.l.v], a.mad(kk, w.l.kSt, colOff), 1))
	vs := make([]val, w.v)
	for j := range vs {
		u := e.b.reg(rU32)
		e.b.ins("bfe.u32", u, words[j/4], imm(8*(j%4)), "8")
		if dq.Args[0].Type.DType == ir.I8 {
			e.b.ins("xor.b32", u, u, "128")
		}
		e.b.ins("or.b32", u, u, "0x4B000000")
		f := e.b.reg(rF32)
		e.b.ins("mov.b32", f, u)
		e.b.ins("sub.f32", f, f, cs[j][1])
		e.b.ins("mul.rn.f32", f, f, cs[j][0])
		vs[j] = e.cast(val{ir.F32, f}, w.out)
	}
	return vs
}
