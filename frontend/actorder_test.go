package frontend_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/internal/reftest"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// A weight stored with its input channels permuted (Quant.Permuted, GPTQ's act-order): Linear
// gathers its input by w_perm, so the product is x·wᵀ of the weight whose input channel perm[j]
// is the stored column j, for inputs of rank 1 to 3.
func TestPermutedLinear(t *testing.T) {
	const n, k, group = 3, 8, 4
	perm := []float64{5, 0, 7, 2, 1, 6, 3, 4}
	q := []float64{1, 2, 3, 4, 5, 6, 7, 8, 200, 9, 0, 255, 17, 30, 41, 52, 60, 70, 80, 90, 100, 110, 120, 130}
	scale := []float64{0.5, 2, -1, 0.25, 1, 3}
	zero := []float64{1, 8, 0, 15, 9, 2}
	rule := func(name string, _ ir.Type) *frontend.Quant {
		if name == "w" {
			return &frontend.Quant{Bits: 8, Group: group, Axis: 1, Permuted: true}
		}
		return nil
	}
	// The weight in the original channel order, from the layout's formula.
	w := make([]float64, n*k)
	for r := range n {
		for j := range k {
			g := r*k/group + j/group
			w[r*k+int(perm[j])] = (q[r*k+j] - zero[g]) * scale[g]
		}
	}
	params := map[string]*tensor.Tensor{
		"w_q": tensor.FromFloats(ir.T(ir.U8, n, k), q), "w_scale": tensor.FromFloats(ir.T(ir.F32, n, k/group), scale),
		"w_zero": tensor.FromFloats(ir.T(ir.U8, n, k/group), zero), "w_perm": tensor.FromFloats(ir.T(ir.I32, k), perm),
	}
	for _, shape := range [][]int{{k}, {2, k}, {2, 1, k}} {
		g, err := frontend.Build("m", func(b *frontend.Builder) {
			x := b.Input("x", ir.F32, shape...)
			b.Output("y", frontend.Linear(x, b.Param("w", ir.T(ir.F32, n, k), frontend.DefaultUniform(k)), nil))
		}, frontend.WithQuantizedParams(rule))
		if err != nil {
			t.Fatal(err)
		}
		x := tensor.RandomInput(g.Lookup("x"), 1)
		out, err := ref.Run(g, map[string]*tensor.Tensor{"x": x}, params)
		if err != nil {
			t.Fatal(err)
		}
		if got := out["y"].Type.Shape; len(got) != len(shape) || got[len(got)-1] != n {
			t.Fatalf("x %v: y is %v", shape, got)
		}
		reftest.Near(t, "y", reftest.Floats(out["y"]), reftest.Linear(reftest.Floats(x), w, nil, k, n), 1e-5)
	}
}

// A permuted weight is read by Linear only; anything else is one error naming the operand, and
// Permuted needs a linear layer's weight ([N, K], axis 1).
func TestPermutedWeightErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		shape []int
		axis  int
		use   func(x, w *frontend.Tensor) *frontend.Tensor
		want  string
	}{
		{"transpose", []int{6, 8}, 1, func(x, w *frontend.Tensor) *frontend.Tensor { return x.Matmul(w.T()) }, "transpose: parameter w f32[6,8] is stored with its input channels permuted (act-order): only Linear reads it"},
		{"add", []int{6, 8}, 1, func(x, w *frontend.Tensor) *frontend.Tensor { return w.Add(w) }, "only Linear reads it"},
		{"axis 0", []int{6, 8}, 0, func(x, w *frontend.Tensor) *frontend.Tensor { return frontend.Linear(x, w, nil) }, "cannot store it quantized as 8 bits in groups of 2 along axis 0"},
		{"rank 3", []int{2, 6, 8}, 2, func(x, w *frontend.Tensor) *frontend.Tensor { return w }, "cannot store it quantized"},
	} {
		_, err := frontend.Build("m", func(b *frontend.Builder) {
			x := b.Input("x", ir.F32, 2, 8)
			w := b.Param("w", ir.T(ir.F32, c.shape...), frontend.Zeros())
			b.Output("y", c.use(x, w))
		}, frontend.WithQuantizedParams(func(string, ir.Type) *frontend.Quant {
			return &frontend.Quant{Bits: 8, Group: 2, Axis: c.axis, Permuted: true}
		}))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}
