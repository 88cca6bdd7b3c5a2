package passes

import (
	"math"
	"testing"

	"github.com/gcomp/gcomp/ir"
)

// TestConstantCausal: a folded bool mask is causal exactly when every [L, L] matrix in it is true
// where the column is past the row (torch's ONNX export of masked_fill(~tril(ones))).
func TestConstantCausal(t *testing.T) {
	pattern := func(shape ir.Shape, f func(row, col int) bool) *ir.Value {
		n := shape[len(shape)-1]
		vals := make([]float64, shape.NumElements())
		for i := range vals {
			if f(i/n%shape[len(shape)-2], i%n) {
				vals[i] = 1
			}
		}
		g := ir.NewGraph("m")
		return g.Add("constant", ir.T(ir.Bool, shape...), ir.Attrs{"dtype": "bool", "shape": []int(shape), "value": vals})
	}
	future := func(r, c int) bool { return c > r }
	// additive is an f32 mask: −inf where f says hidden, visible elsewhere (0 except entry 0,0).
	additive := func(shape ir.Shape, f func(row, col int) bool, first float64) *ir.Value {
		v := pattern(shape, f)
		v.Type.DType = ir.F32
		vals := v.Attrs["value"].([]float64)
		for i, x := range vals {
			vals[i] = 0
			if x != 0 {
				vals[i] = math.Inf(-1)
			}
		}
		vals[0] = first
		return v
	}
	for _, c := range []struct {
		name string
		v    *ir.Value
		want bool
	}{
		{"causal 4x4", pattern(ir.Shape{4, 4}, future), true},
		{"causal over batch and heads", pattern(ir.Shape{2, 3, 5, 5}, future), true},
		{"tril itself (the visible keys)", pattern(ir.Shape{4, 4}, func(r, c int) bool { return c <= r }), false},
		{"shifted diagonal", pattern(ir.Shape{4, 4}, func(r, c int) bool { return c > r+1 }), false},
		{"one head differs", func() *ir.Value {
			v := pattern(ir.Shape{2, 4, 4}, future)
			v.Attrs["value"].([]float64)[16] = 1 // second matrix, row 0, col 0
			return v
		}(), false},
		{"not square", pattern(ir.Shape{4, 5}, future), false},
		{"a splat", func() *ir.Value {
			g := ir.NewGraph("m")
			return g.Add("constant", ir.T(ir.Bool, 4, 4), ir.Attrs{"dtype": "bool", "shape": []int{4, 4}, "value": []float64{1}})
		}(), false},
		{"f32 0/1 values", func() *ir.Value {
			v := pattern(ir.Shape{4, 4}, future)
			v.Type.DType = ir.F32
			return v
		}(), false},
		{"additive f32: -inf past the row, 0 elsewhere", additive(ir.Shape{2, 4, 4}, future, 0), true},
		{"additive with -1e9 instead of -inf", func() *ir.Value {
			v := additive(ir.Shape{4, 4}, future, 0)
			for i, x := range v.Attrs["value"].([]float64) {
				if math.IsInf(x, -1) {
					v.Attrs["value"].([]float64)[i] = -1e9
				}
			}
			return v
		}(), false},
		{"additive with a nonzero visible entry", additive(ir.Shape{4, 4}, future, 0.5), false},
		{"i32 predicate", func() *ir.Value {
			v := pattern(ir.Shape{4, 4}, future)
			v.Type.DType = ir.I32
			return v
		}(), false},
	} {
		if got := constantCausal(c.v); got != c.want {
			t.Errorf("%s: constantCausal = %v, want %v", c.name, got, c.want)
		}
	}
}
