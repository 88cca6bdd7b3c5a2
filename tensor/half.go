package tensor

import "math"

// FloatToF16 rounds f to IEEE binary16 with round-to-nearest-even, overflowing to ±inf and keeping
// NaN a (quiet) NaN.
func FloatToF16(f float64) uint16 {
	// Round via float32 would double-round; work from the float64 bits directly.
	b := math.Float64bits(f)
	sign := uint16(b>>48) & 0x8000
	exp := int((b >> 52) & 0x7ff)
	mant := b & (1<<52 - 1)
	if exp == 0x7ff {
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	// Unbiased exponent; f16 normal range is 2^-14 .. 2^15.
	e := exp - 1023
	if exp == 0 { // float64 subnormals are far below f16's range
		return sign
	}
	full := mant | 1<<52 // 53-bit significand, value = full * 2^(e-52)
	var shift int        // how many low bits of full to drop
	var he uint16        // biased f16 exponent
	if e < -14 {
		// f16 subnormal: value = m * 2^-24, so m = full * 2^(e-52+24)
		shift = 52 - 24 - e
		he = 0
		if shift > 63 {
			return sign
		}
	} else {
		shift = 42 // keep 10 fraction bits
		he = uint16(e + 15)
	}
	m := full >> shift
	rem := full & (1<<shift - 1)
	half := uint64(1) << (shift - 1)
	if rem > half || rem == half && m&1 == 1 {
		m++
	}
	if he == 0 {
		// m may have rounded up into the smallest normal: the encoding handles it (m == 1<<10).
		return sign | uint16(m)
	}
	if m == 1<<11 { // mantissa overflow from rounding
		m >>= 1
		he++
	}
	if he >= 31 {
		return sign | 0x7c00
	}
	return sign | he<<10 | uint16(m&0x3ff)
}

// F16ToFloat widens an IEEE binary16 value exactly.
func F16ToFloat(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	mant := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(mant, -24)
	case 31:
		if mant != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	}
	return sign * math.Ldexp(1024+mant, exp-25)
}

// FloatToBF16 rounds f to bfloat16 with round-to-nearest-even (via its exact float32 neighbour
// interval: rounding f64→bf16 directly, not through f32, to avoid double rounding).
func FloatToBF16(f float64) uint16 {
	if math.IsNaN(f) {
		return uint16(math.Float64bits(f)>>48)&0x8000 | 0x7fc0
	}
	// Truncate to float32 toward zero, remember whether anything was dropped (sticky bit).
	f32 := float32(f)
	if math.Abs(float64(f32)) > math.Abs(f) && !math.IsInf(float64(f32), 0) {
		f32 = math.Nextafter32(f32, 0)
	} else if math.IsInf(float64(f32), 0) && !math.IsInf(f, 0) {
		f32 = math.Nextafter32(f32, 0)
	}
	sticky := float64(f32) != f
	b := math.Float32bits(f32)
	rem := b & 0xffff
	m := b >> 16
	if rem > 0x8000 || rem == 0x8000 && (sticky || m&1 == 1) {
		m++
	}
	return uint16(m)
}

// BF16ToFloat widens a bfloat16 value exactly.
func BF16ToFloat(h uint16) float64 {
	return float64(math.Float32frombits(uint32(h) << 16))
}
