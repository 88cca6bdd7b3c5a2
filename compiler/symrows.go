package compiler

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
)

// Row kernels. A symbolic buffer whose symbolic dims all lead its shape ([batch, seq, 768]: a
// prefix of symbolic dims, then static ones) holds R rows of a static inner size, R being the
// prefix's product; laid out contiguously at the run's sizes, its first R rows are exactly where
// they are at the bound. A kernel whose symbolic values all have the same R and whose ops keep
// rows independent (nothing reduces, moves or contracts across the prefix; static operands are
// broadcast along it) therefore computes the run's rows if it runs the bound's code on the first
// R rows only: codegen/ptx takes R as a size parameter that bounds its grid and edge checks.

// rowsOf returns how many leading dims of t are its rows (every dim up to its last symbolic one:
// static dims before a symbolic one belong to the rows, symstride.go) and their product.
func rowsOf(t ir.Type) (int, sym.Expr) {
	p := 0
	for i, e := range t.Sym {
		if !isConst(e) {
			p = i + 1
		}
	}
	r := sym.Const(1)
	for _, e := range t.Sym[:p] {
		r = sym.Mul(r, e)
	}
	return p, r
}

// rowKernel checks that kernel k keeps its rows independent and returns the row count R of its
// symbolic values, or the reason it cannot run at sizes other than the bound; with fold, a
// static value may fold the rows as symfold.go allows. Its body's
// inputs keep their buffers' symbolic types; its other values are at the bound, and their
// symbolic types are those of the pass graph's values they compute (Kernel.Origins).
func rowKernel(k *passes.Kernel, fold bool) (sym.Expr, string) {
	return rowKernelViews(k, fold, nil, nil)
}

// rowKernelViews is rowKernel for a kernel that reads the values of read (a dot_general's left
// operand, symstride.go; a fold's view tops, symfold_reduce_view.go) through the views chain at
// the run's sizes: only their own rows are checked, not how they keep their operands'.
func rowKernelViews(k *passes.Kernel, fold bool, chain, read map[*ir.Value]bool) (sym.Expr, string) {
	body := k.Body
	var (
		rows       sym.Expr
		first      *ir.Value
		prefix     = map[*ir.Value]int{}
		types      = symTypes(k)
		folded     []ir.Shape // the operands' bound shapes of the folds (symfold.go)
		staticLead *ir.Value  // a static value folding its operand's leading axis
	)
	symbolic := func(v *ir.Value) bool { return types[v].Sym != nil }
	// Layers of stacked buffers, read or written at their offsets at the run's sizes (symlayer.go).
	layers, concats := layerInputs(body, types), layerConcats(body, types)
	format := func(v *ir.Value) string { // in the source's types
		return strings.TrimSuffix(body.Format(v), v.Type.String()) + types[v].String()
	}
	for _, v := range body.Values {
		if chain[v] {
			continue
		}
		depends := slices.ContainsFunc(v.Args, symbolic)
		if !symbolic(v) {
			if depends && fold && foldsRows(v, prefix) {
				folded = append(folded, v.Args[0].Type.Shape)
				continue
			}
			if !depends && foldsLeading(v) && staticLead == nil {
				staticLead = v
			}
			if depends {
				why := "has static sizes but reads symbolic ones"
				switch {
				case ops.ClassOf(v.Op) == ops.Reduce:
					why = "reduces over a symbolic dim"
				case v.Op == "dot_general":
					why = "contracts a symbolic dim"
				}
				return rows, fmt.Sprintf("%s %s", format(v), why)
			}
			continue
		}
		p, r := rowsOf(types[v])
		if concats[v] {
			_, r = rowsOf(types[v.Args[0]]) // it writes its operands' rows, each at its offset
		}
		if layers[v] {
			prefix[v] = p // its own row count: only its layers are read, each a row value
			continue
		}
		if first == nil {
			rows, first = r, v
		} else if !r.Equal(rows) {
			return rows, fmt.Sprintf("%s has %s rows, %s has %s", format(first), rows, format(v), r)
		}
		prefix[v] = p
		if read[v] || len(v.Args) == 1 && layers[v.Args[0]] || concats[v] {
			continue // read through views, or a layer read or written at its offset at the run's sizes
		}
		if why := keepsRows(v, p, prefix, types); why != "" {
			return rows, fmt.Sprintf("%s %s", format(v), why)
		}
	}
	if first != nil && staticLead != nil {
		return rows, fmt.Sprintf("%s folds the leading axis of a static operand in a kernel over symbolic rows; a fold there is over the rows", format(staticLead))
	}
	if o := staticSpread(body, symbolic, folded); o != nil {
		return rows, fmt.Sprintf("output %s %s has static sizes the shape of a folded operand at the bound; a fold spreads its result back along the run's rows only", o.Name, types[o.Value])
	}
	return rows, ""
}

// keepsRows reports why v, whose p leading dims are its symbolic rows, does not compute each row
// from the same row of its symbolic operands (and from static operands broadcast along the
// rows), or "" when it does. prefix holds the symbolic operands' prefix lengths.
func keepsRows(v *ir.Value, p int, prefix map[*ir.Value]int, types map[*ir.Value]ir.Type) string {
	if v.Op == ir.OpInput || v.Op == ir.OpParam || v.Op == "constant" && len(v.Attrs.Floats("value")) == 1 {
		return "" // a splat is the same in every row
	}
	arg := func(i int) (int, bool) { q, ok := prefix[v.Args[i]]; return q, ok }
	switch cls := ops.ClassOf(v.Op); {
	case cls == ops.Elementwise || v.Op == "select" || v.Op == "reshape":
		return "" // same shapes, or (reshape) the same linear order: row r stays row r
	case cls == ops.Reduce:
		q, _ := arg(0)
		for _, a := range v.Attrs.Ints("axes") {
			if a < q {
				return "reduces over a " + rowDim(types[v.Args[0]], a)
			}
		}
		return ""
	}
	switch v.Op {
	case "transpose":
		for i, a := range v.Attrs.Ints("perm")[:p] {
			if a != i {
				return "moves a " + rowDim(types[v], i)
			}
		}
		return ""
	case "broadcast_in_dim":
		dims := v.Attrs.Ints("dims")
		q, ok := arg(0)
		for i, d := range dims {
			switch {
			case ok && i < q && d != i, ok && i >= q && d < p:
				return "moves a symbolic dim"
			case !ok && d < p && v.Args[0].Type.Shape[i] != 1:
				return "broadcasts a static operand along a " + rowDim(types[v], d)
			}
		}
		if ok && q != p {
			return "broadcasts along a symbolic dim"
		}
		return ""
	case "slice", "pad":
		for _, name := range []string{"start", "low", "high"} {
			for i, x := range v.Attrs.Ints(name) {
				if i < p && x != 0 {
					return "offsets a symbolic dim"
				}
			}
		}
		return "" // a symbolic dim is sliced whole (ops.InferSym)
	case "concat":
		if v.Attrs.Int("axis", 0) < p {
			return "concatenates along a symbolic dim"
		}
		return ""
	case "dot_general":
		q, ok := arg(0)
		r, rhs := arg(1)
		lb, rb := v.Attrs.Ints("lhs_batch"), v.Attrs.Ints("rhs_batch")
		// The batch dims start with the q leading dims, in order; static batch dims may follow
		// (heads split from the rows' features: [batch, h, t, d]), each row's products then
		// contiguous at the run's sizes as at the bound.
		lead := func(dims []int) bool {
			if len(dims) < q {
				return false
			}
			for i, d := range dims[:q] {
				if d != i {
					return false
				}
			}
			return true
		}
		switch {
		case !ok:
			return "has a symbolic right operand only; the left one's leading rows may be symbolic"
		case rhs && (r != q || !lead(lb) || !lead(rb)):
			return "has two symbolic operands whose rows are not exactly its batch dims"
		case !rhs && len(lb) > 0:
			return "has batch dims beside symbolic ones"
		case slices.ContainsFunc(v.Attrs.Ints("lhs_contract"), func(a int) bool { return a < q }):
			return "contracts a symbolic dim"
		}
		return ""
	case "gather":
		// An embedding lookup: row r of the result reads row r of the indices, and rows of a
		// static table anywhere.
		if _, table := arg(0); table {
			return "gathers from a symbolic table"
		}
		if q, _ := arg(1); q != p {
			return "has symbolic sizes beyond its indices' rows"
		}
		return ""
	case ops.UpdateSliceOp:
		// Row r of the cache takes row r of the update at the position of row r: the update
		// template runs the bound's code on the run's rows (codegen/ptx's symupdate.go).
		for i := range v.Args {
			if q, ok := arg(i); !ok || q != p {
				return "reads an operand whose rows are not the cache's"
			}
		}
		if v.Attrs.Int("axis", 0) < p {
			return "writes along a " + rowDim(types[v], v.Attrs.Int("axis", 0))
		}
		return ""
	case "philox_uniform":
		// Element i is a function of its row-major index at the run's sizes alone (a dropout
		// mask). The bound's code decodes row r into its dims with the bound's sizes and encodes
		// it back to r (symstride.go), so element j of row r has index r·inner+j, the run's
		// row-major index over any rows: [batch], [batch, seq], [2, seq].
		return ""
	case "conv2d", "max_pool2d", "avg_pool2d":
		q, _ := arg(0)
		if _, w := prefix[v.Args[len(v.Args)-1]]; q != 1 || len(v.Args) > 1 && w {
			return "has symbolic sizes beyond the batch of its input"
		}
		return ""
	}
	return "is not row-parametric (its rows are not computed from the same rows of its operands)"
}

func isConst(e sym.Expr) bool { _, ok := e.IsConst(); return ok }

// rowDim names dim d of t, one of its rows: "symbolic dim", or "dim of its rows" for a static one
// before a symbolic one (symstride.go).
func rowDim(t ir.Type, d int) string {
	if d < len(t.Sym) && !isConst(t.Sym[d]) {
		return "symbolic dim"
	}
	return "dim of its rows (a static dim before a symbolic one)"
}
