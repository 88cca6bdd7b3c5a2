package ptx

import (
	"github.com/gcomp/gcomp/ir/sym"
)

// Batched products contracting a symbolic dim whose symbolic batch dim follows a static one:
// operands [seq, 2, h, d] batched over [2, h], or [2, b, seq, d] over [2, b]. grid.z covers the
// run's batch product (its rows) and a block past it exits (symBatch), as when the symbolic dim
// leads; but delinearized over the bound's batch sizes, grid.z would put the run's batch element
// (i, j) at the bound's (i·h + j) / H, so the block splits it at the run's sizes instead: one
// division and remainder per batch dim after the first by a size uniform over the launch. The
// coordinates then address both operands (at the run's strides: strided operands' registers,
// generic ones through their views), and the result, [batch..., M, N] contiguous at the run's
// sizes, is row grid.z·M + r as before. A batch led by its symbolic dim (or static) keeps the
// bound's delinearization: the run's trailing sizes are the bound's there.

// symBatchAfter records the run's batch sizes s when a symbolic one follows another dim (it
// evaluates each once, so that batchIndex cannot fail); nothing otherwise.
func (mm *matmul) symBatchAfter(b *builder, s []sym.Expr) error {
	after := false
	for _, e := range s[1:] {
		after = after || !isConst(e)
	}
	if !after {
		return nil
	}
	for _, e := range s {
		if _, err := symEval(func() string { return b.reg(rU32) }, func(string, ...string) {}, mm.symv.dims, e); err != nil {
			return err
		}
	}
	mm.symBatchAt = s
	return nil
}

// batchIndex is the batch coordinates of block row bz: over the run's batch sizes when a symbolic
// batch dim follows a static one, else over the bound's (the static template's).
func (mm *matmul) batchIndex(bz string) *index {
	x := newIndexLin(mm.batchShape, bz)
	if mm.symBatchAt != nil {
		x.coord = mm.symv.delinearize(mm.e.b, mm.symBatchAt, bz)
	}
	return x
}
