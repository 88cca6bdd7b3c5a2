package plan

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
)

// SymbolicConcat reports why g's outputs are not concatenations of views of inputs (the producers' copy
// writing each operand at its offset along the axis at the run's sizes: a KV cache grown by
// concat along its symbolic length), or "" when it is.
func SymbolicConcat(g *ir.Graph) string {
	if len(g.Outputs) == 0 {
		return "it has no outputs"
	}
	for _, o := range g.Outputs {
		c := o.Value
		if c.Op != "concat" {
			return fmt.Sprintf("its output %s is %s, not a concat", o.Name, c.Op)
		}
		for _, a := range c.Args {
			for u := a; u.Op != ir.OpInput && u.Op != ir.OpParam; u = u.Args[0] {
				switch u.Op {
				case "transpose", "reshape", "slice", "broadcast_in_dim":
				default:
					return fmt.Sprintf("an operand of its concat computes %s", u.Op)
				}
			}
		}
	}
	return ""
}
