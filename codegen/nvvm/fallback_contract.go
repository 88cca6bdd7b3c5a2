package nvvm

import (
	"slices"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// broadcastsEpilogue reports whether k is a batched product whose epilogue reads a tensor at the
// run's sizes through a broadcast (a mask over the heads: codegen/ptx's symcontract_bcast.go
// reads it at the run's strides; this package's GEMM epilogue indexes it at the bound's).
func broadcastsEpilogue(k plan.Kernel) bool {
	if !k.Symbolic || k.Sizes == nil {
		return false
	}
	chain := map[*ir.Value]bool{}
	batched := false
	for _, v := range k.Graph.Values {
		if v.Op != "dot_general" || len(v.Attrs.Ints("lhs_batch")) == 0 {
			continue
		}
		batched = true
		for _, a := range v.Args {
			for u := a; ; u = u.Args[0] {
				chain[u] = true
				if len(u.Args) == 0 {
					break
				}
			}
		}
	}
	for v := range k.Sizes {
		if batched && v.Op == "broadcast_in_dim" && !chain[v] && slices.ContainsFunc(plan.SymSizes(v.Args[0], k.Sizes), func(e sym.Expr) bool { return !isConst(e) }) {
			return true // a tensor of the run's sizes broadcast (a static bias broadcast is not)
		}
	}
	return false
}
