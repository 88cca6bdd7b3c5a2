package frontend_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// UpdateSlice writes each sequence's rows at its own position, dims counted from the end too,
// and a wrong call fails at the caller's line with the op's reason.
func TestUpdateSlice(t *testing.T) {
	g, err := frontend.Build("upd", func(b *frontend.Builder) {
		cache := b.Input("cache", ir.F32, 2, 3, 2)
		x := b.Input("x", ir.F32, 2, 1, 2)
		pos := b.Input("pos", ir.I32, 2)
		b.Output("y", cache.UpdateSlice(-2, x, pos))
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := ref.Run(g, map[string]*tensor.Tensor{
		"cache": tensor.FromFloats(ir.T(ir.F32, 2, 3, 2), []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}),
		"x":     tensor.FromFloats(ir.T(ir.F32, 2, 1, 2), []float64{-1, -2, -3, -4}),
		"pos":   tensor.FromFloats(ir.T(ir.I32, 2), []float64{2, 0}),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0, 1, 2, 3, -1, -2, -3, -4, 8, 9, 10, 11}
	for i, w := range want {
		if out["y"].F[i] != w {
			t.Fatalf("y = %v, want %v", out["y"].F, want)
		}
	}
	for _, tc := range []struct {
		name string
		f    func(b *frontend.Builder)
		want string
	}{
		{"batch dim", func(b *frontend.Builder) {
			b.Output("y", b.Input("c", ir.F32, 2, 3).UpdateSlice(0, b.Input("x", ir.F32, 1, 3), b.Input("p", ir.I64, 2)))
		}, "axis 0"},
		{"dim out of range", func(b *frontend.Builder) {
			b.Output("y", b.Input("c", ir.F32, 2, 3).UpdateSlice(2, b.Input("x", ir.F32, 2, 1), b.Input("p", ir.I64, 2)))
		}, "dim 2 out of range"},
		{"float positions", func(b *frontend.Builder) {
			b.Output("y", b.Input("c", ir.F32, 2, 3).UpdateSlice(1, b.Input("x", ir.F32, 2, 1), b.Input("p", ir.F32, 2)))
		}, "start must be integers [2]"},
	} {
		_, err := frontend.Build("bad", tc.f)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "update_test.go") {
			t.Errorf("%s: err = %v, want %q at this file's line", tc.name, err, tc.want)
		}
	}
}
