package nvvm

import (
	"fmt"

	"github.com/gcomp/gcomp/codegen/plan"
)

// refuseFP8 refuses kernels over f8e4m3/f8e5m2 values: libNVVM 11.8 knows no fp8 type and emits
// PTX 7.8, which has sm_89's fp8 cvt only from 8.1. The error counts as Refused, so a producer
// choosing per kernel takes codegen/ptx's entry.
func refuseFP8(k plan.Kernel, t plan.Target) error {
	for _, v := range k.Graph.Values {
		if v.Type.DType.IsFP8() {
			return fmt.Errorf("%s: %s: the %s kernel for sm_%d %s: libNVVM 11.8 has no fp8 conversions (codegen/ptx writes them for sm_89 and sm_90)",
				k.Name, k.Graph.Format(v), v.Type.DType, t.SM, refusedText)
		}
	}
	return nil
}
