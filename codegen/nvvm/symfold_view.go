package nvvm

import (
	"fmt"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
)

// Folds read through views, as codegen/ptx's symfold_view.go: a weight gradient dW = Xᵀ·dY whose
// operand merges attention's heads back ([batch, heads, seq, d] transposed and reshaped into
// [batch·seq, heads·d]) is not strided: its K, the rows, steps over seq within a head and over
// heads·seq·d between batch elements. Each generic operand's copy delinearizes its k coordinate
// over the view's contract dims at the run's sizes and follows the views down to the buffer
// (symCopier, symstride_gemm.go), each size and stride from the dims' parameters (after the
// buffers, before K's: symStrideArgs); a copy at or past K at the run reads nothing and copies
// 0. The k loop and the tiles are the static kernel's at the run's sizes, so the fold sums in
// its order.

// foldViews checks the operands of GEMM p, whose K is symbolic kernel k's rows, in codegen/ptx's
// words: one read through views needs the values' sizes. (One strided at the
// bound by a symbolic dim, a transpose of [2, seq], is read through its views: plan.GEMMPlan
// makes it generic, as codegen/ptx's template reads it.)
func foldViews(k plan.Kernel, p plan.GEMM) error {
	if p.A.View == nil && p.B.View == nil {
		return nil
	}
	if k.Sizes == nil {
		return fmt.Errorf("a GEMM whose K is the symbolic rows, read through a view, does not run at symbolic sizes yet without its values' sizes")
	}
	return nil
}

// loadIf is kg.load(d, p, lin) where ok holds and 0 (of register dtype r) elsewhere, reading
// nothing there: a fold's copy past K at a run of no rows has no element to read.
func (kg *kgen) loadIf(ok value.Value, d, r irg.DType, p, lin value.Value) value.Value {
	from := kg.b
	in, after := kg.block("load"), kg.block("load_done")
	from.NewCondBr(ok, in, after)
	kg.b = in
	v := kg.load(d, p, lin)
	kg.b.NewBr(after)
	loaded := kg.b
	kg.b = after
	return after.NewPhi(ir.NewIncoming(v, loaded), ir.NewIncoming(constVal(r, 0), from))
}
