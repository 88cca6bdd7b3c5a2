package plan

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// UpdateOp returns the kernel's update_slice op, if the kernel is one.
func UpdateOp(g *ir.Graph) (*ir.Value, bool) {
	for _, o := range g.Outputs {
		if v := o.Value; v.Op == ops.UpdateSliceOp && len(g.Outputs) == 1 {
			return v, true
		}
	}
	return nil, false
}

// UpdateLayout is update_slice's operand seen as [B·M, S, N] (M: the dims between the batch and
// the axis, N: those after it) and its update as [B·M, T, N].
type UpdateLayout struct {
	B, M, S, T, N int
}

// UpdatePlan gives v's layout.
func UpdatePlan(v *ir.Value) UpdateLayout {
	shape, axis := v.Args[0].Type.Shape, v.Attrs.Int("axis", 0)
	l := UpdateLayout{B: shape[0], M: 1, S: shape[axis], T: v.Args[1].Type.Shape[axis], N: 1}
	for _, d := range shape[1:axis] {
		l.M *= d
	}
	for _, d := range shape[axis+1:] {
		l.N *= d
	}
	return l
}

// Elements is how many elements the launch covers: the update's in place, else the result's.
func (l UpdateLayout) Elements(inPlace bool) int {
	if inPlace {
		return l.B * l.M * l.T * l.N
	}
	return l.B * l.M * l.S * l.N
}

// Launch is the update kernel's grid and block (every producer's): grid-stride over Elements.
func (l UpdateLayout) Launch(inPlace bool) (grid, block [3]int) {
	return [3]int{max(1, min(ceilDiv(l.Elements(inPlace), LoopBlock), MaxLoopBlocks)), 1, 1}, [3]int{LoopBlock, 1, 1}
}
