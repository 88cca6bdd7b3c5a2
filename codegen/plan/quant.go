package plan

import "github.com/gcomp/gcomp/codegen/qmma"

// QuantizedMMA reports whether kernel k is a tensor-core GEMM over a quantized weight (the
// NVVM producer has no such template and borrows codegen/ptx's entry).
func QuantizedMMA(k Kernel) bool {
	for _, v := range live(k.Graph) {
		if _, ok := qmma.Fits(v); ok { // a dot_general whose weight qmma takes
			return true
		}
	}
	return false
}
