package passes

import (
	"github.com/gcomp/gcomp/codegen/gemv"
	"github.com/gcomp/gcomp/ir"
)

// gemvPlan is the GEMV launch codegen gives a contraction kernel whose product has at most
// gemv.MaxM rows (decode's matrix–vector products), as package gemv plans it for both.
func gemvPlan(k *Kernel) (gemv.Plan, bool) {
	if k.Kind != Contraction || k.Body == nil {
		return gemv.Plan{}, false
	}
	var dot *ir.Value
	for _, v := range k.Body.Values {
		switch v.Op {
		case "dot_general":
			dot = v
		case "conv2d", "max_pool2d", "avg_pool2d":
			return gemv.Plan{}, false
		}
	}
	if dot == nil {
		return gemv.Plan{}, false
	}
	return gemv.Of(dot)
}
