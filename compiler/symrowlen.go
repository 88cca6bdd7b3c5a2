package compiler

import (
	"fmt"
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
)

// Row kernels whose reduced dim is symbolic and last: the softmax over the keys of unfused
// attention's scores [batch, h, t, seq] (dropout on the attention weights keeps attention
// unfused), and its backward's row sums. Laid out contiguously at the run's sizes, row r (of
// the kept dims' rows, batch·h·t) holds elements r·seq .. r·seq+seq−1 at the run, so codegen/ptx's
// row template takes the row count and the row length at the run (symrowlen.go there) and
// reads and writes every tensor of the full sizes at that linear index. The kernel reads
// nothing else at the run's sizes: its values are the full sizes' (elementwise ops, the random
// numbers of a dropout mask, values of the kept sizes broadcast back along the row, read at the
// row) or the kept sizes' (the reductions' results, tensors per row such as the softmax's row
// sums read by its gradient), stored per row.

// rowLength retries a row kernel that rowKernel refused (rows r, refusal why) as a reduction of
// its symbolic last dim. It returns the kernel's rows (the kept dims' product), the sizes of the
// reductions' operand, or the refusal; a kernel that is no such reduction keeps r and why.
func rowLength(k *passes.Kernel, r sym.Expr, why string) (sym.Expr, map[*ir.Value][]sym.Expr, string) {
	return rowLengthViews(k, nil, nil, r, why)
}

// rowLengthViews is rowLength for a kernel that reads the tops of chains of views (tops, of the
// full sizes) at the run's sizes, the values below them (below) unchecked
// (symfold_reduce_view.go).
func rowLengthViews(k *passes.Kernel, tops, below map[*ir.Value]bool, r sym.Expr, why string) (sym.Expr, map[*ir.Value][]sym.Expr, string) {
	if k.Kind != passes.Row || why == "" {
		return r, nil, why
	}
	types := symTypes(k)
	var full []sym.Expr
	var reds []*ir.Value
	for _, v := range k.Body.Values {
		if ops.ClassOf(v.Op) != ops.Reduce {
			continue
		}
		s := types[v.Args[0]].Sym
		axes := v.Attrs.Ints("axes")
		if len(s) == 0 || len(axes) != 1 || axes[0] != len(s)-1 || isConst(s[len(s)-1]) {
			return r, nil, why
		}
		if full != nil && !sameSizes(full, s) {
			return r, nil, why
		}
		full, reds = s, append(reds, v)
	}
	if full == nil {
		return r, nil, why
	}
	kept := full[:len(full)-1]
	for _, v := range k.Body.Values {
		if below[v] || tops[v] && sameSizes(types[v].Sym, full) {
			continue
		}
		s := types[v].Sym
		if s == nil && keptSizes(constSizes(v.Type.Shape), kept) {
			s = constSizes(v.Type.Shape) // static rows [3, seq]: the kept sizes are static
		}
		switch {
		case s == nil:
			if !splat(v) && v.Type.Shape.NumElements() != 1 {
				return r, nil, fmt.Sprintf("%s is read beside a reduction of the symbolic %s", k.Body.Format(v), full[len(full)-1])
			}
		case sameSizes(s, full):
			if why := fullValue(v, types, kept); why != "" {
				return r, nil, fmt.Sprintf("%s %s beside a reduction of the symbolic %s", k.Body.Format(v), why, full[len(full)-1])
			}
		case keptSizes(s, kept):
		default:
			return r, nil, why
		}
	}
	sizes := map[*ir.Value][]sym.Expr{}
	for _, red := range reds {
		sizes[red.Args[0]] = full
	}
	return product(kept, seq(len(kept))), sizes, ""
}

// fullValue reports why v, of a row kernel's full sizes, is not read at the element's linear
// index at the run (an elementwise op, a dropout mask's random numbers, a buffer) nor a
// broadcast back along the row of a value of the kept sizes (read at the row); "" when it is.
func fullValue(v *ir.Value, types map[*ir.Value]ir.Type, kept []sym.Expr) string {
	switch {
	case buffer(v), ops.ClassOf(v.Op) == ops.Elementwise, v.Op == "select", v.Op == "philox_uniform", splat(v):
		return ""
	case v.Op == "broadcast_in_dim":
		s, dims := types[v.Args[0]].Sym, v.Attrs.Ints("dims")
		if s == nil {
			s = constSizes(v.Args[0].Type.Shape)
		}
		if keptSizes(s, kept) && slices.Equal(dims, seq(len(s))) {
			return ""
		}
	}
	return "is no elementwise op"
}

// seq is 0, 1, ..., n−1.
func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// rowBroadcast retries a loop kernel that rowKernel refused (rows r, refusal why) as one over a
// full tensor whose last dim is symbolic, reading per-row values broadcast back along it (the
// softmax's division by its row sums, followed by the weights' dropout). Every value has the
// full sizes (elementwise ops, a dropout mask's random numbers, buffers) but the broadcasts'
// operands, buffers of the kept sizes: codegen/ptx reads those at the element's linear index
// at the run divided by the row length at the run (symrowlen.go there). It returns the element
// count as the rows and the broadcasts' sizes, or the refusal; a kernel that is no such loop
// keeps r and why.
func rowBroadcast(k *passes.Kernel, r sym.Expr, why string) (sym.Expr, map[*ir.Value][]sym.Expr, string) {
	return rowBroadcastViews(k, nil, nil, r, why)
}

// rowBroadcastViews is rowBroadcast for a loop that reads the tops of chains of views (tops, of
// the full sizes) at the run's sizes, the values below them (below) unchecked
// (symfold_reduce_view.go).
func rowBroadcastViews(k *passes.Kernel, tops, below map[*ir.Value]bool, r sym.Expr, why string) (sym.Expr, map[*ir.Value][]sym.Expr, string) {
	if k.Kind != passes.Loop || why == "" {
		return r, nil, why
	}
	types := symTypes(k)
	full := types[k.Body.Outputs[0].Value].Sym
	if len(full) == 0 || isConst(full[len(full)-1]) {
		return r, nil, why
	}
	kept := full[:len(full)-1]
	sizes := map[*ir.Value][]sym.Expr{}
	for _, v := range k.Body.Values {
		s := types[v].Sym
		switch {
		case below[v] && !tops[v]:
			// read through the view above it
		case v.Op == "broadcast_in_dim" && sameSizes(s, full) && buffer(v.Args[0]) && keptSizes(sizesOf(types, v.Args[0]), kept) && slices.Equal(v.Attrs.Ints("dims"), seq(v.Args[0].Type.Shape.Rank())):
			sizes[v] = full // the row sums broadcast back, even where it tops a chain of views
		case tops[v] && sameSizes(s, full):
			// read at the element's linear index at the run through its views
		case s == nil && (splat(v) || v.Type.Shape.NumElements() == 1):
			// a splat, or a scalar (the random numbers' key)
		case s == nil || !sameSizes(s, full):
			if !buffer(v) || !keptSizes(sizesOf(types, v), kept) {
				return r, nil, why
			}
		case buffer(v), ops.ClassOf(v.Op) == ops.Elementwise, v.Op == "select", v.Op == "philox_uniform", splat(v):
		default:
			return r, nil, why
		}
	}
	for _, o := range k.Body.Outputs {
		if !sameSizes(types[o.Value].Sym, full) {
			return r, nil, why
		}
	}
	if len(sizes) == 0 {
		return r, nil, why
	}
	return product(full, seq(len(full))), sizes, ""
}

// keptSizes reports whether s is kept, the rows of a reduction of the last dim, with or without
// the reduced dim as 1.
func keptSizes(s, kept []sym.Expr) bool {
	return sameSizes(s, kept) || sameSizes(s, append(append([]sym.Expr{}, kept...), sym.Const(1)))
}

// rowBroadcasts reports whether loop kernel k broadcasts a value along a symbolic last dim.
func rowBroadcasts(k *passes.Kernel) bool {
	types := symTypes(k)
	for _, v := range k.Body.Values {
		if s := types[v].Sym; v.Op == "broadcast_in_dim" && len(s) > 0 && !isConst(s[len(s)-1]) && keptSizes(sizesOf(types, v.Args[0]), s[:len(s)-1]) {
			return true
		}
	}
	return false
}

// sizesOf is v's symbolic sizes, or its static shape's (static rows [3, seq] keep [3, 1]).
func sizesOf(types map[*ir.Value]ir.Type, v *ir.Value) []sym.Expr {
	if s := types[v].Sym; s != nil {
		return s
	}
	return constSizes(v.Type.Shape)
}

// splat reports whether v is a constant of one value.
func splat(v *ir.Value) bool { return v.Op == "constant" && len(v.Attrs.Floats("value")) == 1 }

// constSizes is shape as sizes.
func constSizes(shape ir.Shape) []sym.Expr {
	s := make([]sym.Expr, len(shape))
	for i, n := range shape {
		s[i] = sym.Const(int64(n))
	}
	return s
}
