package passes

import "slices"

// freesSymbolicRHS reports whether a batched product of k has a symbolic free dim on its right
// (q·kᵀ by hand over a symbolic seq: unfused attention's scores and their gradient dO·vᵀ):
// such a kernel runs at symbolic sizes on its own, N at the run its result's row stride
// (codegen/ptx's symcontract_rhs.go), but not as a persistent kernel's stage, whose products
// run the bound's N.
func freesSymbolicRHS(k *Kernel) bool {
	for _, v := range k.Body.Values {
		if v.Op != "dot_general" || len(v.Args) < 2 || len(v.Attrs.Ints("rhs_batch")) == 0 {
			continue
		}
		batch, contract := v.Attrs.Ints("rhs_batch"), v.Attrs.Ints("rhs_contract")
		for d, e := range symOf(k, v.Args[1]) {
			if _, ok := e.IsConst(); !ok && !slices.Contains(batch, d) && !slices.Contains(contract, d) {
				return true
			}
		}
	}
	return false
}
