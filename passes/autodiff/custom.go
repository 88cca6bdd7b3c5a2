package autodiff

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// A custom op's gradient with respect to operand j is its backward kernel j (ops.GradAttrs),
// applied to the operands and dy: the user's own kernel and reference, as the forward op is.
// Without one, training through operand j fails with an error naming the op and the line.
func init() {
	rules[ops.CustomOp] = rule{why: "a custom op has no gradient rule",
		grad: func(e *Emitter, v, dy *ir.Value, need []bool) []*ir.Value {
			out := make([]*ir.Value, len(v.Args))
			for j := range v.Args {
				if !need[j] {
					continue
				}
				g, ok := ops.GradAttrs(v.Attrs, j)
				if !ok {
					pos := v.Pos
					if pos != "" {
						pos += ": "
					}
					e.Fail("autodiff: %scustom op %q has no gradient for operand %d: give its Kernel a Backward kernel for it", pos, v.Attrs.String("name", ""), j)
				}
				out[j] = e.Op(ops.CustomOp, g, append(append([]*ir.Value(nil), v.Args...), dy)...)
			}
			return out
		}}
}
