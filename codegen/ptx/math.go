package ptx

import (
	"fmt"
	"math"

	"github.com/gcomp/gcomp/ir"
)

// Transcendental functions. f32 exp uses the hardware ex2.approx after an exact range reduction,
// and f32 (f16, bf16) sigmoid, tanh and erf are built on it in f32 registers; everything else is
// computed in f64 by the routines below (polynomials after range reduction) and rounded once to
// the dtype. docs/codegen.md lists each op's error bound.

// fd emits an f64 instruction into a fresh register.
func (e *emitter) fd(opcode string, args ...string) string {
	return e.op(ir.F64, opcode, args...).r
}

func (e *emitter) pred(opcode string, args ...string) string {
	p := e.b.reg(rPred)
	e.b.ins(opcode, append([]string{p}, args...)...)
	return p
}

func d64(f float64) string { return immF64(f) }

func (e *emitter) transcendental(op string, x val) (val, error) {
	if x.dt != ir.F64 {
		switch op {
		case "exp":
			return e.round(e.expF32(e.reg(x), x.dt)), nil
		case "sigmoid":
			return e.round(val{x.dt, e.sigmoidF32(e.reg(x))}), nil
		case "tanh":
			return e.round(val{x.dt, e.tanhF32(e.reg(x))}), nil
		case "erf":
			return e.round(val{x.dt, e.erfF32(e.reg(x))}), nil
		}
	}
	in := e.reg(x)
	if x.dt != ir.F64 {
		in = e.fd("cvt.f64.f32", in)
	}
	var r string
	switch op {
	case "rsqrt":
		r = e.fd("div.rn.f64", d64(1), e.fd("sqrt.rn.f64", in))
	case "exp":
		r = e.exp64(in)
	case "log":
		r = e.log64(in)
	case "sigmoid":
		r = e.sigmoid64(in)
	case "tanh":
		r = e.tanh64(in)
	case "erf":
		r = e.erf64(in)
	case "sin", "cos":
		r = e.sincos64(op, in, x.dt != ir.F64)
	default:
		return val{}, fmt.Errorf("%s is not supported by the PTX code generator", op)
	}
	if x.dt == ir.F64 {
		return val{ir.F64, r}, nil
	}
	return e.floatToFloat(val{ir.F64, r}, x.dt), nil
}

// expF32: e^x = 2^k · 2^(r·log2 e) with k = rint(x·log2 e) and r = x − k·ln 2 computed exactly in
// two fma steps (Cody–Waite), so ex2.approx only sees |arg| ≤ 0.5 and the scaling is exact.
func (e *emitter) expF32(x string, d ir.DType) val {
	f := func(opcode string, args ...string) string { return e.op(ir.F32, opcode, args...).r }
	xc := f("min.f32", f("max.f32", x, immF32(-104)), immF32(89)) // NaN handled at the end
	k := f("cvt.rni.f32.f32", f("mul.rn.f32", xc, immF32(math.Log2E)))
	r := f("fma.rn.f32", k, immF32(-0.693145751953125), xc)
	r = f("fma.rn.f32", k, immF32(-1.428606765330187e-06), r)
	p := f("ex2.approx.f32", f("mul.rn.f32", r, immF32(math.Log2E)))
	// 2^k as two factors, each a normal f32, so overflow and subnormal results round once.
	ki := e.b.reg(rU32)
	e.b.ins("cvt.rzi.s32.f32", ki, k)
	k1 := e.b.reg(rU32)
	e.b.ins("shr.s32", k1, ki, "1")
	k2 := e.b.reg(rU32)
	e.b.ins("sub.s32", k2, ki, k1)
	s1, s2 := e.pow2f32(k1), e.pow2f32(k2)
	y := f("mul.rn.f32", f("mul.rn.f32", p, s1), s2)
	nan := e.pred("setp.nan.f32", x, x)
	return val{d, f("selp.f32", x, y, nan)}
}

// sigmoidF32 is the reference's stable form in f32: 1/(1+t) for x ≥ 0 and t/(1+t) for x < 0,
// t = e^-|x| from expF32. f32 registers only (no f64: half the registers, full-rate arithmetic).
func (e *emitter) sigmoidF32(x string) string {
	f := func(opcode string, args ...string) string { return e.op(ir.F32, opcode, args...).r }
	t := e.expF32(f("neg.f32", f("abs.f32", x)), ir.F32).r
	den := f("add.rn.f32", t, immF32(1))
	pos := f("div.rn.f32", immF32(1), den)
	neg := f("div.rn.f32", t, den)
	return f("selp.f32", neg, pos, e.pred("setp.lt.f32", x, immF32(0))) // NaN: pos, which is NaN
}

// tanhCoef are the Taylor coefficients of tanh x / x in powers of x² from x²: −1/3, 2/15, …,
// through x^21 (truncation below 2^-29 relative for |x| < 0.625).
var tanhCoef = []float64{-1.0 / 3, 2.0 / 15, -17.0 / 315, 62.0 / 2835, -1382.0 / 155925, 21844.0 / 6081075,
	-929569.0 / 638512875, 6404582.0 / 10854718875, -443861162.0 / 1856156927625, 18888466084.0 / 194896477400625}

// tanhF32 in f32: the odd Taylor polynomial x + x³·P(x²) for |x| < 0.625, else
// 1 − 2/(e^(2|x|) + 1) (the subtraction loses less than a bit there since tanh ≥ 0.55);
// |x| is clamped to 10, beyond which tanh rounds to ±1; the result takes x's sign.
func (e *emitter) tanhF32(x string) string {
	f := func(opcode string, args ...string) string { return e.op(ir.F32, opcode, args...).r }
	s := f("mul.rn.f32", x, x)
	p := immF32(tanhCoef[len(tanhCoef)-1])
	for i := len(tanhCoef) - 2; i >= 0; i-- {
		p = f("fma.rn.f32", p, s, immF32(tanhCoef[i]))
	}
	small := f("fma.rn.f32", f("mul.rn.f32", x, s), p, x)
	ax := f("min.f32", f("abs.f32", x), immF32(10))
	ex := e.expF32(f("add.rn.f32", ax, ax), ir.F32).r
	large := f("sub.rn.f32", immF32(1), f("div.rn.f32", immF32(2), f("add.rn.f32", ex, immF32(1))))
	y := f("selp.f32", small, large, e.pred("setp.lt.f32", ax, immF32(0.625)))
	// tanh is odd: the sign is x's on both paths, including tanh(−0) = −0, which the polynomial
	// loses (−0 + (−0·0)·P rounds to +0).
	y = f("copysign.f32", x, y)
	return f("selp.f32", x, y, e.pred("setp.nan.f32", x, x))
}

// erfSmallCoef and erfLargeCoef are the f32 erf's minimax polynomials, fitted and checked by
// scripts/fit_erf.py: erf(x) = x + x·P(x²) below erfSplit (P absolute error 4e-10) and
// erf(|x|) = 1 − e^Q(|x|) above (Q fits log erfc to 1.2e-8 absolute, so erfc is right to 1.2e-8
// relative and the subtraction from 1, with erfc ≤ 0.19, loses under half an ulp).
var (
	erfSmallCoef = []float64{0.12837916612625122, -0.37612634897232056, 0.11283701658248901, -0.026859702542424202, 0.0052017164416611195, -0.0008149807690642774, 8.397803321713582e-05}
	erfLargeCoef = []float64{0.0002942764840554446, -1.130131483078003, -0.6319953203201294, -0.10992518812417984, 0.026335541158914566, -0.004730281885713339, 0.0005907152080908418, -4.535457992460579e-05, 1.6024897604438593e-06}
)

const erfSplit = 0.921875

// erfF32 in f32 registers (GELU's epilogue ran ~4700 f64 instructions before): the two
// polynomials above, both evaluated and one selected; |x| is clamped to 4, beyond which erf
// rounds to ±1. ≤ 1 ulp against the correctly rounded erf (scripts/fit_erf.py --check,
// TestMathAccuracy).
func (e *emitter) erfF32(x string) string {
	f := func(opcode string, args ...string) string { return e.op(ir.F32, opcode, args...).r }
	horner := func(coef []float64, t string) string {
		p := immF32(coef[len(coef)-1])
		for i := len(coef) - 2; i >= 0; i-- {
			p = f("fma.rn.f32", p, t, immF32(coef[i]))
		}
		return p
	}
	small := f("fma.rn.f32", x, horner(erfSmallCoef, f("mul.rn.f32", x, x)), x)
	ax := f("abs.f32", x)
	q := horner(erfLargeCoef, f("min.f32", ax, immF32(4)))
	large := f("copysign.f32", x, f("sub.rn.f32", immF32(1), e.expF32(q, ir.F32).r))
	y := f("selp.f32", small, large, e.pred("setp.lt.f32", ax, immF32(erfSplit)))
	return f("selp.f32", x, y, e.pred("setp.nan.f32", x, x))
}

func (e *emitter) pow2f32(k string) string {
	b := e.b.reg(rU32)
	e.b.ins("add.s32", b, k, "127")
	e.b.ins("shl.b32", b, b, "23")
	return e.op(ir.F32, "mov.b32", b).r
}

func (e *emitter) pow2f64(k string) string {
	b := e.b.reg(rU64)
	e.b.ins("cvt.s64.s32", b, k)
	e.b.ins("add.s64", b, b, "1023")
	e.b.ins("shl.b64", b, b, "52")
	return e.fd("mov.b64", b)
}

// expParts reduces x (finite, clamped) to k and r with x = k·ln 2 + r, |r| ≤ ln2/2, and returns
// k (s32) and the polynomial q(r) = e^r − 1 (degree 13 Taylor: truncation < 2^-56 relative).
func (e *emitter) expParts(x string) (k string, q string) {
	kf := e.fd("cvt.rni.f64.f64", e.fd("mul.rn.f64", x, d64(math.Log2E)))
	// fdlibm's split of ln 2: ln2Hi has 32 low zero bits, so k·ln2Hi is exact.
	r := e.fd("fma.rn.f64", kf, d64(-6.93147180369123816490e-01), x)
	r = e.fd("fma.rn.f64", kf, d64(-1.90821492927058770002e-10), r)
	// q = r(1 + r/2(1 + r/3(... (1 + r/13)))) evaluated inside out.
	acc := d64(1)
	for n := 13; n >= 2; n-- {
		t := e.fd("mul.rn.f64", r, d64(1/float64(n)))
		acc = e.fd("fma.rn.f64", t, acc, d64(1))
	}
	q = e.fd("mul.rn.f64", r, acc)
	k = e.b.reg(rU32)
	e.b.ins("cvt.rzi.s32.f64", k, kf)
	return k, q
}

// scale2 multiplies y by 2^k in two exact steps (one rounding at the end).
func (e *emitter) scale2(y, k string) string {
	k1 := e.b.reg(rU32)
	e.b.ins("shr.s32", k1, k, "1")
	k2 := e.b.reg(rU32)
	e.b.ins("sub.s32", k2, k, k1)
	return e.fd("mul.rn.f64", e.fd("mul.rn.f64", y, e.pow2f64(k1)), e.pow2f64(k2))
}

// exp64: e^x to within about 1 ulp of f64.
func (e *emitter) exp64(x string) string {
	xc := e.fd("min.f64", e.fd("max.f64", x, d64(-746)), d64(710))
	k, q := e.expParts(xc)
	y := e.scale2(e.fd("add.rn.f64", q, d64(1)), k)
	return e.fd("selp.f64", x, y, e.pred("setp.nan.f64", x, x))
}

// expm1_64: e^x − 1 without cancellation for small x (q itself when k = 0).
func (e *emitter) expm1_64(x string) string {
	xc := e.fd("min.f64", e.fd("max.f64", x, d64(-746)), d64(710))
	k, q := e.expParts(xc)
	big := e.fd("sub.rn.f64", e.scale2(e.fd("add.rn.f64", q, d64(1)), k), d64(1))
	k0 := e.pred("setp.eq.s32", k, "0")
	return e.fd("selp.f64", q, big, k0)
}

// log64: x = m·2^n with m in [√½, √2), log m = 2·atanh(f), f = (m−1)/(m+1), as an odd series in f
// to f^23 (|f| ≤ 0.172: truncation < 2^-60).
func (e *emitter) log64(x string) string {
	// Subnormals: scale by 2^54 first.
	sub := e.pred("setp.lt.f64", x, d64(0x1p-1022))
	xs := e.fd("selp.f64", e.fd("mul.rn.f64", x, d64(0x1p54)), x, sub)
	bitsR := e.b.reg(rU64)
	e.b.ins("mov.b64", bitsR, xs)
	ex := e.b.reg(rU64)
	e.b.ins("shr.u64", ex, bitsR, "52")
	n := e.b.reg(rU32)
	e.b.ins("cvt.u32.u64", n, ex)
	e.b.ins("and.b32", n, n, "2047")
	e.b.ins("sub.s32", n, n, "1023")
	adj := e.b.reg(rU32)
	e.b.ins("selp.b32", adj, "54", "0", sub)
	e.b.ins("sub.s32", n, n, adj)
	mb := e.b.reg(rU64)
	e.b.ins("and.b64", mb, bitsR, "0x000FFFFFFFFFFFFF")
	e.b.ins("or.b64", mb, mb, "0x3FF0000000000000")
	m := e.fd("mov.b64", mb) // [1, 2)
	hi := e.pred("setp.gt.f64", m, d64(math.Sqrt2))
	m = e.fd("selp.f64", e.fd("mul.rn.f64", m, d64(0.5)), m, hi)
	inc := e.b.reg(rU32)
	e.b.ins("selp.b32", inc, "1", "0", hi)
	e.b.ins("add.s32", n, n, inc)
	f := e.fd("div.rn.f64", e.fd("sub.rn.f64", m, d64(1)), e.fd("add.rn.f64", m, d64(1)))
	s := e.fd("mul.rn.f64", f, f)
	p := d64(1 / 23.0)
	for k := 21; k >= 1; k -= 2 {
		p = e.fd("fma.rn.f64", p, s, d64(1/float64(k)))
	}
	lm := e.fd("mul.rn.f64", e.fd("add.rn.f64", f, f), p)
	nf := e.fd("cvt.rn.f64.s32", n)
	y := e.fd("fma.rn.f64", nf, d64(1.90821492927058770002e-10), lm)
	y = e.fd("fma.rn.f64", nf, d64(6.93147180369123816490e-01), y)
	// Special values: log(±0) = -inf, log(x<0) = NaN, log(+inf) = +inf, NaN stays.
	y = e.fd("selp.f64", d64(math.Inf(1)), y, e.pred("setp.eq.f64", x, d64(math.Inf(1))))
	y = e.fd("selp.f64", d64(math.Inf(-1)), y, e.pred("setp.eq.f64", x, d64(0)))
	y = e.fd("selp.f64", "0d7FF8000000000000", y, e.pred("setp.lt.f64", x, d64(0)))
	return e.fd("selp.f64", x, y, e.pred("setp.nan.f64", x, x))
}

// sigmoid64 = 1/(1+e^-x) for x ≥ 0 and e^x/(1+e^x) for x < 0, as the reference computes it.
func (e *emitter) sigmoid64(x string) string {
	ax := e.fd("abs.f64", x)
	t := e.exp64(e.fd("neg.f64", ax))
	den := e.fd("add.rn.f64", t, d64(1))
	pos := e.fd("div.rn.f64", d64(1), den)
	neg := e.fd("div.rn.f64", t, den)
	return e.fd("selp.f64", neg, pos, e.pred("setp.lt.f64", x, d64(0))) // NaN: pos, which is NaN
}

// tanh64 = sign(x)·m/(m+2) with m = e^(2|x|) − 1; ±1 beyond |x| = 20.
func (e *emitter) tanh64(x string) string {
	ax := e.fd("abs.f64", x)
	m := e.expm1_64(e.fd("min.f64", e.fd("add.rn.f64", ax, ax), d64(40)))
	t := e.fd("div.rn.f64", m, e.fd("add.rn.f64", m, d64(2)))
	t = e.fd("selp.f64", d64(1), t, e.pred("setp.gt.f64", ax, d64(20)))
	y := e.fd("copysign.f64", x, t)
	return e.fd("selp.f64", x, y, e.pred("setp.nan.f64", x, x))
}

// erf64: the Maclaurin series for |x| < 2.5 (45 terms), the continued fraction of erfc beyond
// (60 terms), ±1 beyond |x| = 6.
func (e *emitter) erf64(x string) string {
	ax := e.fd("abs.f64", x)
	small := e.pred("setp.lt.f64", ax, d64(2.5))
	out := e.b.reg(rF64)
	lLarge, lDone := e.b.label("erf_cf"), e.b.label("erf_done")
	e.b.braIf("!"+small, lLarge)
	{
		// sum of t_n/(2n+1), t_0 = x, t_{n+1} = −t_n·x²/(n+1)
		x2 := e.fd("mul.rn.f64", x, x)
		t := e.fd("mov.f64", x)
		sum := e.fd("mov.f64", x)
		n := e.b.reg(rF64)
		e.b.ins("mov.f64", n, d64(1))
		loop := e.b.label("erf_series")
		e.b.place(loop)
		q := e.fd("div.rn.f64", x2, n)
		e.b.ins("mul.rn.f64", t, t, q)
		e.b.ins("neg.f64", t, t)
		den := e.fd("fma.rn.f64", n, d64(2), d64(1))
		e.b.ins("add.rn.f64", sum, sum, e.fd("div.rn.f64", t, den))
		e.b.ins("add.rn.f64", n, n, d64(1))
		e.b.braIf(e.pred("setp.le.f64", n, d64(45)), loop)
		e.b.ins("mul.rn.f64", out, sum, d64(2/math.SqrtPi))
		e.b.bra(lDone)
	}
	e.b.place(lLarge)
	{
		// erfc(a) = e^(−a²)/√π / (a + ½/(a + 1/(a + (3/2)/(a + ...)))), evaluated from the tail.
		a := e.fd("min.f64", ax, d64(6))
		v := e.fd("mov.f64", a)
		n := e.b.reg(rF64)
		e.b.ins("mov.f64", n, d64(30))
		loop := e.b.label("erf_frac")
		e.b.place(loop)
		e.b.ins("div.rn.f64", v, n, v)
		e.b.ins("add.rn.f64", v, v, a)
		e.b.ins("sub.rn.f64", n, n, d64(0.5))
		e.b.braIf(e.pred("setp.gt.f64", n, d64(0)), loop)
		// e^(−a²) with a² = hi + lo split exactly by fma.
		hi := e.fd("mul.rn.f64", a, a)
		lo := e.fd("fma.rn.f64", a, a, e.fd("neg.f64", hi))
		ex := e.exp64(e.fd("neg.f64", hi))
		ex = e.fd("fma.rn.f64", ex, e.fd("neg.f64", lo), ex)
		erfc := e.fd("div.rn.f64", e.fd("mul.rn.f64", ex, d64(1/math.SqrtPi)), v)
		r := e.fd("sub.rn.f64", d64(1), erfc)
		e.b.ins("copysign.f64", out, x, r)
		e.b.ins("selp.f64", out, x, out, e.pred("setp.nan.f64", x, x))
	}
	e.b.place(lDone)
	return out
}

// sincos64: k = rint(x·2/π), r = x − k·π/2 with π/2 split in three (fdlibm's 33-bit pieces, so each
// product is exact for |k| < 2^20), Taylor polynomials on |r| ≤ π/4, quadrant from k mod 4.
// Beyond that, arguments that came from f32 take the Payne–Hanek reduction (exact for every f32);
// f64 ones give NaN.
func (e *emitter) sincos64(op, x string, fromF32 bool) string {
	kf := e.fd("cvt.rni.f64.f64", e.fd("mul.rn.f64", x, d64(2/math.Pi)))
	r := e.fd("fma.rn.f64", kf, d64(-1.57079632673412561417e+00), x)
	r = e.fd("fma.rn.f64", kf, d64(-6.07710050630396597660e-11), r)
	r = e.fd("fma.rn.f64", kf, d64(-2.02226624871116645580e-21), r)
	r = e.fd("fma.rn.f64", kf, d64(-8.47842766036889956997e-32), r)
	k := e.b.reg(rU64)
	e.b.ins("cvt.rzi.s64.f64", k, kf)
	limit := sinCosLimit
	if fromF32 {
		big := e.pred("setp.ge.f64", e.fd("abs.f64", x), d64(sinCosLimit))
		kb, rb := e.payneHanek(x)
		e.b.ins("selp.b64", k, kb, k, big)
		e.b.ins("selp.f64", r, rb, r, big)
		limit = math.Inf(1)
	}
	r2 := e.fd("mul.rn.f64", r, r)
	// sin r = r(1 − r²/(2·3)(1 − r²/(4·5)(...))), cos r = 1 − r²/2(1 − r²/(3·4)(...)).
	s := d64(1)
	for n := 16; n >= 2; n -= 2 {
		s = e.fd("fma.rn.f64", e.fd("mul.rn.f64", r2, d64(-1/float64(n*(n+1)))), s, d64(1))
	}
	sinr := e.fd("mul.rn.f64", r, s)
	c := d64(1)
	for n := 17; n >= 1; n -= 2 {
		c = e.fd("fma.rn.f64", e.fd("mul.rn.f64", r2, d64(-1/float64(n*(n+1)))), c, d64(1))
	}
	cosr := c
	// Quadrant: sin(x) = [sin r, cos r, −sin r, −cos r][k mod 4]; cos(x) uses k+1.
	if op == "cos" {
		e.b.ins("add.s64", k, k, "1")
	}
	q := e.b.reg(rU32)
	e.b.ins("cvt.u32.u64", q, k)
	e.b.ins("and.b32", q, q, "3")
	odd := e.b.reg(rU32)
	e.b.ins("and.b32", odd, q, "1")
	y := e.fd("selp.f64", cosr, sinr, e.pred("setp.ne.u32", odd, "0"))
	neg := e.pred("setp.ge.u32", q, "2")
	y = e.fd("selp.f64", e.fd("neg.f64", y), y, neg)
	// ±inf and NaN give NaN; so do f64 arguments beyond the reduction's range, rather than a
	// wrong number.
	fin := e.pred("setp.lt.f64", e.fd("abs.f64", x), d64(limit))
	y = e.fd("selp.f64", y, "0d7FF8000000000000", fin)
	if op == "sin" {
		y = e.fd("selp.f64", x, y, e.pred("setp.eq.f64", x, d64(0))) // sin(±0) = ±0
	}
	return y
}

// sinCosLimit bounds the arguments the Cody–Waite reduction of sincos64 handles accurately.
const sinCosLimit = 0x1p20 * math.Pi / 2

// twoOverPi holds the first 192 bits of 2/π, most significant word first (TestTwoOverPi checks
// them against a 300-bit computation).
var twoOverPi = [6]uint32{0xA2F9836E, 0x4E441529, 0xFC2757D1, 0xF534DDC0, 0xDB629599, 0x3C439041}

// payneHanek reduces an f32 value x (in f64, |x| ≥ 2^20) exactly: x = m·2^(e−23) with a 24-bit
// integer m, so x·2/π = m·W·2^(e−23−192) with W = 2/π·2^192. The 224-bit product m·W is formed
// word by word; the 66 bits around the binary point give the quadrant (2 integer bits) and a
// 64-bit fraction, rounded to the nearest quadrant so r = fraction·π/2 lies in [−π/4, π/4].
// Returns k (s64, the quadrant count, negated for x < 0) and r (f64).
func (e *emitter) payneHanek(x string) (k, r string) {
	b := e.b
	xf := b.reg(rF32)
	b.ins("cvt.rn.f32.f64", xf, x)
	bitsR := b.reg(rU32)
	b.ins("mov.b32", bitsR, xf)
	ex := b.reg(rU32)
	b.ins("bfe.u32", ex, bitsR, "23", "8")
	b.ins("sub.s32", ex, ex, "127")
	b.ins("max.s32", ex, ex, "20") // smaller arguments take the other path; keep shifts in range
	b.ins("min.s32", ex, ex, "127")
	m := b.reg(rU32)
	b.ins("and.b32", m, bitsR, "0x7FFFFF")
	b.ins("or.b32", m, m, "0x800000")
	// p[j]: word j of the product counting from the least significant.
	p := make([]string, 7)
	carry := "0"
	for i := 5; i >= 0; i-- {
		t := b.reg(rU64)
		b.ins("mul.wide.u32", t, m, fmt.Sprintf("0x%08X", twoOverPi[i]))
		if carry != "0" {
			c64 := b.reg(rU64)
			b.ins("cvt.u64.u32", c64, carry)
			b.ins("add.s64", t, t, c64)
		}
		lo, hi := b.reg(rU32), b.reg(rU32)
		b.ins("mov.b64", "{"+lo+", "+hi+"}", t)
		p[5-i] = lo
		carry = hi
	}
	p[6] = carry
	// The window starts at bit s = (192 + 23 − e) − 64 = 151 − e: word s/32, shift s%32.
	s := b.reg(rU32)
	b.ins("sub.s32", s, "151", ex)
	wi, bo := b.reg(rU32), b.reg(rU32)
	b.ins("shr.u32", wi, s, "5")
	b.ins("and.b32", bo, s, "31")
	p = append(p, "0")             // above the product
	word := func(off int) string { // p[wi+off], wi in 0..4
		w := b.reg(rU32)
		b.ins("mov.b32", w, p[off])
		for j := 1; j <= 4; j++ {
			q := b.reg(rPred)
			b.ins("setp.eq.u32", q, wi, imm(j))
			b.ins("selp.b32", w, p[j+off], w, q)
		}
		return w
	}
	wa, wb, wc, wd := word(0), word(1), word(2), word(3)
	lo64 := b.reg(rU64)
	b.ins("mov.b64", lo64, "{"+wa+", "+wb+"}")
	frac := b.reg(rU64)
	b.ins("shr.b64", frac, lo64, bo)
	c64 := b.reg(rU64)
	b.ins("cvt.u64.u32", c64, wc)
	sh := b.reg(rU32)
	b.ins("sub.s32", sh, "64", bo)
	b.ins("shl.b64", c64, c64, sh) // a shift by 64 (bo = 0) gives 0
	b.ins("or.b64", frac, frac, c64)
	// The quadrant bits are the window's bits 64 and 65, in words 2 and 3.
	cd := b.reg(rU64)
	b.ins("mov.b64", cd, "{"+wc+", "+wd+"}")
	b.ins("shr.b64", cd, cd, bo)
	quad := b.reg(rU32)
	b.ins("cvt.u32.u64", quad, cd)
	// Round to the nearest quadrant: the fraction read as signed is in [−½, ½).
	top := b.reg(rU64)
	b.ins("shr.u64", top, frac, "63")
	k = b.reg(rU64)
	b.ins("cvt.u64.u32", k, quad)
	b.ins("add.s64", k, k, top)
	b.ins("and.b64", k, k, "3")
	f := e.fd("cvt.rn.f64.s64", frac)
	r = e.fd("mul.rn.f64", e.fd("mul.rn.f64", f, d64(0x1p-64)), d64(math.Pi/2))
	neg := e.pred("setp.lt.f64", x, d64(0))
	nk := b.reg(rU64)
	b.ins("neg.s64", nk, k)
	b.ins("selp.b64", k, nk, k, neg)
	r = e.fd("selp.f64", e.fd("neg.f64", r), r, neg)
	return k, r
}

// pow computes e^(y·log|x|) in f64, negated for x < 0 and odd integer y, with Go's (C99's)
// special cases: pow(x, ±0) = 1, pow(1, y) = 1, pow(x, 1) = x, pow(−1, ±inf) = 1, and NaN for
// x < 0 with finite non-integer y. IEEE arithmetic on ±0, ±inf and NaN covers the rest (log ±0 =
// −inf, log inf = inf, NaN propagates).
func (e *emitter) pow(a, b val) (val, error) {
	x, y := e.reg(a), e.reg(b)
	if a.dt != ir.F64 {
		x, y = e.fd("cvt.f64.f32", x), e.fd("cvt.f64.f32", y)
	}
	ax := e.fd("abs.f64", x)
	r := e.exp64(e.fd("mul.rn.f64", y, e.log64(ax)))
	// y an integer (finite), and odd (every |y| ≥ 2^53 is even)
	yi := e.pred("setp.eq.f64", e.fd("cvt.rni.f64.f64", y), y)
	half := e.fd("mul.rn.f64", y, d64(0.5))
	odd := e.pred("setp.ne.f64", e.fd("cvt.rni.f64.f64", half), half)
	e.b.ins("and.pred", odd, odd, yi)
	neg := e.pred("setp.lt.f64", x, d64(0))
	// −0 counts as negative for the sign of the result (pow(−0, −1) = −inf).
	xb := e.b.reg(rU64)
	e.b.ins("mov.b64", xb, x)
	signed := e.pred("setp.lt.s64", xb, "0")
	flip := e.b.reg(rPred)
	e.b.ins("and.pred", flip, signed, odd)
	r = e.fd("selp.f64", e.fd("neg.f64", r), r, flip)
	// finite x < 0 with a non-integer y: NaN (an infinite y is integer-valued above)
	bad := e.b.reg(rPred)
	e.b.ins("not.pred", bad, yi)
	e.b.ins("and.pred", bad, bad, neg)
	fin := e.pred("setp.lt.f64", ax, d64(math.Inf(1)))
	e.b.ins("and.pred", bad, bad, fin)
	yfin := e.pred("setp.lt.f64", e.fd("abs.f64", y), d64(math.Inf(1)))
	e.b.ins("and.pred", bad, bad, yfin)
	r = e.fd("selp.f64", "0d7FF8000000000000", r, bad)
	// pow(−1, ±inf) = 1
	m1 := e.pred("setp.eq.f64", x, d64(-1))
	yinf := e.pred("setp.eq.f64", e.fd("abs.f64", y), d64(math.Inf(1)))
	e.b.ins("and.pred", m1, m1, yinf)
	r = e.fd("selp.f64", d64(1), r, m1)
	r = e.fd("selp.f64", x, r, e.pred("setp.eq.f64", y, d64(1)))
	one := e.pred("setp.eq.f64", x, d64(1))
	zero := e.pred("setp.eq.f64", y, d64(0))
	e.b.ins("or.pred", one, one, zero)
	r = e.fd("selp.f64", d64(1), r, one)
	if a.dt == ir.F64 {
		return val{ir.F64, r}, nil
	}
	return e.floatToFloat(val{ir.F64, r}, a.dt), nil
}
