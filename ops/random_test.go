package ops

import (
	"math"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// Random123's known-answer vectors for philox4x32 10 (kat_vectors).
func TestPhiloxKnownAnswers(t *testing.T) {
	tests := []struct {
		c    [4]uint32
		k    [2]uint32
		want [4]uint32
	}{
		{[4]uint32{}, [2]uint32{}, [4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{[4]uint32{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, [2]uint32{0xffffffff, 0xffffffff},
			[4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{[4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, [2]uint32{0xa4093822, 0x299f31d0},
			[4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	}
	for _, tt := range tests {
		if got := Philox4x32(tt.c, tt.k); got != tt.want {
			t.Errorf("Philox4x32(%08x, %08x) = %08x, want %08x", tt.c, tt.k, got, tt.want)
		}
	}
}

// The op's elements are the documented words of the documented counters, and their mean and
// variance are a uniform's within 4σ over 2^20 draws.
func TestPhiloxUniform(t *testing.T) {
	const n = 1 << 20
	key := tensor.New(ir.T(ir.I64))
	key.I[0] = -2 // the bits 0xffff_ffff_ffff_fffe: k0 = 0xfffffffe, k1 = 0xffffffff
	v := &ir.Value{Op: "philox_uniform", Type: ir.T(ir.F32, 1024, 1024), Attrs: ir.Attrs{"shape": []int{1024, 1024}, "stream": 5}}
	u, err := Eval(v, []*tensor.Tensor{key})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1, 7, n - 1} {
		w := Philox4x32([4]uint32{uint32(i / 4), 0, 5, 0}, [2]uint32{0xfffffffe, 0xffffffff})[i%4]
		if want := float64(w>>8) / (1 << 24); u.F[i] != want {
			t.Errorf("element %d = %v, want %v", i, u.F[i], want)
		}
	}
	sum, sq := 0.0, 0.0
	for _, x := range u.F {
		if !(x >= 0 && x < 1) {
			t.Fatalf("%v outside [0, 1)", x)
		}
		sum += x
		sq += (x - 0.5) * (x - 0.5)
	}
	// mean: σ = √(1/12/n); variance of (x-½)²: 1/80 − 1/144.
	if d := math.Abs(sum/n - 0.5); d > 4*math.Sqrt(1.0/12/n) {
		t.Errorf("mean %v, want 0.5 within 4σ", sum/n)
	}
	if d := math.Abs(sq/n - 1.0/12); d > 4*math.Sqrt((1.0/80-1.0/144)/n) {
		t.Errorf("variance %v, want 1/12 within 4σ", sq/n)
	}
}
