package frontend_test

import (
	"math"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// A mean over a symbolic dim divides by the run's count, not the bound's: its graph divides the
// sum by a sum of ones over the same dims, and the reference interpreter at each size gives the
// mean of that many elements. A mean over static dims of a symbolic tensor divides by a constant.
func TestSymbolicMean(t *testing.T) {
	g, err := frontend.Build("m", func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, b.Dim("batch", 1, 8), b.Dim("seq", 1, 5), 3)
		b.Output("batch", x.Mean(0))
		b.Output("all", x.Mean())
		b.Output("kept", x.MeanKeepDim(0, 1))
		b.Output("static", x.Mean(2))
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Lookup("static"); got != nil && got.Op == "div" && got.Args[1].Op == "reduce_sum" {
		t.Errorf("a mean over a static dim sums a count: %s", g.Format(got))
	}
	for _, sz := range [][2]int{{1, 1}, {3, 5}, {8, 2}} {
		n, s := sz[0], sz[1]
		vals := make([]float64, n*s*3)
		for i := range vals {
			vals[i] = float64(i%7) - 2.5
		}
		x := tensor.FromFloats(ir.T(ir.F32, n, s, 3), vals)
		out, err := ref.Run(g, map[string]*tensor.Tensor{"x": x}, nil)
		if err != nil {
			t.Fatal(err)
		}
		mean := func(pick func(b, q, c int) bool) float64 {
			sum, cnt := 0.0, 0
			for b := range n {
				for q := range s {
					for c := range 3 {
						if pick(b, q, c) {
							sum += vals[(b*s+q)*3+c]
							cnt++
						}
					}
				}
			}
			return sum / float64(cnt)
		}
		check := func(name string, i int, want float64) {
			if got := out[name].At(i); math.Abs(got-want) > 1e-5 {
				t.Errorf("batch %d, seq %d: %s[%d] = %v, want %v", n, s, name, i, got, want)
			}
		}
		check("batch", 3*(s-1)+2, mean(func(b, q, c int) bool { return q == s-1 && c == 2 }))
		check("all", 0, mean(func(b, q, c int) bool { return true }))
		check("kept", 1, mean(func(b, q, c int) bool { return c == 1 }))
		check("static", s*(n-1), mean(func(b, q, c int) bool { return b == n-1 && q == 0 }))
	}
}
