package gemv

import (
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// RowPrologue returns the reductions of dot's lhs when the lhs is a row prologue: a norm of its
// rows computed in the kernel (LayerNorm's mean and variance, RMSNorm's mean square, then the
// elementwise normalization with gamma and beta) from buffers, so that the norm's output never
// goes to memory. Each block reduces its rows over the full K before its k loop (the rows are
// small and read from L2 by every block), then normalizes the lhs as it loads it.
//
// The lhs qualifies when the product has no batch dims and contracts the lhs's last dim only,
// and every value it is computed from is a buffer, a literal, a view, an elementwise op, or a
// reduce_sum over that last dim of a value of the lhs's shape (kept dims). The reductions are
// returned in graph order (an operand's reductions before its own); nil means no prologue.
func RowPrologue(dot *ir.Value) []*ir.Value {
	lhs := dot.Args[0]
	rank := lhs.Type.Shape.Rank()
	if rank == 0 || len(dot.Attrs.Ints("lhs_batch")) > 0 || !slices.Equal(dot.Attrs.Ints("lhs_contract"), []int{rank - 1}) {
		return nil
	}
	var reds []*ir.Value
	seen := map[*ir.Value]bool{}
	var walk func(v *ir.Value) bool
	walk = func(v *ir.Value) bool {
		if seen[v] {
			return true
		}
		seen[v] = true
		switch {
		case v.Op == ir.OpInput || v.Op == ir.OpParam || v.Op == "constant":
			return true
		case v.Op == "reduce_sum":
			in := v.Args[0]
			if !in.Type.Shape.Equal(lhs.Type.Shape) || v.Type.Shape.Rank() != rank || !slices.Equal(v.Attrs.Ints("axes"), []int{rank - 1}) {
				return false
			}
			if !walk(in) {
				return false
			}
			reds = append(reds, v)
			return true
		case isViewOp(v.Op), ops.ClassOf(v.Op) == ops.Elementwise:
			for _, a := range v.Args {
				if !walk(a) {
					return false
				}
			}
			return true
		}
		return false
	}
	if !walk(lhs) {
		return nil
	}
	return reds
}

func isViewOp(op string) bool {
	switch op {
	case "transpose", "slice", "broadcast_in_dim", "reshape":
		return true
	}
	return false
}
