package nvvm

import "github.com/gcomp/gcomp/codegen/plan"

// contractsSymbolic reports whether k is a batched product contracting a symbolic dim that is
// not its rows (codegen/ptx's symcontract.go) that codegen/ptx computes on tensor cores (or any
// template but FFMA): this package's is the FFMA template's (symcontract.go), so
// codegen/backend's nvvm producer takes codegen/ptx's entry for the others.
func contractsSymbolic(k plan.Kernel, t plan.Target) bool {
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
					c, err := plan.ContractionPlan(k, t)
					return err != nil || c.Kind != "ffma"
				}
			}
		}
	}
	return false
}
