package frontend_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/internal/reftest"
	"github.com/gcomp/gcomp/ir"
)

// A linear layer over an int4 weight with zero points: the DSL's Dequantize gives the reference
// what the layout in docs/ops.md says, and the graph survives the text format.
func TestDequantizeLinear(t *testing.T) {
	const n, k, group = 3, 8, 4
	q := []float64{0x21, 0x43, 0x65, 0x87, 0xf0, 0x0f, 0x99, 0x00, 0x12, 0x34, 0x56, 0x78}
	scale := []float64{0.5, 2, -1, 0.25, 1, 3}
	zero := []float64{1, 8, 0, 15, 9, 2}
	model := func(b *frontend.Builder) {
		x := b.Input("x", f32, 2, k)
		w := frontend.Dequantize(b.Input("q", frontend.U8, n, k/2), b.Input("scale", f32, n, k/group),
			b.Input("zero", frontend.U8, n, k/group), frontend.Quant{Bits: 4, Group: group, Axis: 1})
		b.Output("y", frontend.Linear(x, w, nil))
	}
	got := reftest.Run(t, model, map[string][]float64{"q": q, "scale": scale, "zero": zero})
	w := make([]float64, n*k)
	for i := range w {
		r, c := i/k, i%k
		u := int(q[r*k/2+c/2]) >> (4 * (c % 2)) & 15
		g := r*k/group + c/group
		w[i] = float64(u-int(zero[g])) * scale[g]
	}
	reftest.Near(t, "y", got["y"], reftest.Linear(got["x"], w, nil, k, n), 1e-5)

	g, err := frontend.Build("m", model)
	if err != nil {
		t.Fatal(err)
	}
	g2, err := ir.Parse("m.gir", []byte(g.String()))
	if err != nil {
		t.Fatal(err)
	}
	if g2.String() != g.String() || !strings.Contains(g.String(), "dequantize(") {
		t.Errorf("the text form does not round-trip:\n%s\n%s", g, g2)
	}
}

func TestDequantizeErrors(t *testing.T) {
	_, err := frontend.Build("m", func(b *frontend.Builder) {
		frontend.Dequantize(b.Input("q", frontend.I8, 2, 6), b.Input("s", f32, 2, 2), nil, frontend.Quant{Bits: 8, Group: 4, Axis: 1})
	})
	if err == nil || !strings.Contains(err.Error(), "group 4 does not divide the 6 elements of axis 1") || !strings.Contains(err.Error(), "quant_test.go:") {
		t.Errorf("error %v, want the group's message at the caller's line", err)
	}
}
