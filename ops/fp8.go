package ops

import "github.com/gcomp/gcomp/ir"

// dotResult is the dtype of a dot_general over operands of dtype d: d itself, except that fp8
// operands (the storage types ir.F8E4M3 and ir.F8E5M2) give f16, the narrowest compute dtype
// holding every fp8 value: the sum of exact products is rounded once to it, as for any dot.
func dotResult(d ir.DType) ir.DType {
	if d.IsFP8() {
		return ir.F16
	}
	return d
}
