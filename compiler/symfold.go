package compiler

import (
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// Folds over the rows. A kernel may fold its symbolic rows into a static result when it does so
// the way a training step's gradients do: a reduction whose axes are the leading ones, every
// symbolic dim among them (a bias gradient's sum over [batch, d]'s rows, a loss's batch sum,
// BatchNorm's statistics over [batch, c, h, w]'s axes 0, 2 and 3),
// or a dot_general contracting both operands' symbolic prefixes as the leading entries of its
// contracting dims (a weight gradient Xᵀ·dY: K is the rows), batched or not over static dims
// after them (per-head weight gradients). codegen/ptx
// folds the run's rows only: the reduction's row loop and the GEMM's k loop are bounded by the
// size parameter, in the order the static kernel at that size takes them.

// foldsRows reports whether v, a static value computed from symbolic ones, folds their rows in
// one of those two ways. prefix holds the symbolic operands' prefix lengths.
func foldsRows(v *ir.Value, prefix map[*ir.Value]int) bool {
	leading := func(dims []int, q int) bool { // starts with 0, 1, …, q−1
		if len(dims) < q || q == 0 {
			return false
		}
		for i := range q {
			if dims[i] != i {
				return false
			}
		}
		return true
	}
	switch {
	case ops.ClassOf(v.Op) == ops.Reduce:
		q, ok := prefix[v.Args[0]]
		axes := slices.Clone(v.Attrs.Ints("axes"))
		slices.Sort(axes)
		// The rows lead the axes: contiguous from 0, the column template folds [R·inner, C];
		// scattered around kept static axes, the row template folds each kept element's
		// (codegen/ptx's symfold_scatter.go).
		return ok && leading(axes, q)
	case v.Op == "dot_general":
		q, lok := prefix[v.Args[0]]
		r, rok := prefix[v.Args[1]]
		// Batch dims, if any, follow the rows (the contracting dims lead with them), so they are
		// static: a per-head weight gradient, each head's rows folded (symfold_view.go).
		return lok && rok && q == r && leading(v.Attrs.Ints("lhs_contract"), q) && leading(v.Attrs.Ints("rhs_contract"), q)
	}
	return false
}

// staticSpread returns an output of body that has static sizes and the bound shape of a folded
// operand, or nil. The reduction template writes an output of its operand's shape along the
// rows it folded, which are the run's: a static output of that shape (a parameter of the
// activations' bound shape updated from the folded gradient) would keep rows unwritten.
func staticSpread(body *ir.Graph, symbolic func(*ir.Value) bool, folded []ir.Shape) *ir.Output {
	for i, o := range body.Outputs {
		for _, s := range folded {
			if !symbolic(o.Value) && o.Value.Type.Shape.Equal(s) {
				return &body.Outputs[i]
			}
		}
	}
	return nil
}

// foldsLeading reports whether v reduces or contracts its (left) operand's leading axis: in a
// kernel over symbolic rows, codegen/ptx takes such a fold for one over the rows, so a static
// operand's is refused.
func foldsLeading(v *ir.Value) bool {
	switch {
	case ops.ClassOf(v.Op) == ops.Reduce:
		return slices.Contains(v.Attrs.Ints("axes"), 0)
	case v.Op == "dot_general":
		return slices.Contains(v.Attrs.Ints("lhs_contract"), 0)
	}
	return false
}
