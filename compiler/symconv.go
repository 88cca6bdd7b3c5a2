package compiler

import (
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
)

// A convolution's weight gradient over a symbolic batch. Autodiff writes dW as a convolution of
// x [batch, C, H, W] viewed as [C/G, G·batch, H, W] by dy [batch, O, OH, OW] viewed as
// [O, batch, OH, OW] (passes/autodiff's gradConv): the batch is its input channels, so its K,
// batch·OH·OW taps batch-major, folds the rows into a static result. The views move the batch
// from the lead, which the row check refuses; convFold takes the kernel when every symbolic
// value it reads leads with the same rows R and reaches the convolution only through views and
// elementwise ops. At the bound's index arithmetic such a value's element with batch index n < R
// at the run is where it is at the run's sizes, and codegen/ptx's direct template stops each
// element's tap loop at K at the run's sizes (R·OH·OW: its symconv.go), so no tap reads a row
// past the run's. The compiler hands codegen the operands' sizes (Kernel.Sizes), by which it
// knows the fold.

// convFold returns the rows of kernel k when it is such a fold, with the sizes of the
// convolution's operands; ok is false for another kernel.
func convFold(k *passes.Kernel) (rows sym.Expr, sizes map[*ir.Value][]sym.Expr, ok bool) {
	types := symTypes(k)
	var conv *ir.Value
	for _, v := range k.Body.Values {
		if v.Op == "conv2d" {
			if conv != nil {
				return rows, nil, false
			}
			conv = v
		}
	}
	if conv == nil || types[conv].Sym != nil {
		return rows, nil, false
	}
	img, wt := types[conv.Args[0]], types[conv.Args[1]]
	if wt.Sym == nil || img.Sym == nil {
		return rows, nil, false
	}
	rows = wt.Axis(1)
	groups := int64(conv.Attrs.Int("groups", 1))
	for i := range 4 {
		if i != 1 && (!isConst(wt.Axis(i)) || !isConst(img.Axis(i))) {
			return rows, nil, false
		}
	}
	if isConst(rows) || !img.Axis(1).Equal(sym.Scale(rows, groups)) {
		return rows, nil, false
	}
	// What the convolution reads: views and elementwise ops of buffers whose one symbolic dim
	// leads with the rows, and static values; nothing else in the kernel is symbolic.
	feeds := map[*ir.Value]bool{}
	var mark func(v *ir.Value) bool
	mark = func(v *ir.Value) bool {
		if feeds[v] {
			return true
		}
		t := types[v]
		switch {
		case t.Sym == nil, v.Op == "constant" && len(v.Attrs.Floats("value")) == 1:
		case buffer(v):
			if p, r := rowsOf(t); p != 1 || !r.Equal(rows) {
				return false
			}
		case v.Op == "reshape" || v.Op == "transpose" || v.Op == "broadcast_in_dim" || v.Op == "select" ||
			ops.ClassOf(v.Op) == ops.Elementwise:
			for _, a := range v.Args {
				if !mark(a) {
					return false
				}
			}
		default:
			return false
		}
		feeds[v] = true
		return true
	}
	if !mark(conv.Args[0]) || !mark(conv.Args[1]) {
		return rows, nil, false
	}
	for _, v := range k.Body.Values {
		if !feeds[v] && v != conv && (types[v].Sym != nil || slices.ContainsFunc(v.Args, func(a *ir.Value) bool { return types[a].Sym != nil })) {
			return rows, nil, false
		}
	}
	return rows, map[*ir.Value][]sym.Expr{conv.Args[0]: img.Sym, conv.Args[1]: wt.Sym}, true
}
