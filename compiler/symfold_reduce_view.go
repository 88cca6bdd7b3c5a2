package compiler

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
)

// Reductions read through views that move the rows: nn.MultiheadAttention's packed
// in-projection sums the heads' gradients dq, dk and dv [batch, h, seq, d], each merged back by
// a transpose and a reshape into [batch, seq, h·d] and padded into its third of
// [batch, seq, 3·h·d], over the rows (a bias gradient); a layer norm or a softmax over the merged
// heads' rows reduces each row of [batch, seq, h·d]; a sum per head folds the transposed heads
// [batch, seq, h, d] over scattered axes. The merged values lead with the kernel's rows, but the
// buffers below them do not (a head's rows start seq·d apart at the run's sizes), so rowKernel
// refuses them. foldReduceViews takes such a reduction when only the views' tops are checked for
// rows: each of codegen/ptx's reduction templates (column, row, scattered fold, split) reads
// each top at the run's sizes, its linear index (the same at the bound and at the run, the rows
// leading) delinearized over the top's sizes and followed down to the buffer (symview.go there).

// foldReduceViews retries a row kernel that rowKernel refused (rows r, refusal why) as a
// reduction whose symbolic operands are read through views; it returns the rows, the sizes of
// the views' values, or the refusal. A kernel that is no such reduction keeps r and why.
func foldReduceViews(k *passes.Kernel, kg *passes.KernelGraph, ranges sym.Ranges, r sym.Expr, why string) (sym.Expr, map[*ir.Value][]sym.Expr, string) {
	if !reducesOnly(k.Body) {
		return r, nil, why
	}
	tops, below := symViewTops(k, kg)
	if len(tops) == 0 {
		return r, nil, why
	}
	read := map[*ir.Value]bool{}
	for _, v := range tops {
		read[v] = true // a top's own rows lead; below it a view may move them (kᵀ's transpose)
	}
	r2, why2 := rowKernelViews(k, true, below, read)
	if why2 != "" {
		return r, nil, why
	}
	chain := union(tops, below)
	sizes := foldViewSizes(k, kg, ranges, chain) // symfold_view.go
	if sizes == nil {
		return r, nil, why
	}
	for _, v := range tops {
		if sizes[v] == nil {
			return r, nil, why
		}
	}
	return r2, sizes, ""
}

// rowLengthReadingViews retries a row kernel that rowKernel refused (rows r, refusal why) as a
// reduction of a symbolic last dim (rowLength, symrowlen.go) reading the tops of chains of views
// of symbolic buffers: a softmax over the keys read through a transpose that moves them last. The
// row-length template reads each top at the element's linear index at the run, delinearized over
// the top's sizes and followed down to the buffer. It returns the rows, the sizes of the
// reductions' operand and of the views, or the refusal; a kernel that is no such reduction keeps
// r and why.
func rowLengthReadingViews(k *passes.Kernel, kg *passes.KernelGraph, ranges sym.Ranges, r sym.Expr, why string) (sym.Expr, map[*ir.Value][]sym.Expr, string) {
	return readingViews(k, kg, ranges, r, why, rowLengthViews) // symrowlen.go
}

// rowBroadcastReadingViews retries a loop kernel that rowKernel refused (rows r, refusal why) as
// one dividing by row sums broadcast along a symbolic last dim (rowBroadcast, symrowlen.go) that
// reads the tops of chains of views of symbolic buffers: the exponentials of scores read through
// a transpose that moves the keys last. The loop reads each top at the element's linear index at
// the run, delinearized over the top's sizes and followed down to the buffer, as the row-length
// template does. It returns the element count, the sizes of the broadcasts and of the views, or
// the refusal; a kernel that is no such loop keeps r and why.
func rowBroadcastReadingViews(k *passes.Kernel, kg *passes.KernelGraph, ranges sym.Ranges, r sym.Expr, why string) (sym.Expr, map[*ir.Value][]sym.Expr, string) {
	return readingViews(k, kg, ranges, r, why, rowBroadcastViews) // symrowlen.go
}

// readingViews retries kernel k with try, given the tops of its chains of views of symbolic
// buffers and the values below them, and adds the views' sizes to those try returns.
func readingViews(k *passes.Kernel, kg *passes.KernelGraph, ranges sym.Ranges, r sym.Expr, why string,
	try func(*passes.Kernel, map[*ir.Value]bool, map[*ir.Value]bool, sym.Expr, string) (sym.Expr, map[*ir.Value][]sym.Expr, string)) (sym.Expr, map[*ir.Value][]sym.Expr, string) {
	topList, below := symViewTops(k, kg)
	if len(topList) == 0 {
		return r, nil, why
	}
	tops := union(topList, nil)
	r2, sizes, why2 := try(k, tops, below, r, why)
	if why2 != "" {
		return r, nil, why
	}
	views := foldViewSizes(k, kg, ranges, union(topList, below)) // symfold_view.go
	for _, v := range topList {
		if views == nil || views[v] == nil {
			return r, nil, why
		}
	}
	for v, s := range views {
		sizes[v] = s
	}
	return r2, sizes, ""
}

// reducesOnly reports whether body has reductions and no dot_general: rowKernelViews checks that
// each reduction keeps or folds the rows as a reduction template can.
func reducesOnly(body *ir.Graph) bool {
	n := 0
	for _, v := range body.Values {
		switch {
		case v.Op == "dot_general":
			return false
		case ops.ClassOf(v.Op) == ops.Reduce:
			n++
		}
	}
	return n > 0
}

// symViewTops returns the tops of the body's chains of views (transposes, reshapes, slices,
// broadcasts) of a symbolic buffer, those the body reads other than through another view, and
// the values below them down to the buffers.
func symViewTops(k *passes.Kernel, kg *passes.KernelGraph) ([]*ir.Value, map[*ir.Value]bool) {
	isView := func(v *ir.Value) bool {
		return v.Op == "transpose" || v.Op == "reshape" || v.Op == "slice" || v.Op == "broadcast_in_dim"
	}
	ofSymbolic := func(v *ir.Value) bool {
		for isView(v) {
			v = v.Args[0]
		}
		b := kg.Buffer(v.Name)
		return buffer(v) && b != nil && b.Type.Sym != nil
	}
	below := map[*ir.Value]bool{}
	for _, v := range k.Body.Values {
		if isView(v) && ofSymbolic(v) {
			for u := v.Args[0]; ; u = u.Args[0] {
				below[u] = true
				if !isView(u) {
					break
				}
			}
		}
	}
	var tops []*ir.Value
	for _, v := range k.Body.Values {
		if isView(v) && ofSymbolic(v) && !below[v] {
			tops = append(tops, v)
		}
	}
	return tops, below
}

func union(tops []*ir.Value, below map[*ir.Value]bool) map[*ir.Value]bool {
	s := map[*ir.Value]bool{}
	for v := range below {
		s[v] = true
	}
	for _, v := range tops {
		s[v] = true
	}
	return s
}
