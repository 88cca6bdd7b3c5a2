package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Round-to-nearest: every weight lands within half a step of its value (plus what rounding the
// scale to f16 moves the grid's far end), the stored layer reads back to exactly the weights
// Quantize dequantized, and smaller groups and more bits quantize more finely.
func TestQuantize(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, k = 16, 256
	w := make([]float32, n*k)
	for i := range w {
		w[i] = float32(rng.NormFloat64() * 0.05)
	}
	for i := range 64 { // an all-zero row start, and a row of one sign
		w[i] = 0
		w[k+i] = float32(math.Abs(float64(w[k+i])))
	}
	rms := map[string]float64{}
	for _, bits := range []int{4, 8} {
		for _, group := range []int{-1, 32, 64, 128} {
			for _, sym := range []bool{false, true} {
				name := fmt.Sprintf("int%d_group%d_sym%v", bits, group, sym)
				t.Run(name, func(t *testing.T) {
					l, err := Quantize(w, n, k, bits, group, sym)
					if err != nil {
						t.Fatal(err)
					}
					deq := l.Dequantize()
					slack := 0.5 + float64(int(1)<<bits-1)*0x1p-11
					var sq float64
					for i, v := range deq {
						r, c := i/k, i%k
						s := float64(l.Scales[r*l.G+int(l.Group[c])])
						d := math.Abs(float64(v) - float64(w[i]))
						if d > slack*s*(1+1e-6) {
							t.Fatalf("weight [%d, %d] = %v dequantizes to %v: off by %.3g steps", r, c, w[i], v, d/s)
						}
						sq += d * d
					}
					rms[name] = math.Sqrt(sq / float64(len(w)))
					if sym {
						for _, z := range l.Zeros {
							if int(z) != 1<<(bits-1) {
								t.Fatalf("symmetric zero point %d", z)
							}
						}
					}
					f := Format{Method: "gptq", Bits: bits, GroupSize: group, Sym: sym}
					packed, err := Pack(f, l)
					if err != nil {
						t.Fatal(err)
					}
					back, err := Unpack(f, Packed{File: "f", Name: "l", Tensors: packed}, n, k)
					if err != nil {
						t.Fatal(err)
					}
					if got := back.Dequantize(); !slices.Equal(got, deq) {
						t.Fatal("the stored layer reads back to other weights")
					}
				})
			}
		}
	}
	for _, pair := range [][2]string{
		{"int4_group32_symfalse", "int4_group-1_symfalse"},
		{"int4_group32_symfalse", "int4_group128_symfalse"},
		{"int8_group-1_symtrue", "int4_group32_symtrue"},
	} {
		if fine, coarse := rms[pair[0]], rms[pair[1]]; !(fine > 0 && fine < coarse) {
			t.Errorf("%s's error %.3g is not below %s's %.3g", pair[0], fine, pair[1], coarse)
		}
	}
}

// Edge sizes and bad weights.
func TestQuantizeEdges(t *testing.T) {
	for _, tc := range []struct {
		name       string
		w          []float32
		n, k, bits int
		want       string
	}{
		{"no rows", nil, 0, 64, 4, ""},
		{"no columns", nil, 8, 0, 4, ""},
		{"tiny weights", []float32{1e-12, -1e-12, 0, 0, 0, 0, 0, 0}, 1, 8, 8, ""},
		{"nan", []float32{0, float32(math.NaN())}, 1, 2, 4, "weight [0, 1] is NaN"},
		{"inf", []float32{float32(math.Inf(-1)), 0}, 1, 2, 8, "weight [0, 0] is -Inf"},
		{"too wide", []float32{-1e30, 1e30}, 1, 2, 4, "too wide for an f16 scale"},
		{"bits 3", []float32{0}, 1, 1, 3, "gptq bits 3 is not supported"},
		{"short", []float32{0}, 2, 2, 4, "1 weights for a [2, 2] layer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Quantize(tc.w, tc.n, tc.k, tc.bits, -1, false)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if l.G != 1 || len(l.Q) != tc.n*tc.k || len(l.Scales) != tc.n {
				t.Fatalf("layer %d groups, %d values, %d scales", l.G, len(l.Q), len(l.Scales))
			}
			deq := l.Dequantize()
			for i, v := range deq {
				if math.Abs(float64(v-tc.w[i])) > 1e-7 {
					t.Errorf("weight %d: %v for %v", i, v, tc.w[i])
				}
			}
			f := Format{Method: "gptq", Bits: tc.bits, GroupSize: -1}
			if f.CheckSizes(tc.n, tc.k) != nil {
				return
			}
			packed, err := Pack(f, l)
			if err != nil {
				t.Fatal(err)
			}
			back, err := Unpack(f, Packed{File: "f", Name: "l", Tensors: packed}, tc.n, tc.k)
			if err != nil || !slices.Equal(back.Dequantize(), deq) {
				t.Fatalf("packed and read back: %v", err)
			}
		})
	}
}
