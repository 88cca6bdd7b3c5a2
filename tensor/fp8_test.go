package tensor

import (
	"math"
	"testing"

	"github.com/gcomp/gcomp/ir"
)

// TestFP8Values pins the two formats' defining values (OCP OFP8; PTX ISA cvt .satfinite).
func TestFP8Values(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, c := range []struct {
		d    ir.DType
		f    float64
		bits uint8
		back float64 // the value bits decode to
	}{
		{ir.F8E4M3, 0, 0x00, 0},
		{ir.F8E4M3, 1, 0x38, 1},
		{ir.F8E4M3, -2, 0xC0, -2},
		{ir.F8E4M3, 448, 0x7E, 448},
		{ir.F8E4M3, 449, 0x7E, 448},
		{ir.F8E4M3, 464, 0x7E, 448}, // the tie above max: satfinite
		{ir.F8E4M3, 1e30, 0x7E, 448},
		{ir.F8E4M3, inf, 0x7E, 448},
		{ir.F8E4M3, -inf, 0xFE, -448},
		{ir.F8E4M3, 0x1p-9, 0x01, 0x1p-9},   // smallest subnormal
		{ir.F8E4M3, 0x1p-10, 0x00, 0},       // half of it: tie to even (zero)
		{ir.F8E4M3, 0x1.8p-9, 0x02, 0x1p-8}, // 1.5 ulp: tie to even (2)
		{ir.F8E4M3, 0x1.01p-10, 0x01, 0x1p-9},
		{ir.F8E4M3, 0x7p-9, 0x07, 0x7p-9}, // largest subnormal
		{ir.F8E4M3, 0x1p-6, 0x08, 0x1p-6}, // smallest normal
		{ir.F8E4M3, 1.0625, 0x38, 1},      // tie between 1 and 1.125: even
		{ir.F8E4M3, 1.1875, 0x3A, 1.25},   // tie between 1.125 and 1.25: even
		{ir.F8E4M3, 15.5, 0x58, 16},       // carries into the next binade
		{ir.F8E4M3, nan, 0x7F, nan},
		{ir.F8E4M3, -nan, 0x7F, nan},
		{ir.F8E5M2, 1, 0x3C, 1},
		{ir.F8E5M2, 57344, 0x7B, 57344},
		{ir.F8E5M2, 61440, 0x7B, 57344}, // the tie above max
		{ir.F8E5M2, inf, 0x7B, 57344},
		{ir.F8E5M2, -inf, 0xFB, -57344},
		{ir.F8E5M2, 0x1p-16, 0x01, 0x1p-16},
		{ir.F8E5M2, 0x1p-17, 0x00, 0},
		{ir.F8E5M2, -0x1p-17, 0x80, math.Copysign(0, -1)},
		{ir.F8E5M2, 1.125, 0x3C, 1}, // tie: even
		{ir.F8E5M2, 1.375, 0x3E, 1.5},
		{ir.F8E5M2, nan, 0x7F, nan},
	} {
		got := FloatToFP8(c.d, c.f)
		if got != c.bits {
			t.Errorf("FloatToFP8(%s, %g) = %#02x, want %#02x", c.d, c.f, got, c.bits)
		}
		back := FP8ToFloat(c.d, c.bits)
		if !(back == c.back && math.Signbit(back) == math.Signbit(c.back) || math.IsNaN(back) && math.IsNaN(c.back)) {
			t.Errorf("FP8ToFloat(%s, %#02x) = %g, want %g", c.d, c.bits, back, c.back)
		}
	}
	// Decoding: E4M3 has no infinities (0x78 is 256); E5M2's 0x7C is inf, 0x7D..0x7F NaN.
	for _, c := range []struct {
		d    ir.DType
		bits uint8
		want float64
	}{
		{ir.F8E4M3, 0x78, 256}, {ir.F8E4M3, 0x7F, nan}, {ir.F8E4M3, 0xFF, nan}, {ir.F8E4M3, 0x80, math.Copysign(0, -1)},
		{ir.F8E5M2, 0x7C, inf}, {ir.F8E5M2, 0xFC, -inf}, {ir.F8E5M2, 0x7D, nan}, {ir.F8E5M2, 0xFE, nan},
	} {
		got := FP8ToFloat(c.d, c.bits)
		if !(got == c.want && math.Signbit(got) == math.Signbit(c.want) || math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("FP8ToFloat(%s, %#02x) = %g, want %g", c.d, c.bits, got, c.want)
		}
	}
}

// TestFP8AllCodes: every non-NaN code converts back to itself, and each rounding lands on the
// nearer neighbour (ties to the even code) across the gap between consecutive codes.
func TestFP8AllCodes(t *testing.T) {
	for _, d := range []ir.DType{ir.F8E4M3, ir.F8E5M2} {
		var prev float64
		for b := 0; b < 0x80; b++ {
			v := FP8ToFloat(d, uint8(b))
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			for _, s := range []float64{1, -1} {
				if got := FloatToFP8(d, s*v); got != uint8(b)|map[bool]uint8{true: 0x80}[s < 0] {
					t.Errorf("%s: FloatToFP8(%g) = %#02x, want %#02x", d, s*v, got, b)
				}
			}
			if b > 0 {
				mid := (prev + v) / 2
				lo, hi := uint8(b-1), uint8(b)
				want := lo
				if lo&1 == 1 {
					want = hi
				}
				for _, c := range []struct {
					f    float64
					want uint8
				}{{mid, want}, {math.Nextafter(mid, 0), lo}, {math.Nextafter(mid, 1e9), hi}} {
					if got := FloatToFP8(d, c.f); got != c.want {
						t.Errorf("%s: FloatToFP8(%g) = %#02x, want %#02x (between %g and %g)", d, c.f, got, c.want, prev, v)
					}
				}
			}
			prev = v
		}
	}
}

func TestFP8Bytes(t *testing.T) {
	for _, d := range []ir.DType{ir.F8E4M3, ir.F8E5M2} {
		ty := ir.T(d, 4)
		x := FromFloats(ty, []float64{1.0625, -1e5, math.NaN(), 0x1p-30})
		if x.F == nil || x.Type.Bytes() != 4 {
			t.Fatalf("%s: FromFloats = %+v", d, x)
		}
		img := x.Bytes()
		y, err := FromBytes(ty, img)
		if err != nil {
			t.Fatal(err)
		}
		if img[2] != 0x7F || img[3] != 0 || y.F[0] != 1 || y.F[1] != -FP8ToFloat(d, fp8Format(d).maxBit) || !math.IsNaN(y.F[2]) {
			t.Errorf("%s: bytes %x, back %v", d, img, y.F)
		}
	}
}
