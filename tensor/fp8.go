package tensor

import (
	"math"

	"github.com/gcomp/gcomp/ir"
)

// fp8 is one 8-bit float format: OCP's OFP8 as NVIDIA's sm_89/sm_90 implement it.
type fp8 struct {
	mbits  int   // explicit mantissa bits
	bias   int   // exponent bias
	maxBit uint8 // bits of the largest finite value
	ieee   bool  // exponent all ones is inf/NaN (E5M2); E4M3 has only S.1111.111 = NaN
	nan    uint8 // the NaN a conversion produces
}

var (
	e4m3 = fp8{mbits: 3, bias: 7, maxBit: 0x7E, nan: 0x7F}
	e5m2 = fp8{mbits: 2, bias: 15, maxBit: 0x7B, ieee: true, nan: 0x7F}
)

func fp8Format(d ir.DType) fp8 {
	if d == ir.F8E5M2 {
		return e5m2
	}
	if d != ir.F8E4M3 {
		panic("tensor: " + d.String() + " is not an fp8 dtype")
	}
	return e4m3
}

// FloatToFP8 rounds f to the fp8 dtype d as PTX's cvt.rn.satfinite.{e4m3x2,e5m2x2} does: to
// nearest even, values beyond the largest finite (±448 for E4M3, ±57344 for E5M2), ±inf
// included, saturate to it with their sign, and NaN becomes the canonical NaN 0x7F (sign
// dropped). Zero keeps its sign.
func FloatToFP8(d ir.DType, f float64) uint8 {
	fm := fp8Format(d)
	if math.IsNaN(f) {
		return fm.nan
	}
	var sign uint8
	if math.Signbit(f) {
		sign = 0x80
	}
	a := math.Abs(f)
	if a >= fp8ToFloat(fm, fm.maxBit) { // rounding is monotonic: everything above max rounds to ≥ max
		return sign | fm.maxBit
	}
	if a == 0 {
		return sign
	}
	_, e := math.Frexp(a)
	e-- // a = 1.m · 2^e
	if emin := 1 - fm.bias; e < emin {
		e = emin
	}
	n := math.Ldexp(a, fm.mbits-e) // a in units of the last place: exact (a power-of-two scaling)
	m := math.RoundToEven(n)
	if m >= float64(int(2)<<fm.mbits) { // carried into the next binade
		m /= 2
		e++
	}
	mi := uint8(m)
	if mi < 1<<fm.mbits { // subnormal, or zero
		return sign | mi
	}
	return sign | uint8(e+fm.bias)<<fm.mbits | (mi - 1<<fm.mbits)
}

// fp8Bits is the code of a value of fp8 dtype d: FloatToFP8, except that E5M2 keeps ±inf
// (which a tensor gets only from bytes; rounding saturates).
func fp8Bits(d ir.DType, f float64) uint8 {
	if d == ir.F8E5M2 && math.IsInf(f, 0) {
		return FloatToFP8(d, f) + 1 // 0x7B → 0x7C, 0xFB → 0xFC
	}
	return FloatToFP8(d, f)
}

// FP8ToFloat widens an fp8 value of dtype d exactly (every fp8 value is an f16 value).
func FP8ToFloat(d ir.DType, b uint8) float64 { return fp8ToFloat(fp8Format(d), b) }

func fp8ToFloat(fm fp8, b uint8) float64 {
	exp := int(b>>fm.mbits) & (1<<(7-fm.mbits) - 1)
	mant := int(b) & (1<<fm.mbits - 1)
	expMax := 1<<(7-fm.mbits) - 1
	var v float64
	switch {
	case fm.ieee && exp == expMax && mant != 0, !fm.ieee && b&0x7F == 0x7F:
		return math.NaN()
	case fm.ieee && exp == expMax:
		v = math.Inf(1)
	case exp == 0:
		v = math.Ldexp(float64(mant), 1-fm.bias-fm.mbits)
	default:
		v = math.Ldexp(float64(mant|1<<fm.mbits), exp-fm.bias-fm.mbits)
	}
	if b&0x80 != 0 {
		v = -v
	}
	return v
}
