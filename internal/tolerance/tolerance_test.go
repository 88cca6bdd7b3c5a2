package tolerance

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gcomp/gcomp/ir"
)

func TestTolerance(t *testing.T) {
	tests := []struct {
		d        ir.DType
		tf32     bool
		k        int
		rel, abs float64
	}{
		{ir.F32, false, 1, 1e-5, 1e-5},
		{ir.F32, false, 0, 1e-5, 1e-5},
		{ir.F32, false, 1024, 1e-5, 32e-5},
		{ir.F32, true, 64, 5e-3, 40e-3},
		{ir.F16, false, 16, 2e-2, 8e-2},
		{ir.BF16, true, 4, 2e-2, 4e-2}, // tf32 concerns f32 only
		{ir.F64, false, 1, 1e-12, 1e-12},
		{ir.I32, false, 100, 0, 0},
		{ir.Bool, false, 1, 0, 0},
	}
	for _, tc := range tests {
		rel, abs := Tolerance(tc.d, tc.tf32, tc.k)
		if rel != tc.rel || math.Abs(abs-tc.abs) > 1e-15 {
			t.Errorf("Tolerance(%s, %v, %d) = %g, %g; want %g, %g", tc.d, tc.tf32, tc.k, rel, abs, tc.rel, tc.abs)
		}
	}
}

func TestWithin(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	tests := []struct {
		got, want, rel, abs float64
		ok                  bool
	}{
		{1, 1, 0, 0, true},
		{1 + 1e-6, 1, 1e-5, 0, true},
		{1 + 2e-5, 1, 1e-5, 0, false},
		{1e-4, 0, 1e-5, 1e-3, true}, // the floor covers a cancelled result
		{2e-3, 0, 1e-5, 1e-3, false},
		{-100.0009, -100, 1e-5, 0, true},
		{nan, nan, 1, 1, false}, // NaN never passes
		{nan, 1, 1, 1, false},
		{1, nan, 1, 1, false},
		{inf, inf, 1e-5, 1, true},
		{-inf, inf, 1e-5, 1, false},
		{3e38, inf, 1e-5, 1, false},
		{inf, 3e38, 1e-5, 1, false},
	}
	for _, tc := range tests {
		if ok := Within(tc.got, tc.want, tc.rel, tc.abs); ok != tc.ok {
			t.Errorf("Within(%g, %g, %g, %g) = %v, want %v", tc.got, tc.want, tc.rel, tc.abs, ok, tc.ok)
		}
	}
}

func TestScale(t *testing.T) {
	for _, tc := range []struct{ abs, a, b, want float64 }{
		{1e-5, 0.5, 0.25, 1e-5}, {1e-5, 2, 1, 2e-5}, {1e-5, 3, 4, 12e-5}, {1e-5, 4, 0.5, 2e-5},
	} {
		if got := Scale(tc.abs, tc.a, tc.b); math.Abs(got-tc.want) > 1e-18 {
			t.Errorf("Scale(%g, %g, %g) = %g, want %g", tc.abs, tc.a, tc.b, got, tc.want)
		}
	}
}

// The floor is principled: f32 dot products of random unit-scale operands summed in ascending
// order in f32 stay within it against the f64 sum rounded once, for contractions up to 16384.
func TestFloorHoldsForF32Accumulation(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, k := range []int{1, 7, 64, 1024, 4096, 16384} {
		rel, abs := Tolerance(ir.F32, false, k)
		for trial := range 20 {
			var acc float32
			var exact float64
			for range k {
				a, b := float32(2*r.Float64()-1), float32(2*r.Float64()-1)
				acc = float32(float64(acc) + float64(a)*float64(b)) // one FFMA rounding
				exact += float64(a) * float64(b)
			}
			want := float64(float32(exact))
			if !Within(float64(acc), want, rel, abs) {
				t.Errorf("k=%d trial %d: f32 sum %g vs %g exceeds rel %g abs %g", k, trial, acc, want, rel, abs)
			}
		}
	}
}

// Agree is Within with ops.md's special values: NaN agrees with NaN only, and zeros must have
// the same sign.
func TestAgree(t *testing.T) {
	nan, neg0 := math.NaN(), math.Copysign(0, -1)
	tests := []struct {
		got, want float64
		ok        bool
	}{
		{nan, nan, true},
		{nan, 1, false},
		{1, nan, false},
		{neg0, neg0, true},
		{0, 0, true},
		{neg0, 0, false},
		{0, neg0, false},
		{1e-9, 0, true}, // not a zero: the floor judges it
		{1 + 1e-6, 1, true},
		{1 + 1e-4, 1, false},
	}
	for _, tc := range tests {
		if ok := Agree(tc.got, tc.want, 1e-5, 1e-5); ok != tc.ok {
			t.Errorf("Agree(%g, %g) = %v, want %v", tc.got, tc.want, ok, tc.ok)
		}
	}
}

// Precision is the least precise float type a result is computed in; inputs are data.
func TestPrecision(t *testing.T) {
	g := ir.NewGraph("g")
	h := g.Input("h", ir.T(ir.F16, 2), nil)
	x := g.Input("x", ir.T(ir.F32, 2), nil)
	e := g.Add("exp", ir.T(ir.F16, 2), nil, h)
	e64 := g.Add("cast", ir.T(ir.F64, 2), ir.Attrs{"to": ir.F64}, e)
	h64 := g.Add("cast", ir.T(ir.F64, 2), ir.Attrs{"to": ir.F64}, h)
	x64 := g.Add("cast", ir.T(ir.F64, 2), ir.Attrs{"to": ir.F64}, x)
	s := g.Add("exp", ir.T(ir.F32, 2), nil, x)
	m := g.Add("add", ir.T(ir.F64, 2), nil, x64, g.Add("cast", ir.T(ir.F64, 2), ir.Attrs{"to": ir.F64}, s))
	b := g.Add("cast", ir.T(ir.BF16, 2), ir.Attrs{"to": ir.BF16}, x)
	i := g.Add("cast", ir.T(ir.I32, 2), ir.Attrs{"to": ir.I32}, e)
	tests := []struct {
		v    *ir.Value
		want ir.DType
	}{
		{e64, ir.F16}, {h64, ir.F64}, {x64, ir.F64}, {m, ir.F32}, {s, ir.F32}, {b, ir.BF16}, {i, ir.I32}, {x, ir.F32},
	}
	for _, tc := range tests {
		if got := Precision(tc.v); got != tc.want {
			t.Errorf("Precision(%s) = %s, want %s", g.Format(tc.v), got, tc.want)
		}
	}
}
