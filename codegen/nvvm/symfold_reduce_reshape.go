package nvvm

import (
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
)

// Reductions reading views (symfold_reduce_view.go) compute a buffer's index per element, so a
// reshape there re-divides only the dims it changes (plan.ReshapeKept), as codegen/ptx's
// symfold_reduce_reshape.go: the heads merged back, [2, seq, 2, 4] read as [2, seq, 8], carry
// the batch and seq coordinates and split the last by constants instead of dividing by seq again.

// foldLin is lin for a reduction's views: each reshape maps the coordinates of the dims it
// changes only.
func (sv *symView) foldLin(v *irg.Value, c []value.Value) (*irg.Value, value.Value) {
	for v.Op != irg.OpInput && v.Op != irg.OpParam {
		if v.Op == "reshape" {
			c = sv.reshapeCoords(v, c)
		} else {
			c = sv.operandCoords(v, c)
		}
		v = v.Args[0]
	}
	return v, sv.linear(plan.SymSizes(v, sv.sizes), c)
}

// reshapeCoords maps coordinates c of reshape v to its operand's at the run's sizes, carrying
// those of the dims it keeps.
func (sv *symView) reshapeCoords(v *irg.Value, c []value.Value) []value.Value {
	out, in := plan.SymSizes(v, sv.sizes), plan.SymSizes(v.Args[0], sv.sizes)
	pre, suf := plan.ReshapeKept(out, in)
	ic := make([]value.Value, len(in))
	copy(ic, c[:pre])
	copy(ic[len(in)-suf:], c[len(out)-suf:])
	if mid := in[pre : len(in)-suf]; len(mid) > 0 {
		copy(ic[pre:], sv.delinearize(mid, sv.linear(out[pre:len(out)-suf], c[pre:len(out)-suf])))
	}
	return ic
}
