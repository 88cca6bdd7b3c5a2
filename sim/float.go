package sim

import (
	"math"
	"math/big"
	"math/bits"
)

// rmode is a floating-point rounding mode.
type rmode uint8

const (
	rnDefault rmode = iota // no modifier: round to nearest even
	rn                     // nearest even
	rz                     // toward zero
	rm                     // toward -inf
	rp                     // toward +inf
	rna                    // nearest, ties away from zero (cvt.rna.tf32)
)

// Float formats narrower than float64: explicit mantissa and exponent bits.
type ffmt struct{ mbits, ebits uint }

var (
	fmtF16  = ffmt{10, 5}
	fmtBF16 = ffmt{7, 8}
	fmtF32  = ffmt{23, 8}
	fmtTF32 = ffmt{10, 8}
)

const (
	nanF32 = 0x7FFFFFFF // the canonical NaN the GPU produces
	nanF16 = 0x7FFF
)

// encode rounds x to format f with mode m and returns its bit pattern (sign
// at bit mbits+ebits). x must be exact or rounded-to-odd in float64, which
// makes a second rounding to the narrower format correct.
func encode(x float64, f ffmt, m rmode) uint64 {
	signBit := uint64(1) << (f.mbits + f.ebits)
	expMask := uint64(1)<<f.ebits - 1
	if math.IsNaN(x) {
		return signBit - 1 // all ones below the sign: the canonical NaN
	}
	var sign uint64
	if math.Signbit(x) {
		sign = signBit
	}
	a := math.Abs(x)
	if a == 0 {
		return sign
	}
	bias := int(expMask >> 1)
	emin := 1 - bias
	maxBits := expMask<<f.mbits - 1 // largest finite
	inf := expMask << f.mbits
	overflow := func() uint64 {
		toInf := m == rn || m == rnDefault || m == rna || (m == rp && sign == 0) || (m == rm && sign != 0)
		if toInf {
			return sign | inf
		}
		return sign | maxBits
	}
	if math.IsInf(a, 0) {
		return sign | inf
	}
	_, e := math.Frexp(a)
	e-- // a = 1.f * 2^e
	if e < emin {
		e = emin
	}
	q := math.Ldexp(1, e-int(f.mbits)) // value of one unit in the last place
	n := a / q                         // exact: scaling by a power of two
	fl := math.Floor(n)
	frac := n - fl
	up := false
	switch m {
	case rz:
	case rm:
		up = sign != 0 && frac != 0
	case rp:
		up = sign == 0 && frac != 0
	case rna:
		up = frac >= 0.5
	default:
		up = frac > 0.5 || frac == 0.5 && math.Mod(fl, 2) == 1
	}
	if up {
		fl++
	}
	mant := uint64(fl)
	if mant >= 1<<(f.mbits+1) { // carried into the next binade
		mant >>= 1
		e++
	}
	if mant < 1<<f.mbits { // subnormal (or rounded to zero)
		return sign | mant
	}
	if e > bias {
		return overflow()
	}
	b := uint64(e+bias)<<f.mbits | (mant - 1<<f.mbits)
	if b > maxBits {
		return overflow()
	}
	return sign | b
}

// decode returns the value of bits in format f.
func decode(b uint64, f ffmt) float64 {
	expMask := uint64(1)<<f.ebits - 1
	sign := b >> (f.mbits + f.ebits) & 1
	exp := b >> f.mbits & expMask
	mant := b & (1<<f.mbits - 1)
	bias := int(expMask >> 1)
	var v float64
	switch {
	case exp == expMask && mant != 0:
		return math.NaN()
	case exp == expMask:
		v = math.Inf(1)
	case exp == 0:
		v = math.Ldexp(float64(mant), 1-bias-int(f.mbits))
	default:
		v = math.Ldexp(float64(mant|1<<f.mbits), int(exp)-bias-int(f.mbits))
	}
	if sign != 0 {
		v = -v
	}
	return v
}

func f16(b uint64) float64  { return decode(b&0xFFFF, fmtF16) }
func bf16(b uint64) float64 { return float64(math.Float32frombits(uint32(b&0xFFFF) << 16)) }
func f32(b uint64) float64  { return float64(math.Float32frombits(uint32(b))) }
func f64(b uint64) float64  { return math.Float64frombits(b) }

// toF32 rounds x (exact or rounded-to-odd) to float32 bits.
func toF32(x float64, m rmode) uint64 {
	if m == rn || m == rnDefault {
		f := float32(x)
		if f != f {
			return nanF32
		}
		return uint64(math.Float32bits(f))
	}
	return encode(x, fmtF32, m)
}

// roundOdd turns s, the float64 nearest to an exact value s+err, into the
// round-to-odd value: exact results stay, inexact ones are truncated and
// get their last bit set. A second rounding to a format at least two bits
// narrower is then correct for every mode.
func roundOdd(s, err float64) float64 {
	if err == 0 || math.IsInf(s, 0) || math.IsNaN(s) {
		return s
	}
	t := s
	if (err > 0) != (s > 0) { // s is farther from zero than the exact value
		t = math.Nextafter(s, 0)
	}
	return math.Float64frombits(math.Float64bits(t) | 1)
}

// twoSum returns s = fl(a+b) and the exact error a+b-s.
func twoSum(a, b float64) (float64, float64) {
	s := a + b
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return s, 0
	}
	bb := s - a
	return s, (a - (s - bb)) + (b - bb)
}

// Exact-or-odd float64 results of f32-or-narrower operations.
func oddAdd(a, b float64) float64 { return roundOdd(twoSum(a, b)) }
func oddFMA(a, b, c float64) float64 {
	p := a * b // exact for inputs of 24 bits or fewer
	return roundOdd(twoSum(p, c))
}
func oddDiv(a, b float64) float64 {
	q := a / b
	if math.IsInf(q, 0) || math.IsNaN(q) || q == 0 {
		return q
	}
	r := math.FMA(-q, b, a) // exact remainder; sign says where the true quotient lies
	if r == 0 {
		return q
	}
	if (r > 0) == (b > 0) {
		return roundOdd(q, 1*math.Copysign(1, q))
	}
	return roundOdd(q, -1*math.Copysign(1, q))
}
func oddSqrt(a float64) float64 {
	q := math.Sqrt(a)
	if math.IsInf(q, 0) || math.IsNaN(q) || q == 0 {
		return q
	}
	r := math.FMA(-q, q, a)
	if r == 0 {
		return q
	}
	return roundOdd(q, r)
}

// f64 operations with a directed rounding mode go through math/big.
// big.Float has no subnormals; results in the f64 subnormal range may be
// off by one rounding there.
func bigMode(m rmode) big.RoundingMode {
	switch m {
	case rz:
		return big.ToZero
	case rm:
		return big.ToNegativeInf
	case rp:
		return big.ToPositiveInf
	}
	return big.ToNearestEven
}

func f64Op(op byte, m rmode, a, b, c float64) float64 {
	if m == rn || m == rnDefault {
		switch op {
		case '+':
			return a + b
		case '*':
			return a * b
		case '/':
			return a / b
		case 's':
			return math.Sqrt(a)
		}
		return math.FMA(a, b, c)
	}
	var r float64
	switch op {
	case '+':
		r = a + b
	case '*':
		r = a * b
	case '/':
		r = a / b
	case 's':
		r = math.Sqrt(a)
	default:
		r = math.FMA(a, b, c)
	}
	if math.IsNaN(r) || math.IsInf(r, 0) || math.IsInf(a, 0) || math.IsInf(b, 0) || math.IsInf(c, 0) {
		if math.IsInf(r, 0) && !math.IsInf(a, 0) && !math.IsInf(b, 0) && !math.IsInf(c, 0) {
			return overflow64(r, m)
		}
		return r
	}
	x := new(big.Float).SetPrec(2000).SetMode(big.ToNearestEven)
	ba, bb, bc := big.NewFloat(a), big.NewFloat(b), big.NewFloat(c)
	switch op {
	case '+':
		x.Add(ba, bb)
	case '*':
		x.Mul(ba, bb)
	case '/':
		x.SetPrec(200).SetMode(bigMode(m)).Quo(ba, bb)
	case 's':
		x.SetPrec(200).SetMode(bigMode(m)).Sqrt(ba)
	default:
		x.Mul(ba, bb)
		x.Add(x, bc)
	}
	if x.Sign() == 0 {
		return r // signed zero as IEEE gives it
	}
	x.SetMode(bigMode(m)).SetPrec(53)
	v, _ := x.Float64()
	if math.IsInf(v, 0) {
		return overflow64(v, m)
	}
	return v
}

func overflow64(r float64, m rmode) float64 {
	neg := r < 0
	if m == rz || (m == rm && !neg) || (m == rp && neg) {
		return math.Copysign(math.MaxFloat64, r)
	}
	return r
}

// roundInt rounds to an integer value with .rni/.rzi/.rmi/.rpi.
func roundInt(x float64, m rmode) float64 {
	switch m {
	case rz:
		return math.Trunc(x)
	case rm:
		return math.Floor(x)
	case rp:
		return math.Ceil(x)
	}
	return math.RoundToEven(x)
}

// ftz32 flushes an f32 subnormal to zero of the same sign.
func ftz32(b uint64) uint64 {
	if b&0x7F800000 == 0 {
		return b & 0x80000000
	}
	return b
}

// f32 converts an integer to f32 bits with rounding mode m.
func intToFloat(v uint64, signed bool, size int, f ffmt, m rmode) uint64 {
	neg := false
	if signed {
		s := int64(v<<(64-8*size)) >> (64 - 8*size)
		if s < 0 {
			neg = true
			v = uint64(-s)
		} else {
			v = uint64(s)
		}
	} else if size < 8 {
		v &= 1<<(8*size) - 1
	}
	if v >= 1<<53 && f == (ffmt{52, 11}) {
		x := new(big.Float).SetMode(bigMode(m)).SetPrec(53)
		x.SetUint64(v)
		if neg {
			x.Neg(x)
		}
		r, _ := x.Float64()
		return math.Float64bits(r)
	}
	var x float64
	if v < 1<<53 {
		x = float64(v)
	} else { // round to 53 bits with the last bit as sticky (round to odd)
		sh := 64 - bits.LeadingZeros64(v) - 53
		t := v >> sh
		if v&(1<<sh-1) != 0 {
			t |= 1
		}
		x = math.Ldexp(float64(t), sh)
	}
	if neg {
		x = -x
	}
	if f == (ffmt{52, 11}) {
		return math.Float64bits(x)
	}
	return encode(x, f, m)
}

// floatToInt converts x to an integer of the given size with rounding mode m,
// saturating to the destination range; NaN converts to 0 (as the ISA says).
func floatToInt(x float64, signed bool, size int, m rmode) uint64 {
	if math.IsNaN(x) {
		return 0
	}
	r := roundInt(x, m)
	if signed {
		lo := -math.Ldexp(1, 8*size-1)
		hi := math.Ldexp(1, 8*size-1)
		switch {
		case r <= lo:
			return uint64(int64(-1) << (8*size - 1))
		case r >= hi:
			return uint64(1)<<(8*size-1) - 1
		}
		return uint64(int64(r))
	}
	hi := math.Ldexp(1, 8*size)
	switch {
	case r <= 0:
		return 0
	case r >= hi:
		if size == 8 {
			return math.MaxUint64
		}
		return uint64(1)<<(8*size) - 1
	}
	return uint64(r)
}
