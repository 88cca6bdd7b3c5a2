package nvvm

import "github.com/gcomp/gcomp/codegen/plan"

// foldsView reports whether k is a GEMM whose K is the symbolic rows reading an operand through
// views at the run's sizes (a weight gradient of attention's heads merged back; codegen/ptx's
// symfold_view.go): this package's fold (symfold.go) reads strided operands only, so
// codegen/backend's nvvm producer takes codegen/ptx's entry for it.
func foldsView(k plan.Kernel, t plan.Target) bool {
	if !k.Symbolic || k.Sizes == nil {
		return false
	}
	p, err := plan.GEMMPlan(k, t)
	return err == nil && foldsK(true, p) && (p.A.View != nil || p.B.View != nil)
}
