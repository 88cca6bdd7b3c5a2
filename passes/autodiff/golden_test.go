package autodiff

import (
	"path/filepath"
	"testing"

	"github.com/gcomp/gcomp/internal/golden"
	"github.com/gcomp/gcomp/ir"
	"golang.org/x/tools/txtar"
)

// TestGolden prints the gradient graphs of a linear layer and a strided convolution: the backward
// contractions are dot_general and conv2d nodes, never a multiply followed by a reduction.
func TestGolden(t *testing.T) {
	tests := []struct {
		name  string
		build func(g *ir.Graph, e *Emitter) *ir.Value
	}{
		{"linear", func(g *ir.Graph, e *Emitter) *ir.Value {
			x := g.Input("x", ir.T(ir.F32, 8, 4), nil)
			w := g.Param("w", ir.T(ir.F32, 3, 4), nil)
			b := g.Param("b", ir.T(ir.F32, 3), nil)
			y := e.Add(dot(e, x, w, nil, nil, []int{1}, []int{1}), e.Broadcast(b, []int{8, 3}, []int{1}))
			return e.SumAll(e.Op("relu", nil, y))
		}},
		{"conv", func(g *ir.Graph, e *Emitter) *ir.Value {
			x := g.Input("x", ir.T(ir.F32, 2, 3, 8, 8), nil)
			w := g.Param("w", ir.T(ir.F32, 4, 3, 3, 3), nil)
			y := e.Op("conv2d", ir.Attrs{"stride": []int{2, 2}, "padding": []int{1, 1}}, x, w)
			return e.SumAll(e.Op("max_pool2d", ir.Attrs{"kernel": []int{2, 2}}, y))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := ir.NewGraph(tt.name)
			if err := Emit(g, func(e *Emitter) { g.SetOutput("loss", tt.build(g, e)) }); err != nil {
				t.Fatal(err)
			}
			var wrt []string
			for _, p := range g.Params() {
				wrt = append(wrt, p.Name)
			}
			gg, err := Grad(g, "loss", wrt)
			if err != nil {
				t.Fatal(err)
			}
			golden.CheckTxtar(t, filepath.Join("testdata", tt.name+".txtar"),
				"The forward graph and its gradient graph (autodiff.Grad).\n",
				[]txtar.File{{Name: "grad.gir", Data: []byte(gg.String())}})
		})
	}
}
