package tensor

import (
	"math"
	"testing"
)

func TestF16(t *testing.T) {
	tests := []struct {
		in   float64
		bits uint16
	}{
		{0, 0x0000},
		{math.Copysign(0, -1), 0x8000},
		{1, 0x3c00},
		{-2, 0xc000},
		{65504, 0x7bff},                          // largest normal
		{65519.99, 0x7bff},                       // just below the rounding midpoint to inf
		{65520, 0x7c00},                          // midpoint rounds to even: inf
		{math.Inf(1), 0x7c00},                    // inf
		{math.Ldexp(1, -24), 0x0001},             // smallest subnormal
		{math.Ldexp(1, -25), 0x0000},             // half of it: tie to even (0)
		{math.Ldexp(1.5, -25), 0x0001},           // above the tie
		{math.Ldexp(3, -25), 0x0002},             // 1.5 ulp ties to even (2)
		{math.Ldexp(1, -14), 0x0400},             // smallest normal
		{math.Ldexp(1023.5, -24), 0x0400},        // subnormal rounding up into the normals
		{1 + math.Ldexp(1, -11), 0x3c00},         // tie between 1 and next: even (1)
		{1 + 3*math.Ldexp(1, -11), 0x3c02},       // tie: even (next-next)
		{1 + math.Ldexp(1, -11) + 1e-12, 0x3c01}, // just above the tie
		{0.1, 0x2e66},
	}
	for _, tc := range tests {
		if got := FloatToF16(tc.in); got != tc.bits {
			t.Errorf("FloatToF16(%v) = %#04x, want %#04x", tc.in, got, tc.bits)
		}
	}
	if !math.IsNaN(F16ToFloat(FloatToF16(math.NaN()))) {
		t.Errorf("NaN did not survive f16")
	}
	// Every finite f16 round-trips exactly.
	for h := 0; h < 1<<16; h++ {
		f := F16ToFloat(uint16(h))
		if math.IsNaN(f) {
			continue
		}
		if got := FloatToF16(f); got != uint16(h) {
			t.Fatalf("round trip %#04x -> %v -> %#04x", h, f, got)
		}
	}
}

func TestBF16(t *testing.T) {
	tests := []struct {
		in   float64
		bits uint16
	}{
		{1, 0x3f80},
		{-1, 0xbf80},
		{1 + math.Ldexp(1, -8), 0x3f80},   // tie: even
		{1 + 3*math.Ldexp(1, -8), 0x3f82}, // tie: even
		{1 + math.Ldexp(1, -8) + math.Ldexp(1, -40), 0x3f81}, // a bit beyond float32 breaks the tie
		{math.Inf(-1), 0xff80},
		{1e300, 0x7f80},
		{3.0e38, 0x7f62},
	}
	for _, tc := range tests {
		if got := FloatToBF16(tc.in); got != tc.bits {
			t.Errorf("FloatToBF16(%v) = %#04x, want %#04x", tc.in, got, tc.bits)
		}
	}
	for h := 0; h < 1<<16; h++ {
		f := BF16ToFloat(uint16(h))
		if math.IsNaN(f) {
			continue
		}
		if got := FloatToBF16(f); got != uint16(h) {
			t.Fatalf("round trip %#04x -> %v -> %#04x", h, f, got)
		}
	}
}
