package ptx

import (
	"fmt"
	"slices"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// Folds read through views. A weight gradient dW = Xᵀ·dY whose operand merges attention's heads
// back ([batch, heads, seq, d] transposed and reshaped into [batch·seq, heads·d]) is not strided:
// its K, the rows, steps over seq within a head and over heads·seq·d between batch elements.
// The generic copier delinearizes each copy's k coordinate over the view's contract dims and
// follows the views down to the buffer (symview.go), each size and stride from the dims'
// parameters, so it reads the run's layout; copies at or past K at the run are zero-filled, as
// the strided copies past kBelow. The k loop and the tiles are the static kernel's at the run's
// sizes, so the fold sums in its order.

// symFoldViews makes the generic operands of a GEMM whose K is the symbolic rows read at the
// run's sizes: it loads the dims k.Sizes names and checks every size of the views once. A
// strided operand read through views whose strides follow the sizes is read as a generic one
// (symFoldGeneric).
func (mm *matmul) symFoldViews(k Kernel, b *builder, args *[]Arg) error {
	if err := mm.symFoldGeneric(k); err != nil {
		return err
	}
	if mm.lhs.view == nil && mm.rhs.view == nil {
		return nil
	}
	if k.Sizes == nil {
		return fmt.Errorf("a GEMM whose K is the symbolic rows, read through a view, does not run at symbolic sizes yet without its values' sizes")
	}
	mm.symv = &symView{dims: symViewLoad(k, b, args, k.Sizes), sizes: k.Sizes}
	for _, l := range []operandLayout{mm.lhs, mm.rhs} {
		if l.view == nil {
			continue
		}
		if err := mm.symv.check(b, l.view); err != nil {
			return err
		}
	}
	return nil
}

// symFoldGeneric makes each operand of fold kernel k (a GEMM whose K is the symbolic rows, with
// its values' sizes) that is strided at the bound by a symbolic dim generic: a transpose of
// [2, seq] steps seq elements along its free dim, the bound's seq in the strided copies, so it
// is read through its views at the run's sizes instead (symCopier, the copier of the folds
// through views). Only the copies change: the tiles and the k loop are the static kernel's, so
// the fold is its bit for bit. GEMMPlan applies it too, so that the NVVM producer's plan has
// this template's copies.
func (mm *matmul) symFoldGeneric(k Kernel) error {
	if !k.Symbolic || k.Sizes == nil || mm.conv != nil || mm.quant != nil || !slices.Contains(mm.dot.Attrs.Ints("lhs_contract"), 0) {
		return nil
	}
	for i, l := range []*operandLayout{&mm.lhs, &mm.rhs} {
		a := mm.dot.Args[i]
		batch, contract := mm.dot.Attrs.Ints([]string{"lhs_batch", "rhs_batch"}[i]), mm.dot.Attrs.Ints([]string{"lhs_contract", "rhs_contract"}[i])
		if l.view != nil || a.Op == ir.OpInput || a.Op == ir.OpParam || foldStrided(a, k.Sizes, batch, contract) {
			continue
		}
		g, err := genericLayout(a, batch, contract)
		if err != nil {
			return err
		}
		*l = g
	}
	return nil
}

// foldStrided is plan.FoldStrided: operand a, strided at the bound, keeps the bound's strides
// at every size.
func foldStrided(a *ir.Value, sizes map[*ir.Value][]sym.Expr, batch, contract []int) bool {
	return plan.FoldStrided(a, sizes, batch, contract)
}

func isConst(e sym.Expr) bool { _, ok := e.IsConst(); return ok }
