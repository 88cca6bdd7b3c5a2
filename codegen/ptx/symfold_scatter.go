package ptx

import "fmt"

// Folds over scattered axes: a symbolic kernel's reduction whose axes are its leading symbolic
// rows and static axes around kept static ones (BatchNorm's statistics over [N, C, H, W]'s
// [0, 2, 3], keeping C). The static build takes such a reduction with the row template over the
// kept elements (one block per channel), each element's coordinates put together from the
// channel's and the reduced position's (reduceShape.rowElement). The reduced shape leads with
// the rows ([N, H, W]), so the run's elements are the first N·H·W positions of each channel's
// reduction, whatever the bound: the fold bounds the reduced loops (the reduction's, and the
// full-shape outputs' spreading the result back) by that count at the run's sizes, a size
// parameter, and the grid is the kept elements', static.
//
// The block has the bound's count's threads (rowBlock), so the fold takes a run's elements in the
// static kernel's order at that size when the two counts give the same block (both over 128): at
// fewer elements the static kernel's block is narrower and its partials combine in another order.

// foldsScattered reports whether symbolic kernel k's reduction rs folds its rows among scattered
// axes. The compiler lets only a reduction whose axes lead with every symbolic dim fold, so the
// kept axes are static.
func foldsScattered(k Kernel, rs reduceShape) bool { return foldsRows(k, rs.axes) && rs.scattered }

// rowExtent declares the row template's sizes: the rows it runs over and the end of its loops over
// a row's reduced elements. A symbolic kernel runs over its rows at the run's sizes, each reduced
// whole; a scattered fold over every kept element, each reduced over the run's count.
func rowExtent(k Kernel, rs reduceShape, b *builder, args *[]Arg, online bool) (rows, rEnd string, work *SymWork, err error) {
	if !foldsScattered(k, rs) {
		rows, work, err = symRows(k, b, args, rs.a, 1, 0, max(1, min(rs.a, maxLoopBlocks)))
		return rows, imm(rs.r), work, err
	}
	if online {
		return "", "", nil, fmt.Errorf("an online softmax over scattered axes %v of %s folding the symbolic rows does not run at symbolic sizes yet", rs.axes, rs.full)
	}
	rEnd, work, err = symFold(k, b, args, rs.r)
	return imm(rs.a), rEnd, work, err
}
