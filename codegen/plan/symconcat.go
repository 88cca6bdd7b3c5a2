package plan

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// SymbolicConcat reports why g is not a kernel the producers' concat template takes at symbolic
// sizes, or "" when it is: its outputs compute, element by element, from concats, views (a
// transpose, reshape, slice or broadcast), elementwise ops (casts and select included),
// constants (splats and literal tensors) and iotas over its inputs, and at least one of them
// concatenates (a KV cache grown by concat along its symbolic length, RoPE or a cast applied to
// the step's row before it, a scale after it). Each output element at the run's sizes finds its operand along every concat it
// reaches and evaluates the chain there; a reduction or a product beside the concat is refused.
func SymbolicConcat(g *ir.Graph) string {
	if len(g.Outputs) == 0 {
		return "it has no outputs"
	}
	seen, concats := map[*ir.Value]bool{}, 0
	var walk func(v *ir.Value) string
	walk = func(v *ir.Value) string {
		if seen[v] {
			return ""
		}
		seen[v] = true
		switch {
		case v.Op == ir.OpInput || v.Op == ir.OpParam || v.Op == "iota" || v.Op == "constant":
			return "" // a literal tensor's sizes are its own: read at its strides at every run
		case v.Op == "concat":
			concats++
		case v.Op == "transpose", v.Op == "reshape", v.Op == "slice", v.Op == "broadcast_in_dim", v.Op == "select":
		case ops.ClassOf(v.Op) == ops.Elementwise:
		default:
			return fmt.Sprintf("it computes %s (a concat's kernel at symbolic sizes takes elementwise ops and views only)", v.Op)
		}
		for _, a := range v.Args {
			if why := walk(a); why != "" {
				return why
			}
		}
		return ""
	}
	for _, o := range g.Outputs {
		if why := walk(o.Value); why != "" {
			return why
		}
	}
	if concats == 0 {
		return "it has no concat"
	}
	return ""
}

// ConcatCopy reports whether g's outputs are each a concat of views of inputs: the concat
// template then copies elements as bits, computing nothing.
func ConcatCopy(g *ir.Graph) bool {
	for _, o := range g.Outputs {
		if o.Value.Op != "concat" {
			return false
		}
		for _, a := range o.Value.Args {
			for u := a; u.Op != ir.OpInput && u.Op != ir.OpParam; u = u.Args[0] {
				switch u.Op {
				case "transpose", "reshape", "slice", "broadcast_in_dim":
				default:
					return false
				}
			}
		}
	}
	return len(g.Outputs) > 0
}
