package autodiff

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// A custom op's semantics are the user's Go function, which autodiff cannot see into:
// training through one fails with an error naming the op and the model's line.
func init() {
	rules[ops.CustomOp] = rule{why: "a custom op has no gradient rule",
		grad: func(e *Emitter, v, dy *ir.Value, need []bool) []*ir.Value {
			pos := v.Pos
			if pos != "" {
				pos += ": "
			}
			e.Fail("autodiff: %scustom op %q has no gradient: training needs the gradient of its operands, "+
				"and a custom op's semantics are a Go function autodiff cannot differentiate", pos, v.Attrs.String("name", ""))
			return nil
		}}
}
