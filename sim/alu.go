package sim

import (
	"fmt"
	"math"
	"math/bits"
)

// Floating-point values move through the ALU as float64 holding an exact
// f16/bf16/f32 value; fin decodes an operand and fout rounds a result that
// is exact or rounded-to-odd (see roundOdd) back to the instruction's type,
// applying .ftz and .sat. f16x2/bf16x2 apply the scalar function per half.

func scalarFmt(t ptype) ffmt {
	switch t {
	case tF16, tF16x2:
		return fmtF16
	case tBF16, tBF16x2:
		return fmtBF16
	}
	return fmtF32
}

// fval decodes a float of type t, with no flushing.
func fval(t ptype, b uint64) float64 {
	switch t {
	case tF64:
		return f64(b)
	case tF32, tTF32:
		return f32(b)
	case tBF16, tBF16x2:
		return bf16(b)
	}
	return f16(b)
}

func fin(in *inst, t ptype, b uint64) float64 {
	switch t {
	case tF64:
		return f64(b)
	case tF32, tTF32:
		if in.ftz {
			b = ftz32(b)
		}
		return f32(b)
	case tBF16, tBF16x2:
		return bf16(b)
	}
	if in.ftz && b&0x7C00 == 0 {
		b &= 0x8000
	}
	return f16(b)
}

func fout(in *inst, t ptype, x float64) uint64 {
	return foutMode(t, x, in.rnd, in.ftz, in.sat)
}

func foutMode(t ptype, x float64, rnd rmode, ftz, sat bool) uint64 {
	if sat {
		switch {
		case x != x || x <= 0:
			x = 0
		case x > 1:
			x = 1
		}
	}
	switch t {
	case tF64:
		return math.Float64bits(x)
	case tF32:
		r := toF32(x, rnd)
		if ftz {
			r = ftz32(r)
		}
		return r
	}
	r := encode(x, scalarFmt(t), rnd)
	if ftz && t != tBF16 && t != tBF16x2 && r&0x7C00 == 0 {
		r &= 0x8000
	}
	return r
}

// floatOp lifts a float64 operation to an aluFn over type t.
func floatOp(t ptype, op func(a, b, c float64) float64) aluFn {
	switch t {
	case tF16x2, tBF16x2:
		h := t - 1 // tF16 / tBF16
		return func(in *inst, a, b, c, _ uint64) uint64 {
			lo := fout(in, h, op(fin(in, h, a&0xFFFF), fin(in, h, b&0xFFFF), fin(in, h, c&0xFFFF)))
			hi := fout(in, h, op(fin(in, h, a>>16), fin(in, h, b>>16), fin(in, h, c>>16)))
			return hi<<16 | lo
		}
	}
	return func(in *inst, a, b, c, _ uint64) uint64 {
		return fout(in, t, op(fin(in, t, a), fin(in, t, b), fin(in, t, c)))
	}
}

// f64 ops round in f64Op; narrower ones produce exact-or-odd results.
func fArith(t ptype, rnd rmode, op byte) aluFn {
	if t == tF64 {
		return func(in *inst, a, b, c, _ uint64) uint64 {
			x, y, z := f64(a), f64(b), f64(c)
			switch op {
			case '+':
				return math.Float64bits(zeroSign(f64Op('+', rnd, x, y, 0), x, y, rnd))
			case '-':
				return math.Float64bits(zeroSign(f64Op('+', rnd, x, -y, 0), x, -y, rnd))
			case 'f':
				return math.Float64bits(zeroSign(f64Op('f', rnd, x, y, z), x*y, z, rnd))
			case 'n': // neg
				return a ^ 1<<63
			}
			return math.Float64bits(f64Op(op, rnd, x, y, z))
		}
	}
	if t == tF32 && (rnd == rn || rnd == rnDefault) {
		// The common case, in native float32 arithmetic (correctly rounded).
		switch op {
		case '+':
			return func(in *inst, a, b, _, _ uint64) uint64 {
				if in.ftz || in.sat {
					return fout(in, t, float64(float32(fin(in, t, a))+float32(fin(in, t, b))))
				}
				return canon32(math.Float32frombits(uint32(a)) + math.Float32frombits(uint32(b)))
			}
		case '*':
			return func(in *inst, a, b, _, _ uint64) uint64 {
				if in.ftz || in.sat {
					return fout(in, t, float64(float32(fin(in, t, a))*float32(fin(in, t, b))))
				}
				return canon32(math.Float32frombits(uint32(a)) * math.Float32frombits(uint32(b)))
			}
		case 'f':
			slow := floatOp(t, func(a, b, c float64) float64 { return oddFMA(a, b, c) })
			return func(in *inst, a, b, c, d uint64) uint64 {
				if in.ftz || in.sat {
					return slow(in, a, b, c, d)
				}
				return canon32(float32(oddFMA(f32(a), f32(b), f32(c))))
			}
		}
	}
	return floatOp(t, func(a, b, c float64) float64 {
		switch op {
		case '+':
			return zeroSign(oddAdd(a, b), a, b, rnd)
		case '-':
			return zeroSign(oddAdd(a, -b), a, -b, rnd)
		case '*':
			return a * b // exact for 24-bit inputs
		case '/':
			return oddDiv(a, b)
		case 'f':
			return zeroSign(oddFMA(a, b, c), a*b, c, rnd)
		case 's':
			return oddSqrt(a)
		}
		panic("bad op")
	})
}

// zeroSign applies IEEE's rule for an exact zero sum p+c of operands with
// opposite signs: +0, except -0 when rounding toward -inf.
func zeroSign(r, p, c float64, m rmode) float64 {
	if r == 0 && m == rm && math.Signbit(p) != math.Signbit(c) {
		return math.Copysign(0, -1)
	}
	return r
}

func canon32(f float32) uint64 {
	if f != f {
		return nanF32
	}
	return uint64(math.Float32bits(f))
}

// fMinMax follows the ISA: a NaN operand is ignored unless both are NaN
// (or .NaN is given); -0 is less than +0.
func fMinMax(t ptype, isMax, propNaN bool) aluFn {
	return floatOp(t, func(a, b, _ float64) float64 {
		an, bn := a != a, b != b
		switch {
		case an && bn, propNaN && (an || bn):
			return math.NaN()
		case an:
			return b
		case bn:
			return a
		}
		if a == b && a == 0 {
			if math.Signbit(a) != isMax {
				return a
			}
			return b
		}
		if (a > b) == isMax {
			return a
		}
		return b
	})
}

// intArith builds integer add/sub/mul/mad/div/rem/min/max/abs/neg.
func intArith(name string, t ptype, hi, wide, sat bool) (aluFn, error) {
	sz := t.bits()
	sgn := t.signed()
	m := t.mask()
	sx := func(v uint64) int64 { return t.sext(v) }
	switch name {
	case "add", "sub":
		neg := name == "sub"
		if sat {
			if t != tS32 {
				return nil, fmt.Errorf(".sat needs .s32")
			}
			return func(_ *inst, a, b, _, _ uint64) uint64 {
				x, y := sx(a), sx(b)
				if neg {
					y = -y
				}
				return uint64(clampS32(x+y)) & m
			}, nil
		}
		if neg {
			return func(_ *inst, a, b, _, _ uint64) uint64 { return (a - b) & m }, nil
		}
		return func(_ *inst, a, b, _, _ uint64) uint64 { return (a + b) & m }, nil
	case "mul", "mad":
		add := name == "mad"
		switch {
		case wide:
			return func(_ *inst, a, b, c, _ uint64) uint64 {
				var p uint64
				if sgn {
					p = uint64(sx(a) * sx(b))
				} else {
					p = (a & m) * (b & m)
				}
				if add {
					p += c
				}
				return p
			}, nil
		case hi:
			return func(_ *inst, a, b, c, _ uint64) uint64 {
				h := mulHi(a&m, b&m, sz, sgn)
				if add {
					if sat {
						return uint64(clampS32(sx(h)+sx(c))) & m
					}
					h += c
				}
				return h & m
			}, nil
		}
		return func(_ *inst, a, b, c, _ uint64) uint64 {
			p := a * b
			if add {
				p += c
			}
			return p & m
		}, nil
	case "div", "rem":
		isRem := name == "rem"
		return func(_ *inst, a, b, _, _ uint64) uint64 {
			if sgn {
				x, y := sx(a), sx(b)
				if y == 0 { // the hardware's answer: -1 (all ones) for div, the dividend for rem
					if isRem {
						return a & m
					}
					return m
				}
				if y == -1 { // avoids MinInt64 / -1; the quotient wraps, the remainder is 0
					if isRem {
						return 0
					}
					return uint64(-x) & m
				}
				if isRem {
					return uint64(x%y) & m
				}
				return uint64(x/y) & m
			}
			x, y := a&m, b&m
			if y == 0 {
				if isRem {
					return x
				}
				return m
			}
			if isRem {
				return x % y
			}
			return x / y
		}, nil
	case "min", "max":
		isMax := name == "max"
		return func(_ *inst, a, b, _, _ uint64) uint64 {
			var less bool
			if sgn {
				less = sx(a) < sx(b)
			} else {
				less = a&m < b&m
			}
			if less != isMax {
				return a & m
			}
			return b & m
		}, nil
	case "abs":
		return func(_ *inst, a, _, _, _ uint64) uint64 {
			if x := sx(a); x < 0 {
				return uint64(-x) & m
			}
			return a & m
		}, nil
	case "neg":
		return func(_ *inst, a, _, _, _ uint64) uint64 { return -a & m }, nil
	}
	return nil, fmt.Errorf("no integer form")
}

func clampS32(x int64) int64 {
	return max(min(x, math.MaxInt32), math.MinInt32)
}

func mulHi(a, b uint64, sz uint, sgn bool) uint64 {
	if sz == 64 {
		if sgn {
			h, _ := bits.Mul64(a, b)
			// Signed correction of the unsigned high word.
			if int64(a) < 0 {
				h -= b
			}
			if int64(b) < 0 {
				h -= a
			}
			return h
		}
		h, _ := bits.Mul64(a, b)
		return h
	}
	t := ptype(0)
	switch sz {
	case 16:
		t = tS16
	case 32:
		t = tS32
	default:
		t = tS8
	}
	if sgn {
		return uint64(t.sext(a)*t.sext(b)) >> sz
	}
	return a * b >> sz
}

func bitOp(name string, t ptype) aluFn {
	m := t.mask()
	switch name {
	case "and":
		return func(_ *inst, a, b, _, _ uint64) uint64 { return a & b & m }
	case "or":
		return func(_ *inst, a, b, _, _ uint64) uint64 { return (a | b) & m }
	case "xor":
		return func(_ *inst, a, b, _, _ uint64) uint64 { return (a ^ b) & m }
	case "not":
		return func(_ *inst, a, _, _, _ uint64) uint64 { return ^a & m }
	case "cnot":
		return func(_ *inst, a, _, _, _ uint64) uint64 {
			if a&m == 0 {
				return 1
			}
			return 0
		}
	case "shl":
		return func(_ *inst, a, b, _, _ uint64) uint64 {
			// Shift amounts beyond the width clamp to the width.
			return a << min(uint32(b), 64) & m
		}
	case "shr":
		if t.signed() {
			return func(_ *inst, a, b, _, _ uint64) uint64 {
				return uint64(t.sext(a)>>min(uint32(b), 63)) & m
			}
		}
		return func(_ *inst, a, b, _, _ uint64) uint64 { return (a & m) >> min(uint32(b), 64) }
	case "popc":
		return func(_ *inst, a, _, _, _ uint64) uint64 { return uint64(bits.OnesCount64(a & m)) }
	case "clz":
		return func(_ *inst, a, _, _, _ uint64) uint64 {
			return uint64(bits.LeadingZeros64(a&m) - (64 - int(t.bits())))
		}
	case "brev":
		return func(_ *inst, a, _, _, _ uint64) uint64 { return bits.Reverse64(a) >> (64 - t.bits()) }
	case "bfe":
		n := uint64(t.bits())
		return func(_ *inst, a, b, c, _ uint64) uint64 {
			pos, ln := b&0xFF, c&0xFF
			var sbit uint64
			if t.signed() && ln != 0 {
				sbit = (a >> min(pos+ln-1, n-1)) & 1
			}
			var d uint64
			for i := uint64(0); i < n; i++ {
				var bit uint64
				if i < ln && pos+i <= n-1 {
					bit = a >> (pos + i) & 1
				} else {
					bit = sbit
				}
				d |= bit << i
			}
			return d & m
		}
	case "bfi":
		n := uint64(t.bits())
		return func(_ *inst, a, b, c, d uint64) uint64 {
			pos, ln := c&0xFF, d&0xFF
			f := b
			for i := uint64(0); i < ln && pos+i < n; i++ {
				f = f&^(1<<(pos+i)) | (a>>i&1)<<(pos+i)
			}
			return f & m
		}
	}
	return nil
}

// prmt in its default mode: each selector nibble picks a byte of {b, a},
// with bit 3 replicating that byte's sign.
func prmt(_ *inst, a, b, c, _ uint64) uint64 {
	x := (b&0xFFFFFFFF)<<32 | a&0xFFFFFFFF
	var d uint64
	for i := 0; i < 4; i++ {
		sel := c >> (4 * i) & 0xF
		byt := x >> (8 * (sel & 7)) & 0xFF
		if sel&8 != 0 {
			if byt&0x80 != 0 {
				byt = 0xFF
			} else {
				byt = 0
			}
		}
		d |= byt << (8 * i)
	}
	return d
}

// prmtModes are the byte selectors of prmt's special modes, one per value of
// c[1:0], written as the selector nibbles of the default mode (PTX ISA,
// prmt: forward and backward 4 extract, replicate 8, edge clamp left and
// right, replicate 16).
var prmtModes = map[string][4]uint64{
	"f4e":  {0x3210, 0x4321, 0x5432, 0x6543},
	"b4e":  {0x5670, 0x6701, 0x7012, 0x0123},
	"rc8":  {0x0000, 0x1111, 0x2222, 0x3333},
	"ecl":  {0x3210, 0x3211, 0x3222, 0x3333},
	"ecr":  {0x0000, 0x1110, 0x2210, 0x3210},
	"rc16": {0x1010, 0x3232, 0x1010, 0x3232},
}

// prmtMode permutes with one of the tables above; the modes never sign-extend.
func prmtMode(sel [4]uint64) aluFn {
	return func(in *inst, a, b, c, _ uint64) uint64 { return prmt(in, a, b, sel[c&3], 0) }
}

// relu wraps the fn of an f16/bf16 (or packed) result with .relu: a
// negative half becomes +0 and a NaN the canonical NaN.
func relu(fn aluFn, t ptype) aluFn {
	exp := uint64(0x7C00)
	if t == tBF16 || t == tBF16x2 {
		exp = 0x7F80
	}
	half := func(h uint64) uint64 {
		switch {
		case h&exp == exp && h&^exp&0x7FFF != 0:
			return 0x7FFF
		case h&0x8000 != 0:
			return 0
		}
		return h
	}
	return func(in *inst, a, b, c, d uint64) uint64 {
		r := fn(in, a, b, c, d)
		return half(r>>16&0xFFFF)<<16 | half(r&0xFFFF)
	}
}

// approxUpper computes rcp.approx.ftz.f64 and rsqrt.approx.ftz.f64 as the
// ISA defines them: from the upper word of a (sign, exponent and 20 mantissa
// bits) to a result of as many bits, rounded to nearest, whose low 32 bits
// are zero. Subnormal inputs and results flush to signed zero; a NaN result
// is 0x7FFFFFFF00000000.
func approxUpper(fn aluFn) aluFn {
	return func(in *inst, a, _, _, _ uint64) uint64 {
		a &^= 0xFFFFFFFF
		if a&0x7FF0000000000000 == 0 {
			a &= 1 << 63
		}
		r := fn(in, a, 0, 0, 0)
		switch {
		case r&0x7FF0000000000000 == 0x7FF0000000000000 && r&0xFFFFFFFFFFFFF != 0:
			return 0x7FFFFFFF00000000
		case r&0x7FF0000000000000 == 0:
			return r & (1 << 63)
		}
		// A carry out of the mantissa bumps the exponent, as rounding should.
		return (r + 0x80000000) &^ 0xFFFFFFFF
	}
}

// fUnary builds rcp, sqrt, rsqrt, ex2, lg2, sin, cos, tanh, abs, neg.
// Approximate forms return the correctly rounded value, which is within
// every error bound the ISA gives.
func fUnary(name string, t ptype, rnd rmode) aluFn {
	switch name {
	case "abs", "neg":
		// Sign-bit operations; NaN payloads pass through.
		var sign uint64 = 1 << 31
		switch t {
		case tF64:
			sign = 1 << 63
		case tF16, tBF16:
			sign = 1 << 15
		case tF16x2, tBF16x2:
			sign = 1<<31 | 1<<15
		}
		if name == "abs" {
			return func(in *inst, a, _, _, _ uint64) uint64 {
				if in.ftz && t == tF32 {
					a = ftz32(a)
				}
				return a &^ sign
			}
		}
		return func(in *inst, a, _, _, _ uint64) uint64 {
			if in.ftz && t == tF32 {
				a = ftz32(a)
			}
			return a ^ sign
		}
	case "sqrt":
		if t == tF64 {
			return fArith(t, rnd, 's')
		}
		return floatOp(t, func(a, _, _ float64) float64 { return oddSqrt(a) })
	case "rcp":
		if t == tF64 {
			return func(in *inst, a, _, _, _ uint64) uint64 {
				return math.Float64bits(f64Op('/', rnd, 1, f64(a), 0))
			}
		}
		return floatOp(t, func(a, _, _ float64) float64 { return oddDiv(1, a) })
	}
	var f func(float64) float64
	switch name {
	case "rsqrt":
		f = func(x float64) float64 { return 1 / math.Sqrt(x) }
	case "ex2":
		f = math.Exp2
	case "lg2":
		f = math.Log2
	case "sin":
		f = math.Sin
	case "cos":
		f = math.Cos
	case "tanh":
		f = math.Tanh
	default:
		return nil
	}
	if t == tF64 {
		return func(_ *inst, a, _, _, _ uint64) uint64 { return math.Float64bits(f(f64(a))) }
	}
	return floatOp(t, func(a, _, _ float64) float64 { return f(a) })
}

// Comparison operators of setp/set/slct.
const (
	cmpEQ uint8 = iota
	cmpNE
	cmpLT
	cmpLE
	cmpGT
	cmpGE
	cmpEQU
	cmpNEU
	cmpLTU
	cmpLEU
	cmpGTU
	cmpGEU
	cmpNUM
	cmpNAN
)

var cmpByName = map[string]uint8{
	"eq": cmpEQ, "ne": cmpNE, "lt": cmpLT, "le": cmpLE, "gt": cmpGT, "ge": cmpGE,
	"lo": cmpLT, "ls": cmpLE, "hi": cmpGT, "hs": cmpGE,
	"equ": cmpEQU, "neu": cmpNEU, "ltu": cmpLTU, "leu": cmpLEU, "gtu": cmpGTU, "geu": cmpGEU,
	"num": cmpNUM, "nan": cmpNAN,
}

// compare evaluates a cmp b for type t.
func compare(in *inst, t ptype, cmp uint8, a, b uint64) bool {
	if t.isFloat() {
		x, y := fin(in, t, a), fin(in, t, b)
		unordered := x != x || y != y
		switch cmp {
		case cmpNUM:
			return !unordered
		case cmpNAN:
			return unordered
		}
		if unordered {
			return cmp >= cmpEQU // ordered comparisons are false on NaN, unordered ones true
		}
		switch cmp % 6 {
		case cmpEQ:
			return x == y
		case cmpNE:
			return x != y
		case cmpLT:
			return x < y
		case cmpLE:
			return x <= y
		case cmpGT:
			return x > y
		}
		return x >= y
	}
	var c int
	if t.signed() {
		x, y := t.sext(a), t.sext(b)
		c = cmpInt(x < y, x == y)
	} else {
		x, y := a&t.mask(), b&t.mask()
		c = cmpInt(x < y, x == y)
	}
	switch cmp {
	case cmpEQ:
		return c == 0
	case cmpNE:
		return c != 0
	case cmpLT:
		return c < 0
	case cmpLE:
		return c <= 0
	case cmpGT:
		return c > 0
	}
	return c >= 0
}

func cmpInt(lt, eq bool) int {
	switch {
	case lt:
		return -1
	case eq:
		return 0
	}
	return 1
}

// cvt converts a value of type src to type dst.
func cvtFn(dst, src ptype) aluFn {
	return func(in *inst, a, _, _, _ uint64) uint64 {
		switch {
		case !src.isFloat() && !dst.isFloat():
			v := a & src.mask()
			if src.signed() {
				v = uint64(src.sext(a))
			}
			if in.sat {
				v = satInt(v, src.signed(), dst)
			}
			if dst.signed() {
				// Wraps to the destination type, then sign-extends to the register.
				return uint64(dst.sext(v))
			}
			return v & dst.mask()
		case !src.isFloat():
			switch dst {
			case tF64:
				return intToFloat(a, src.signed(), src.size(), ffmt{52, 11}, in.rnd)
			case tF32:
				return intToFloat(a, src.signed(), src.size(), fmtF32, in.rnd)
			}
			return intToFloat(a, src.signed(), src.size(), scalarFmt(dst), in.rnd)
		}
		// .ftz in cvt concerns f32 operands only.
		x := fin(in, src, a)
		if src != tF32 {
			x = fval(src, a)
		}
		if !dst.isFloat() {
			v := floatToInt(x, dst.signed(), dst.size(), in.rnd)
			if dst.signed() {
				return uint64(dst.sext(v))
			}
			return v
		}
		if in.flag == 1 { // integer rounding to a float type: .rni etc.
			x = roundInt(x, in.rnd)
		}
		if dst == tF64 {
			return math.Float64bits(x)
		}
		if dst == tTF32 {
			r := encode(x, fmtTF32, in.rnd)
			// tf32 is stored as f32 bits with the low 13 mantissa bits zero.
			return (r>>18&1)<<31 | (r>>10&0xFF)<<23 | (r&0x3FF)<<13
		}
		return foutMode(dst, x, in.rnd, in.ftz && dst == tF32, in.sat)
	}
}

func satInt(v uint64, srcSigned bool, dst ptype) uint64 {
	if srcSigned {
		x := int64(v)
		if dst.signed() {
			lo, hi := -int64(1)<<(dst.bits()-1), int64(1)<<(dst.bits()-1)-1
			return uint64(max(min(x, hi), lo)) & dst.mask()
		}
		if x < 0 {
			return 0
		}
		return min(uint64(x), dst.mask())
	}
	if dst.signed() {
		return min(v, uint64(1)<<(dst.bits()-1)-1)
	}
	return min(v, dst.mask())
}

// bfind finds the most significant non-sign bit (0xFFFFFFFF if none); with
// .shiftamt it returns the left shift that would normalize it instead.
func bfind(t ptype, shiftamt bool) aluFn {
	n := int(t.bits())
	return func(_ *inst, a, _, _, _ uint64) uint64 {
		v := a & t.mask()
		if t.signed() && t.sext(a) < 0 {
			v = ^v & t.mask()
		}
		if v == 0 {
			return 0xFFFFFFFF
		}
		msb := 63 - bits.LeadingZeros64(v)
		if shiftamt {
			return uint64(n - 1 - msb)
		}
		return uint64(msb)
	}
}
