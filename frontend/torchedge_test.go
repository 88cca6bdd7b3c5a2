package frontend_test

import (
	"math"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/internal/reftest"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes/autodiff"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// valueAndGrad builds y = f(x) and loss = Σ y·u, and returns y and d loss/d x on the reference
// interpreter.
func valueAndGrad(t *testing.T, dt ir.DType, shape []int, x, u []float64, f func(*frontend.Tensor) *frontend.Tensor) (y, gx []float64) {
	t.Helper()
	g, err := frontend.Build("m", func(b *frontend.Builder) {
		in := b.Input("x", dt, shape...)
		out := f(in)
		b.Output("y", out)
		b.Output("loss", out.Mul(b.Tensor(u, dt, out.Shape()...)).Sum())
	})
	if err != nil {
		t.Fatal(err)
	}
	gg, err := autodiff.Grad(g, "loss", []string{"x"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ref.Run(gg, map[string]*tensor.Tensor{"x": tensor.FromFloats(ir.T(dt, shape...), x)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return reftest.Floats(got["y"]), reftest.Floats(got[autodiff.GradPrefix+"x"])
}

// TestHardtanhSignedZero: a zero at a bound of 0 keeps its sign, as PyTorch's clamp does
// (relu6(-0) = -0), and the gradient at a bound is 0, as hardtanh_backward's.
func TestHardtanhSignedZero(t *testing.T) {
	negZero := math.Copysign(0, -1)
	x := []float64{negZero, 0, -1, 0.5, 7, math.Inf(-1), math.NaN()}
	u := []float64{1, 1, 1, 1, 1, 1, 1}
	for _, tc := range []struct {
		name   string
		f      func(*frontend.Tensor) *frontend.Tensor
		y, grd []float64
	}{
		{"relu6", (*frontend.Tensor).Relu6, []float64{negZero, 0, 0, 0.5, 6, 0, math.NaN()}, []float64{0, 0, 0, 1, 0, 0, 0}},
		{"hardtanh(-1, 0)", func(x *frontend.Tensor) *frontend.Tensor { return frontend.Hardtanh(x, -1, 0) },
			[]float64{negZero, 0, -1, 0, 0, -1, math.NaN()}, []float64{0, 0, 0, 0, 0, 0, 0}},
		{"hardtanh(-2, 3)", func(x *frontend.Tensor) *frontend.Tensor { return frontend.Hardtanh(x, -2, 3) },
			[]float64{negZero, 0, -1, 0.5, 3, -2, math.NaN()}, []float64{1, 1, 1, 1, 0, 0, 0}},
	} {
		for _, dt := range []ir.DType{ir.F32, ir.F16, ir.BF16} {
			y, gx := valueAndGrad(t, dt, []int{len(x)}, x, u, tc.f)
			for i := range x {
				same := y[i] == tc.y[i] && math.Signbit(y[i]) == math.Signbit(tc.y[i]) || math.IsNaN(y[i]) && math.IsNaN(tc.y[i])
				if !same {
					t.Errorf("%s %s: y(%v) = %v, want %v", tc.name, dt, x[i], y[i], tc.y[i])
				}
				if !math.IsNaN(x[i]) && gx[i] != tc.grd[i] {
					t.Errorf("%s %s: gradient at %v = %v, want %v", tc.name, dt, x[i], gx[i], tc.grd[i])
				}
			}
		}
	}
}

// TestAdaptiveMaxPoolTies: where a window holds its maximum more than once, the gradient goes to
// the first in row-major order (PyTorch's index: the first row holding it, that row's first),
// not shared among them; the windows of a 3×5 input pooled to 2×2 overlap and are uneven.
func TestAdaptiveMaxPoolTies(t *testing.T) {
	x := []float64{
		0, 0, 9, 1, 9,
		9, 9, 0, 0, 1,
		5, 9, 2, 9, 9,
	}
	// Windows: rows [0,2) and [1,3), columns [0,3) and [2,5).
	wantY := []float64{9, 9, 9, 9}
	u := []float64{1, 10, 100, 1000}
	wantG := []float64{
		0, 0, 11, 0, 0,
		100, 0, 0, 0, 0,
		0, 0, 0, 1000, 0,
	}
	for _, dt := range []ir.DType{ir.F32, ir.BF16} {
		y, gx := valueAndGrad(t, dt, []int{1, 1, 3, 5}, x, u, func(x *frontend.Tensor) *frontend.Tensor {
			return frontend.AdaptiveMaxPool2d(x, [2]int{2, 2})
		})
		reftest.Near(t, dt.String()+" y", y, wantY, 0)
		reftest.Near(t, dt.String()+" d loss/d x", gx, wantG, 0)
	}
}
