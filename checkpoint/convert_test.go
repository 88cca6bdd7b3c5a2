package checkpoint

import (
	"encoding/binary"
	"math"
	"math/rand"
	"testing"

	"github.com/gcomp/gcomp/tensor"
)

// TestConvert checks every conversion against the tensor package's rounding: every f16 and bf16
// value widened, random and special f32 values narrowed.
func TestConvert(t *testing.T) {
	half := make([]byte, 2<<16)
	for i := range 1 << 16 {
		binary.LittleEndian.PutUint16(half[2*i:], uint16(i))
	}
	for _, from := range []string{"f16", "bf16"} {
		widen := tensor.F16ToFloat
		if from == "bf16" {
			widen = tensor.BF16ToFloat
		}
		out, err := convert(half, from, "f32")
		if err != nil {
			t.Fatal(err)
		}
		for i := range 1 << 16 {
			got, want := math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:])), float32(widen(uint16(i)))
			if got != want && !(math.IsNaN(float64(got)) && math.IsNaN(float64(want))) {
				t.Fatalf("%s %#04x -> f32 = %g, want %g", from, i, got, want)
			}
		}
		// Through f32 to the other half type, rounded as the tensor package rounds.
		to, narrow := "bf16", tensor.FloatToBF16
		if from == "bf16" {
			to, narrow = "f16", tensor.FloatToF16
		}
		out, err = convert(half, from, to)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 1 << 16 {
			if got, want := binary.LittleEndian.Uint16(out[2*i:]), narrow(widen(uint16(i))); got != want {
				t.Fatalf("%s %#04x -> %s = %#04x, want %#04x", from, i, to, got, want)
			}
		}
	}
	// Lengths that leave a tail after the 4-element words of the bf16 fast path.
	for n := range 10 {
		src := half[2*1000 : 2*(1000+n)]
		out, _ := convert(src, "bf16", "f32")
		for i := range n {
			if got, want := math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:])), float32(tensor.BF16ToFloat(uint16(1000+i))); len(out) != 4*n || got != want {
				t.Fatalf("%d bf16 elements: element %d = %g, want %g", n, i, got, want)
			}
		}
	}
	rng := rand.New(rand.NewSource(1))
	vals := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 65504, 65520, 1e-8, 3.0e38, float32(math.Inf(1)), float32(math.Inf(-1)), 1.00390625, 1.01171875}
	for range 10000 {
		vals = append(vals, math.Float32frombits(rng.Uint32()))
	}
	f32 := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(f32[4*i:], math.Float32bits(v))
	}
	for to, narrow := range map[string]func(float64) uint16{"f16": tensor.FloatToF16, "bf16": tensor.FloatToBF16} {
		out, err := convert(f32, "f32", to)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if got, want := binary.LittleEndian.Uint16(out[2*i:]), narrow(float64(v)); got != want {
				t.Fatalf("f32 %g -> %s = %#04x, want %#04x", v, to, got, want)
			}
		}
	}
	same, err := convert(f32, "f32", "f32")
	if err != nil || string(same) != string(f32) || &same[0] == &f32[0] {
		t.Errorf("f32 -> f32 is not an equal copy")
	}
}
