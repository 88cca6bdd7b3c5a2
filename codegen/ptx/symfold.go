package ptx

import (
	"fmt"
	"slices"

	"github.com/gcomp/gcomp/codegen/plan"
)

// Templates that fold a symbolic kernel's rows into a static result (the compiler's symfold.go
// says which kernels do): the column reduction whose reduced rows lead its operand (a bias
// gradient's or a loss's sum over the batch), and the GEMMs whose K is the rows (a weight
// gradient Xᵀ·dY). The reduced count R or K at the run's sizes is the size parameter; it bounds
// the loop over rows (each thread folds every 8th row of its column) or the k loop (steps of
// mmBK, the copies past K zero-filled), so the fold takes the run's rows in the order the static
// kernel at that size takes them. The result is static, so the grid is the bound's: the work's
// axis is z, one block.

// foldsRows reports whether symbolic kernel k's reduction (axes of its operand) folds its rows:
// the reduced axes include the leading one.
func foldsRows(k Kernel, axes []int) bool { return k.Symbolic && slices.Contains(axes, 0) }

// symFold declares a folding kernel's size parameter: units (the reduced count at the bound) at
// the run's sizes.
func symFold(k Kernel, b *builder, args *[]Arg, units int) (string, *SymWork, error) {
	n, scale, err := symSize(k, b, args, units, "folded count")
	if err != nil {
		return "", nil, err
	}
	return n, &SymWork{Vector: 1, MaxBlocks: 1, Scale: scale, Tile: max(1, units), Axis: 2}, nil
}

// symFoldK declares the K parameter of a GEMM whose K is the symbolic rows (its left operand's
// contracting dims lead with them); nothing for another. Tensor-core copies of chunks along a
// contiguous K need K at the run's sizes to be a whole number of chunks: a multiple of 8 per row.
func (mm *matmul) symFoldK(k Kernel, b *builder, args *[]Arg, tensorCores bool) (bool, *SymWork, error) {
	if !k.Symbolic || mm.conv != nil || !slices.Contains(mm.dot.Attrs.Ints("lhs_contract"), 0) || plan.FoldsSymbolicBatch(mm.dot, k.Sizes) {
		return false, nil, nil // a fold batched over a symbolic dim: symContract's
	}
	if err := mm.symFoldViews(k, b, args); err != nil { // symfold_view.go
		return true, nil, err
	}
	switch {
	case tensorCores && (mm.lhs.kSt == 1 || mm.rhs.kSt == 1) && k.Rows > 0 && (mm.K/k.Rows)%8 != 0:
		return true, nil, fmt.Errorf("a tensor-core GEMM whose K is the symbolic rows, contiguous, with %d per row (not a multiple of 8), does not run at symbolic sizes yet", mm.K/k.Rows)
	}
	n, w, err := symFold(k, b, args, mm.K)
	mm.symK = n
	return true, w, err
}

// kBelow is the bound a k coordinate is compared with (k < bound, signed) to lie below K − d.
func (mm *matmul) kBelow(d int) string {
	if mm.symK == "" {
		return imm(mm.K - d)
	}
	return mm.a.sub(mm.symK, imm(d))
}

// kSteps is the number of k steps of bk: ceil(K/bk), K at the run's sizes when it is symbolic.
func (mm *matmul) kSteps(bk int) string {
	if mm.symK == "" {
		return imm(ceilDiv(mm.K, bk))
	}
	return mm.a.div(mm.a.add(mm.symK, imm(bk-1)), bk)
}
