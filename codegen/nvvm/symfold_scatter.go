package nvvm

import (
	"fmt"
	"slices"

	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
)

// Folds over scattered axes, as codegen/ptx's symfold_scatter.go: a symbolic kernel's reduction
// whose axes are its leading symbolic rows and static axes around kept static ones (BatchNorm's
// statistics over [N, C, H, W]'s [0, 2, 3], keeping C) runs the row template over the kept
// elements (one block per channel, the grid static), each element's coordinates put together
// from the channel's and the reduced position's (rowElement). The reduced shape leads with the
// rows ([N, H, W]), so the run's elements are the first N·H·W positions of each channel's
// reduction: the folded count at the run's sizes, the size parameter, ends the loops over the
// reduced elements (the reduction's, and the full-shape outputs' spreading the result back). The
// block is the bound's count's (rowThreads) and the partials combine in codegen/ptx's order, so
// the two producers agree bit for bit.

// foldsScattered reports whether symbolic kernel k's reduction (plan rp) folds its rows among
// scattered axes.
func foldsScattered(k plan.Kernel, rp plan.Reduction) bool {
	return k.Symbolic && rp.Scattered && slices.Contains(rp.Axes, 0)
}

// rowArgs returns the row template's parameters and work: symReduce's, a symbolic row length's,
// or a scattered fold's
// (its reduced count at the bound the size, at the run's sizes). An online softmax over such
// axes is refused in codegen/ptx's words.
func rowArgs(k plan.Kernel, rp plan.Reduction) ([]plan.Arg, *plan.SymWork, error) {
	if args, w, ok, err := rowLenArgs(k, rp); ok { // a symbolic row length (symrowlen.go)
		return args, w, err
	}
	if !foldsScattered(k, rp) {
		return symReduce(k, rp)
	}
	if len(plan.OnlineSoftmaxPairs(k.Graph, rp.Reduces)) > 0 {
		return nil, nil, fmt.Errorf("an online softmax over scattered axes %v of %s folding the symbolic rows does not run at symbolic sizes yet", rp.Axes, rp.Full)
	}
	return symFoldArgs(k, rp.R)
}

// rowExtent is the end of the row template's loop over rows and of its loops over a row's reduced
// elements: a symbolic kernel's rows at the run's sizes, each reduced whole; a scattered fold's
// every kept element, each reduced over the run's count.
func (kg *kgen) rowExtent(k plan.Kernel, rp plan.Reduction) (rows, rEnd value.Value) {
	if foldsScattered(k, rp) {
		return ci(rp.A), kg.size
	}
	return kg.units(rp.A), ci(rp.R)
}
