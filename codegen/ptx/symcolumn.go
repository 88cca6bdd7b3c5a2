package ptx

// The column template at symbolic sizes: a symbolic kernel's reduction that keeps its leading rows
// and reduces a contiguous block of static axes followed by kept ones ([A, R, C] with the rows
// leading A: nearest upsampling's backward over [N, C, H, 2, W]'s axis 3 once the trailing window
// is summed, a sum over a middle axis with keepdims spread back). The static build takes it with
// the column template (32×8 blocks per 32 columns of one of the A slices), and so does the
// symbolic build: A is the rows times the static axes between them and the reduced block, so a
// run's slices are the first of the bound's, and the tile count (A·ceil(C/32), the bound's at the
// bound) at the run's sizes is the size parameter. It ends the block-stride loop over tiles, and
// the grid is computed at launch from it (SymWork: one tile per block along x, at most the
// bound's blocks). Each tile folds its columns' R elements in the static kernel's order, so the
// outputs equal the static build's at the run's sizes bit for bit. Scattered reduced axes take
// the row template over the kept elements in both builds (reduceShape.rowElement), the rows
// their count.

// colTiles declares the column template's tile count: tiles (static) for a static kernel or one
// folding its rows (the fold's size is the reduced count: symfold.go), the size parameter for a
// symbolic kernel keeping its rows.
func colTiles(k Kernel, rs reduceShape, b *builder, args *[]Arg, tiles int) (string, *SymWork, error) {
	if !k.Symbolic || foldsRows(k, rs.axes) {
		return imm(tiles), nil, nil
	}
	return symRows(k, b, args, tiles, 1, 0, max(1, min(tiles, maxLoopBlocks)))
}
