package passes_test

import (
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
)

// Autocast over a symbolic batch keeps the symbolic sizes of the casts and contractions it
// retypes (a regression: they became static at the bound, and the graph did not verify).
func TestAutocastSymbolicBatch(t *testing.T) {
	g, err := frontend.Build("m", func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, b.Batch(8), 4)
		b.Output("y", nn.NewLinear(b, "fc", 4, 3).Forward(x))
	}, frontend.WithMaxBatch(8))
	if err != nil {
		t.Fatal(err)
	}
	for _, dt := range []ir.DType{ir.BF16, ir.F16} {
		c := passes.AutocastGraph(g, dt)
		if err := ops.Verify(c); err != nil {
			t.Fatalf("%s: %v", dt, err)
		}
		n := 0
		for _, v := range c.Values {
			if v.Op == "dot_general" || v.Op == "cast" && v.Args[0].Op == ir.OpInput {
				n++
				if v.Type.Sym == nil || v.Type.Sym[0].String() != frontend.BatchDim {
					t.Errorf("%s: %s is %s, want it over the batch", dt, v.Op, v.Type)
				}
			}
		}
		if n != 2 {
			t.Errorf("%s: %d casts of the input and contractions, want 2", dt, n)
		}
	}
}
