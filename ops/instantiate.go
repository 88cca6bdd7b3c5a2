package ops

import (
	"fmt"
	"slices"

	"github.com/gcomp/gcomp/ir"
)

// Instantiate returns the static graph g is when its dims take the sizes in env: every type
// evaluated, and the attributes that hold a bound rewritten to the actual size (reshape's,
// broadcast_in_dim's and philox_uniform's shape, the limit of a symbolic dim sliced whole). The result has no dims and
// is verified, so it runs like any static graph: the reference interpreter's definition of a
// symbolic graph at those sizes.
func Instantiate(g *ir.Graph, env map[string]int64) (*ir.Graph, error) {
	c := g.Clone()
	c.Dims = nil
	orig := make(map[*ir.Value]*ir.Value, len(g.Values))
	for i, v := range c.Values {
		orig[v] = g.Values[i]
	}
	for _, v := range c.Values {
		symType := orig[v].Type
		t, err := symType.At(env)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", g.FormatAt(orig[v]), err)
		}
		v.Type = t
		switch v.Op {
		case "reshape", "broadcast_in_dim", "philox_uniform":
			v.Attrs["shape"] = []int(slices.Clone(t.Shape))
		case "slice":
			x := orig[v.Args[0]].Type
			if x.Sym == nil {
				break
			}
			limit := slices.Clone(v.Attrs.Ints("limit"))
			for i := range limit {
				if _, ok := x.Sym[i].IsConst(); !ok {
					limit[i] = v.Args[0].Type.Shape[i]
				}
			}
			v.Attrs["limit"] = limit
		}
	}
	if err := Verify(c); err != nil {
		return nil, fmt.Errorf("the graph at %v: %w", env, err)
	}
	return c, nil
}
