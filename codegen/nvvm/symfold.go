package nvvm

import (
	"fmt"
	"slices"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
)

// Templates that fold a symbolic kernel's rows into a static result, as codegen/ptx's
// symfold.go: the column reduction whose reduced rows lead its operand (a bias gradient's or a
// loss's sum over the batch) and the tiled GEMMs whose K is the rows (a weight gradient Xᵀ·dY).
// The reduced count R or K at the run's sizes is the size parameter; it bounds the loop over
// rows (each thread folds every TileRows-th row of its column) or the k loop (ceil(K/BK) steps,
// the copies at or past K zero-filled), so the fold takes the run's rows in the order the static
// kernel at that size takes them. The result is static, so the grid is the bound's: the work's
// axis is z, one block.

// codegen/ptx's column tile (its colWidth, colRows): the column template a fold takes even
// where the plan, seeing one column, names the row or split template.
const foldCols, foldRows = 32, 8

// foldsReduction reports whether symbolic kernel k's reduction (plan rp) folds its rows: the
// reduced axes include the leading one and are adjacent.
func foldsReduction(k plan.Kernel, rp plan.Reduction) bool {
	return k.Symbolic && slices.Contains(rp.Axes, 0) && !rp.Scattered
}

// symFoldArgs returns a folding kernel's parameters and work: its reduced count units at the
// bound is the size, at the run's sizes.
func symFoldArgs(k plan.Kernel, units int) ([]plan.Arg, *plan.SymWork, error) {
	args, scale, err := symArgs(k, units, "folded count")
	return args, symWork(scale, max(1, units), 2, 1), err
}

// symColReduce is the column template over the rows a symbolic kernel folds: [A, R, C] with
// the rows leading R (A is 1), a block of foldCols × foldRows threads per tile of columns.
func (md *module) symColReduce(k plan.Kernel, rp plan.Reduction) (*ir.Func, plan.Launch, error) {
	rp.Kind, rp.Threads, rp.TileCols, rp.TileRows, rp.ScratchBytes = "column", foldCols*foldRows, foldCols, foldRows, 0
	rp.Grid = [3]int{max(1, min(rp.A*((rp.C+foldCols-1)/foldCols), plan.MaxLoopBlocks)), 1, 1}
	return md.colReduce(k, rp)
}

// colReduceArgs returns the column template's parameters and work: plan.Params and none for a
// static kernel; the folded count after them for a symbolic one folding its rows, its tiles (at
// the bound) for one keeping them (symcolumn.go).
func colReduceArgs(k plan.Kernel, rp plan.Reduction, tiles int) ([]plan.Arg, *plan.SymWork, error) {
	switch {
	case !k.Symbolic:
		return plan.Params(k.Graph), nil, nil
	case keepsColumnRows(k, rp):
		args, w, err := symColumnArgs(k, rp, tiles)
		return viewDims(k, rp, args), w, err // symfold_reduce_view.go
	}
	args, w, err := symFoldArgs(k, rp.R)
	return viewDims(k, rp, args), w, err
}

// symFoldK returns the parameters and work of a tiled GEMM whose K is the symbolic rows (its left
// operand's contracting dims lead with them), with ok; nothing for another. Tensor-core copies
// of chunks along a contiguous K need K at the run's sizes to be a whole number of chunks: a
// multiple of 8 per row. Operands read through views take the dims' values too (symfold_view.go).
func symFoldK(k plan.Kernel, p plan.GEMM) (args []plan.Arg, w *plan.SymWork, ok bool, err error) {
	if !foldsK(k, p) {
		return nil, nil, false, nil
	}
	if err := foldViews(k, p); err != nil { // symfold_view.go
		return nil, nil, true, err
	}
	if p.MMA != nil && (p.A.KSt == 1 || p.B.KSt == 1) && k.Rows > 0 && (p.K/k.Rows)%8 != 0 {
		return nil, nil, true, fmt.Errorf("a tensor-core GEMM whose K is the symbolic rows, contiguous, with %d per row (not a multiple of 8), does not run at symbolic sizes yet", p.K/k.Rows)
	}
	if p.A.View == nil && p.B.View == nil {
		args, w, err = symFoldArgs(k, p.K)
		return args, w, true, err
	}
	// Read through views: the dims' parameters before K's (symfold_view.go).
	args, scale, err := symStrideArgs(k, p.K, "folded count")
	return args, symWork(scale, max(1, p.K), 2, 1), true, err
}

// foldsK reports whether tiled GEMM p of kernel k contracts the symbolic kernel's rows into a
// result whose batch is static; one batched over a symbolic dim is symcontract.go's, as
// codegen/ptx's (plan.FoldsSymbolicBatch).
func foldsK(k plan.Kernel, p plan.GEMM) bool {
	return k.Symbolic && p.Conv == nil && slices.Contains(p.Dot.Attrs.Ints("lhs_contract"), 0) && !plan.FoldsSymbolicBatch(p.Dot, k.Sizes)
}

// kBelow is the bound a k coordinate is compared with (k < bound, signed) to lie below K − d:
// K's parameter less d in a fold, else the immediate.
func (mm *gemm) kBelow(d int) value.Value {
	if mm.symK == nil {
		return ci(mm.p.K - d)
	}
	return mm.kg.sub(mm.symK, ci(d))
}

// kSteps is the number of k steps of bk: ceil(K/bk), K at the run's sizes in a fold.
func (mm *gemm) kSteps(bk int) value.Value {
	if mm.symK == nil {
		return ci((mm.p.K + bk - 1) / bk)
	}
	return mm.kg.b.NewUDiv(mm.kg.add(mm.symK, ci(bk-1)), ci(bk))
}
