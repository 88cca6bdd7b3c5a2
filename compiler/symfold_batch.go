package compiler

import (
	"slices"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/passes"
)

// Batched folds of the rows. A per-head weight gradient dW[h] = X[h]ᵀ·dY[h] contracts the rows
// (K leads with the operands' leading axis) per batch element. With static batch dims the
// result is static: the templates keep the bound's grid, one grid.z block row per batch
// element, and only the k loop follows the run's rows (symfold_view.go). With the batch
// symbolic too (the heads, or a batch beside the rows), the result's rows are the batch:
// contractViews takes it as a batched product contracting a symbolic dim, although its batch
// dims follow the rows in its operands, and both producers read it so (plan.FoldsSymbolicBatch):
// grid.z follows the run's batch, the generic copier takes each batch, free and k coordinate
// with the strides of the run's sizes, K at the run bounds the k loop. A symbolic batch dim may
// follow a static one: grid.z splits at the run's batch sizes (symcontract_after.go in both
// producers).

// batchedFold reports whether kernel k's one dot_general folds the rows (it contracts its left
// operand's leading axis) in a product batched over static dims (its operands' sizes, if any,
// are sizes): the templates' fold work keeps one block along z, but a batched GEMM's grid.z is
// its batch, the bound's at every size, so the launch keeps the bound's grid (the k loop alone
// follows the run's rows).
func batchedFold(k *passes.Kernel, sizes map[*ir.Value][]sym.Expr) bool {
	dot := oneDot(k)
	return dot != nil && len(dot.Attrs.Ints("lhs_batch")) > 0 && slices.Contains(dot.Attrs.Ints("lhs_contract"), 0) && !plan.FoldsSymbolicBatch(dot, sizes)
}
