package nvvm

import (
	"slices"

	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
)

// The column template at symbolic sizes, as codegen/ptx's symcolumn.go: a symbolic kernel's
// reduction keeping its leading rows over a contiguous block of static axes followed by kept
// ones ([A, R, C], the rows leading A: unet's upsampling backward over [N, C, H, 2, W]'s axis 3)
// is planned as the column template, as in the static build. A run's A slices are the first of
// the bound's, so the tile count A·ceil(C/TileCols) at the run's sizes, the size parameter, ends
// the block-stride loop over tiles and sets the grid at launch (one tile per block along x, at
// most the bound's blocks); each tile folds its columns in the static kernel's order.

// keepsColumnRows reports whether symbolic kernel k's column reduction (plan rp) keeps its rows:
// its size is the tile count, not the folded count (symfold.go).
func keepsColumnRows(k plan.Kernel, rp plan.Reduction) bool {
	return k.Symbolic && !slices.Contains(rp.Axes, 0)
}

// symColumnArgs returns the parameters and work of a symbolic column reduction keeping its rows:
// its tiles at the bound, tiles, are the size at the run's sizes.
func symColumnArgs(k plan.Kernel, rp plan.Reduction, tiles int) ([]plan.Arg, *plan.SymWork, error) {
	args, scale, err := symArgs(k, tiles, "tile count")
	return args, symWork(scale, 1, 0, rp.Grid[0]), err
}

// colExtent is the end of the column template's loop over tiles and of its loops down a column:
// the tiles at the run's sizes and R for a kernel keeping its rows; the tiles and R (the folded
// count at the run's sizes in a fold) otherwise.
func (kg *kgen) colExtent(k plan.Kernel, rp plan.Reduction, tiles int) (tileEnd, rEnd value.Value) {
	if keepsColumnRows(k, rp) {
		return kg.size, ci(rp.R)
	}
	return ci(tiles), kg.units(rp.R)
}
