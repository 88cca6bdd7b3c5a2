package ops

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/tensor"
)

// UpdateSliceOp is the name of the op that writes a few rows of a large tensor at positions known
// only at run time (XLA's DynamicUpdateSlice with a start per batch row; the KV cache's write):
// compiled, its result shares the operand's memory where the operand dies there, and the kernel
// touches only the update.
const UpdateSliceOp = "update_slice"

func init() {
	register(&Op{Name: UpdateSliceOp, Arity: 3, Class: Other, Infer: inferUpdateSlice, Eval: evalUpdateSlice,
		Attrs: []AttrSpec{{"axis", AttrInt, false}},
		Doc: "update_slice(operand, update, start) {axis}: operand with the rows of update written at a position per " +
			"batch row: result[b, …, p_b+t, …] = update[b, …, t, …] along axis (≥ 1), every other element the operand's. " +
			"operand [B, …, S, …] and update [B, …, T, …] have one dtype and equal sizes but at axis, T ≤ S; start is " +
			"integers [B]. p_b = clamp(start[b], 0, S−T), as XLA's dynamic_update_slice clamps, so the update always " +
			"fits and no position is an error. T = 0 or B = 0 gives the operand."})
}

// updateSpec checks update_slice's operands and returns the axis.
func updateSpec(args []ir.Type, a ir.Attrs) (int, error) {
	op, up, start := args[0], args[1], args[2]
	axis := a.Int("axis", 0)
	if len(op.Shape) < 2 || axis < 1 || axis >= len(op.Shape) {
		return 0, errf("axis %d: want 1 ≤ axis < rank for operand %s (dim 0 is the batch)", axis, op)
	}
	if up.DType != op.DType || len(up.Shape) != len(op.Shape) {
		return 0, errf("update %s and operand %s differ in dtype or rank", up, op)
	}
	for d := range op.Shape {
		if d != axis && up.Shape[d] != op.Shape[d] || d == axis && up.Shape[d] > op.Shape[d] {
			return 0, errf("update %s does not fit operand %s: equal sizes but at axis %d, where it is at most the operand's", up, op, axis)
		}
	}
	if !ints.has(start.DType) || !start.Shape.Equal(ir.Shape{op.Shape[0]}) {
		return 0, errf("start must be integers [%d], have %s", op.Shape[0], start)
	}
	return axis, nil
}

func inferUpdateSlice(args []ir.Type, a ir.Attrs) (ir.Type, error) {
	if _, err := updateSpec(args, a); err != nil {
		return ir.Type{}, err
	}
	return ir.Type{DType: args[0].DType, Shape: args[0].Shape.Clone()}, nil
}

// symUpdateSlice: the operand's and the update's sizes are provably equal but at axis, where both
// are static (T ≤ S must hold at every size in range, and the clamp is S−T), and start has the
// operand's batch. The result is the operand's sizes (a KV cache over a symbolic batch).
func symUpdateSlice(args []ir.Type, a ir.Attrs, _ []sym.Expr, _ sym.Ranges) ([]sym.Expr, error) {
	op, up, start := args[0], args[1], args[2]
	axis := a.Int("axis", 0)
	for d := range op.Shape {
		if d == axis {
			if _, err := static("the operand's size at the axis", op.Axis(d)); err != nil {
				return nil, err
			}
			if _, err := static("the update's size at the axis", up.Axis(d)); err != nil {
				return nil, err
			}
			continue
		}
		if err := sameSize(op.Axis(d), up.Axis(d), "dim %d of operand %s and update %s", d, op, up); err != nil {
			return nil, err
		}
	}
	if err := sameSize(op.Axis(0), start.Axis(0), "start %s for operand %s", start, op); err != nil {
		return nil, err
	}
	return op.Axes(), nil
}

// UpdateStart is update_slice's clamped position p_b = clamp(start, 0, S−T).
func UpdateStart(start int64, S, T int) int64 { return max(0, min(start, int64(S-T))) }

func evalUpdateSlice(args []*tensor.Tensor, a ir.Attrs, out ir.Type) (*tensor.Tensor, error) {
	op, up, start := args[0], args[1], args[2]
	axis := a.Int("axis", 0)
	r := tensor.New(out)
	copy(r.F, op.F)
	copy(r.I, op.I)
	S, T := op.Type.Shape[axis], up.Type.Shape[axis]
	inner := 1 // elements after axis
	for _, d := range op.Type.Shape[axis+1:] {
		inner *= d
	}
	B := op.Type.Shape[0]
	mid := 1 // elements between the batch and axis
	for _, d := range op.Type.Shape[1:axis] {
		mid *= d
	}
	for b := range B {
		p := int(UpdateStart(start.I[b], S, T))
		for m := range mid {
			dst := ((b*mid+m)*S + p) * inner
			src := (b*mid + m) * T * inner
			if r.F != nil {
				copy(r.F[dst:dst+T*inner], up.F[src:src+T*inner])
			} else {
				copy(r.I[dst:dst+T*inner], up.I[src:src+T*inner])
			}
		}
	}
	return r, nil
}
