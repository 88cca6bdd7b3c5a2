package frontend_test

import (
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// BatchNorm in training mode over a symbolic batch: the batch mean and the unbiased variance
// count the run's N·H·W elements per channel (PyTorch's n/(n−1) at the run's n, not the
// bound's), and a range reaching fewer than 2 elements per channel is refused at build time, as
// a static batch of 1 over 1×1 positions is.
func TestSymbolicBatchNormTrain(t *testing.T) {
	g, err := frontend.Build("bn", func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, b.Dim("batch", 1, 8), 3, 2, 1)
		_, mean, unbiased := frontend.BatchNormTrain(x, nil, nil, 1e-5)
		b.Output("mean", mean)
		b.Output("var", unbiased)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 3, 8} {
		vals := make([]float64, n*3*2)
		for i := range vals {
			vals[i] = float64(i%5)*0.75 - float64(i%3)
		}
		out, err := ref.Run(g, map[string]*tensor.Tensor{"x": tensor.FromFloats(ir.T(ir.F32, n, 3, 2, 1), vals)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for c := range 3 {
			var xs []float64
			for b := range n {
				xs = append(xs, vals[(b*3+c)*2], vals[(b*3+c)*2+1])
			}
			m, ss := 0.0, 0.0
			for _, v := range xs {
				m += v
			}
			m /= float64(len(xs))
			for _, v := range xs {
				ss += (v - m) * (v - m)
			}
			want := ss / float64(len(xs)-1)
			if got := out["mean"].At(c); math.Abs(got-m) > 1e-5 {
				t.Errorf("batch %d: mean[%d] = %v, want %v", n, c, got, m)
			}
			if got := out["var"].At(c); math.Abs(got-want) > 1e-5*(1+want) {
				t.Errorf("batch %d: unbiased var[%d] = %v, want %v", n, c, got, want)
			}
		}
	}
	for _, tc := range []struct {
		lo, h int
		want  string
	}{
		{1, 1, "batch_norm: expected more than 1 value per channel when training"},
		{2, 1, ""},
		{1, 2, ""},
	} {
		_, err := frontend.Build("bn", func(b *frontend.Builder) {
			x := b.Input("x", ir.F32, b.Dim("batch", tc.lo, 8), 3, tc.h)
			y, _, _ := frontend.BatchNormTrain(x, nil, nil, 1e-5)
			b.Output("y", y)
		})
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("batch in [%d, 8], %d positions: Build = %v, want %q", tc.lo, tc.h, err, tc.want)
		}
	}
}
