package sim

import (
	"fmt"
	"math"
)

// The fp8 conversions of sm_89/sm_90 (PTX ISA 7.8+, "cvt"):
//
//	cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.f32   d, a, b  // d.b16 = fp8(a)<<8 | fp8(b)
//	cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.f16x2 d, a     // each half of a, upper to upper
//	cvt.rn{.relu}.f16x2.{e4m3x2,e5m2x2}           d, a     // d.b32: each byte of a.b16 as f16
//
// E4M3 (bias 7) has no infinities and one NaN per sign, S.1111.111, so its largest value is 448;
// E5M2 (bias 15) is IEEE-like: ±inf, NaNs, largest 57344. .rn rounds to nearest even; .satfinite
// (mandatory) turns a value above the largest finite, ±inf included, into the largest finite of
// its sign, and a NaN into the canonical NaN 0x7F. Widening is exact (f16 holds every fp8 value);
// a NaN widens to f16's canonical 0x7FFF. .relu clamps negative results to +0 (NaN stays NaN).

// fmtE4M3s is E4M3 scaled by 2^-8: an IEEE-style format with 5 exponent bits whose rounding
// below 2^1 (E4M3's 2^9) is E4M3's exactly and whose low 7 bits are E4M3's encoding.
var fmtE4M3s = ffmt{3, 5}

var fmtE5M2 = ffmt{2, 5}

const nanF8 = 0x7F

// toE4M3 rounds x (exact in float64) to E4M3 with .rn.satfinite.
func toE4M3(x float64) uint64 {
	if math.IsNaN(x) {
		return nanF8
	}
	b := encode(math.Ldexp(x, -8), fmtE4M3s, rn) // finite: |x| ≤ 2^1024 scales far below 2^15
	sign := b >> 8 << 7
	if mag := b & 0xFF; mag <= 0x7E {
		return sign | mag
	}
	return sign | 0x7E // above 448, or x was ±inf
}

// toE5M2 rounds x (exact in float64) to E5M2 with .rn.satfinite.
func toE5M2(x float64) uint64 {
	if math.IsNaN(x) {
		return nanF8
	}
	b := encode(x, fmtE5M2, rn)
	if b&0x7F == 0x7C { // rounded to inf, or was inf
		return b&0x80 | 0x7B
	}
	return b
}

// e4m3ToF16 and e5m2ToF16 widen one fp8 byte to f16 bits.
func e4m3ToF16(b uint64) uint64 {
	if b&0x7F == 0x7F {
		return nanF16
	}
	return encode(math.Ldexp(decode(b&0x7F|b&0x80<<1, fmtE4M3s), 8), fmtF16, rn)
}

func e5m2ToF16(b uint64) uint64 {
	h := b & 0xFF << 8 // E5M2 is the upper byte of an f16
	if h&0x7FFF > 0x7C00 {
		return nanF16
	}
	return h
}

// reluF8 clamps a negative fp8 result (sign bit set, not NaN) to +0.
func reluF8(b uint64) uint64 {
	if b&0x80 != 0 && b&0x7F != nanF8 {
		return 0
	}
	return b
}

// cvtFP8 decodes the fp8 forms of cvt; fp is the fp8 part's name.
func (d *decoder) cvtFP8(fp string) error {
	in, o, args := d.in, d.o, d.pi.Args
	in.op, in.class = opALU, ClassConvert
	rnd := o.has("rn")
	sat := o.has("satfinite")
	withRelu := o.has("relu")
	ts := o.types()
	if len(ts) != 1 {
		return fmt.Errorf("bad form")
	}
	toF8, fromF8 := toE4M3, e4m3ToF16
	if fp == "e5m2x2" {
		toF8, fromF8 = toE5M2, e5m2ToF16
	}
	if !rnd {
		return fmt.Errorf("cvt with .%s needs .rn", fp)
	}
	if o.parts[len(o.parts)-1] == fp { // cvt.rn.f16x2.e4m3x2: fp8 source
		if sat || ts[0] != tF16x2 {
			return fmt.Errorf("cvt from .%s converts only to .f16x2 (without .satfinite)", fp)
		}
		if err := d.nargs(2); err != nil {
			return err
		}
		in.fn = func(_ *inst, a, _, _, _ uint64) uint64 {
			return fromF8(a>>8&0xFF)<<16 | fromF8(a&0xFF)
		}
		if withRelu {
			in.fn = relu(in.fn, tF16x2)
		}
		var err error
		if in.d[0], err = d.dstT(args[0], tB32); err != nil {
			return err
		}
		return d.srcs(tB16, args[1:])
	}
	if !sat {
		return fmt.Errorf("cvt to .%s needs .satfinite", fp)
	}
	if o.has("ftz") {
		return fmt.Errorf("cvt to .%s takes no .ftz", fp)
	}
	one := func(x float64) uint64 {
		r := toF8(x)
		if withRelu {
			r = reluF8(r)
		}
		return r
	}
	switch ts[0] {
	case tF32:
		if err := d.nargs(3); err != nil {
			return err
		}
		in.fn = func(in *inst, a, b, _, _ uint64) uint64 {
			return one(fin(in, tF32, a))<<8 | one(fin(in, tF32, b))
		}
	case tF16x2:
		if err := d.nargs(2); err != nil {
			return err
		}
		in.fn = func(_ *inst, a, _, _, _ uint64) uint64 {
			return one(f16(a>>16))<<8 | one(f16(a))
		}
	default:
		return fmt.Errorf("cvt to .%s converts .f32 or .f16x2", fp)
	}
	var err error
	if in.d[0], err = d.dstT(args[0], tB16); err != nil {
		return err
	}
	return d.srcs(ts[0], args[1:])
}
