package nvvm

import (
	"strings"

	"github.com/gcomp/gcomp/ir/sym"
)

// Batched products contracting a symbolic dim whose symbolic batch dim follows a static one, as
// codegen/ptx's symcontract_after.go: grid.z covers the run's batch product and a block past it
// exits (contractPrologue); the block splits grid.z into batch coordinates at the run's batch
// sizes (a division and remainder per batch dim after the first, by a size uniform over the
// launch), which address both operands at the run's strides. A batch led by its symbolic dim,
// or static, keeps the bound's split: its trailing sizes are the bound's at every run.

// batchAfter is the batch sizes of s at dims when a symbolic one follows another, else nil.
func batchAfter(s []sym.Expr, dims []int) []sym.Expr {
	for _, d := range dims[1:] {
		if !isConst(s[d]) {
			out := make([]sym.Expr, len(dims))
			for i, d := range dims {
				out[i] = s[d]
			}
			return out
		}
	}
	return nil
}

// batchIndex is blockIdx.z's batch coordinates: at the run's sizes when a symbolic batch dim
// follows a static one, else over the bound's (derived on demand).
func (mm *gemm) batchIndex() *index {
	x := newIndexLin(mm.p.Batch, mm.bz)
	if mm.con != nil && mm.con.batchAt != nil {
		x.coord = mm.symv.delinearize(mm.con.batchAt, mm.bz)
	}
	return x
}

// exprs is s's entries at dims, comma-separated.
func exprs(s []sym.Expr, dims []int) string {
	t := make([]string, len(dims))
	for i, d := range dims {
		t[i] = s[d].String()
	}
	return strings.Join(t, ",")
}
