package plan

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// A loop kernel over a full tensor whose last dim is symbolic, dividing by per-row values
// broadcast back along it (the softmax's division by its row sums): k.Sizes holds the full sizes
// of each such broadcast of a buffer of the kept sizes, and of the views whose tops the loop
// reads at the run's sizes (the exponentials of scores transposed to move the keys last). Both
// producers' symrowlen.go compile it.

// RowBroadcastLoop reports whether k is such a kernel: every value with sizes is a broadcast of
// a buffer along the last dim, a view or a buffer, and one at least is such a broadcast.
func RowBroadcastLoop(k Kernel) bool {
	if !k.Symbolic || len(k.Sizes) == 0 {
		return false
	}
	n := 0
	for v := range k.Sizes {
		switch {
		case RowBroadcastOf(v, k.Sizes):
			n++
		case v.Op == ir.OpInput, v.Op == ir.OpParam, v.Op == "transpose", v.Op == "reshape", v.Op == "slice", v.Op == "broadcast_in_dim":
		default:
			return false
		}
	}
	return n > 0
}

// RowBroadcastOf reports whether v broadcasts a buffer of the kept sizes (the full ones but the
// last, with or without the last as 1) back along a last dim symbolic in sizes: a static one is
// a view a copy reads (an expand of [b, t, 1] to [b, t, 4]).
func RowBroadcastOf(v *ir.Value, sizes map[*ir.Value][]sym.Expr) bool {
	if v.Op != "broadcast_in_dim" || v.Args[0].Op != ir.OpInput && v.Args[0].Op != ir.OpParam {
		return false
	}
	full, a, s := v.Type.Shape, v.Args[0].Type.Shape, sizes[v]
	if len(full) == 0 || len(s) != len(full) || isConst(s[len(s)-1]) {
		return false
	}
	kept := full[:len(full)-1]
	if !a.Equal(kept) && !a.Equal(append(kept.Clone(), 1)) {
		return false
	}
	for i, d := range v.Attrs.Ints("dims") {
		if d != i {
			return false
		}
	}
	return true
}
