package autodiff

import (
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

func init() {
	rules[ops.UpdateSliceOp] = rule{nondiff: []int{2}, why: "the positions are integers", grad: gradUpdateSlice}
}

// gradUpdateSlice: the operand's gradient is dy with the written window zeroed (update_slice of
// zeros over dy at the same positions); the update's is dy's window, picked by a one-hot
// contraction over the axis ([s == p_b + t], exact: one product by 1 per element), since no op
// reads rows at a position known at run time.
func gradUpdateSlice(e *Emitter, v, dy *ir.Value, need []bool) []*ir.Value {
	op, up, start := v.Args[0], v.Args[1], v.Args[2]
	axis := v.Attrs.Int("axis", 0)
	dOp := lazy(need[0], func() *ir.Value {
		return e.Op(ops.UpdateSliceOp, ir.Attrs{"axis": axis}, dy, e.Const(0, up.Type), start)
	})
	dUp := lazy(need[1], func() *ir.Value {
		B, S, T := op.Type.Shape[0], op.Type.Shape[axis], up.Type.Shape[axis]
		r := op.Type.Shape.Rank()
		// p_b = clamp(start[b], 0, S−T), as the op computes it.
		p := e.Cast(start, ir.I64)
		p = e.Op("max", nil, p, e.Scalar(0, p))
		p = e.Op("min", nil, p, e.Scalar(float64(S-T), p))
		bts := []int{B, T, S}
		pos := e.Add(e.Op("iota", ir.Attrs{"shape": slices.Clone(bts), "dim": 1, "dtype": ir.I64}), e.Broadcast(p, bts, []int{0}))
		s := e.Op("iota", ir.Attrs{"shape": slices.Clone(bts), "dim": 2, "dtype": ir.I64})
		onehot := e.Cast(e.Op("eq", nil, s, pos), dy.Type.DType)
		g := dot(e, dy, onehot, []int{0}, []int{0}, []int{axis}, []int{2}) // [B, dy's other dims, T]
		perm := make([]int, r)
		for i := range perm {
			switch {
			case i == axis:
				perm[i] = r - 1
			case i < axis:
				perm[i] = i
			default:
				perm[i] = i - 1
			}
		}
		return e.Transpose(g, perm)
	})
	return []*ir.Value{dOp, dUp, nil}
}
