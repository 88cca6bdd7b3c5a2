package ref

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/tensor"
)

// instantiate returns the static graph a graph with dims is at the sizes of the supplied inputs
// (docs/dynamic.md): each input may have any size in its dims' ranges, and inputs sharing a dim
// must agree on it.
func instantiate(g *ir.Graph, inputs map[string]*tensor.Tensor) (*ir.Graph, error) {
	if err := ops.Verify(g); err != nil {
		return nil, err
	}
	shapes := make(map[string]ir.Shape, len(inputs))
	for name, t := range inputs {
		if t != nil {
			shapes[name] = t.Type.Shape
		}
	}
	env, err := g.BindSizes(shapes)
	if err != nil {
		return nil, err
	}
	return ops.Instantiate(g, env)
}
