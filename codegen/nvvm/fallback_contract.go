package nvvm

import "github.com/gcomp/gcomp/codegen/plan"

// contractsSymbolic reports whether k is a batched product contracting a symbolic dim that is
// not its rows (codegen/ptx's symcontract.go: both operands read through its generic copier at
// the run's sizes, K at the run bounding the k loop): this package's symbolic GEMM keeps K and
// the operands' strides at the bound, so codegen/backend's nvvm producer takes codegen/ptx's
// entry for it.
func contractsSymbolic(k plan.Kernel) bool {
	if !k.Symbolic || k.Sizes == nil {
		return false
	}
	for _, v := range k.Graph.Values {
		if v.Op != "dot_general" || len(v.Attrs.Ints("lhs_batch")) == 0 {
			continue
		}
		for i, attr := range []string{"lhs_contract", "rhs_contract"} {
			s := plan.SymSizes(v.Args[i], k.Sizes)
			for _, d := range v.Attrs.Ints(attr) {
				if _, ok := s[d].IsConst(); !ok {
					return true
				}
			}
		}
	}
	return false
}
