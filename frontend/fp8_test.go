package frontend_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// TestFP8: fp8 is cast to and from, multiplied into f16, and refused by arithmetic.
func TestFP8(t *testing.T) {
	g, err := frontend.Build("m", func(b *frontend.Builder) {
		x := b.Input("x", frontend.F32, 2, 3)
		w := b.Input("w", frontend.F8E5M2, 3, 4)
		q := x.Cast(frontend.F8E5M2)
		b.Output("y", q.Matmul(w))
		b.Output("q", q.Transpose(1, 0).Cast(frontend.F32))
	})
	if err != nil {
		t.Fatal(err)
	}
	if y := g.Outputs[0].Value.Type; y.String() != "f16[2,4]" {
		t.Errorf("fp8 matmul gives %s, want f16[2,4]", y)
	}
	_, err = frontend.Build("m", func(b *frontend.Builder) {
		x := b.Input("x", ir.F8E4M3, 2)
		b.Output("y", x.Add(x))
	})
	if err == nil || !strings.Contains(err.Error(), "f8e4m3") {
		t.Errorf("add over fp8: %v", err)
	}
}
