package nvvm

import (
	"maps"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
)

// broadcastsEpilogue reports whether k is a batched product whose epilogue reads a tensor at the
// run's sizes through a broadcast or another view (a mask over the heads, transposed or not:
// codegen/ptx's symcontract_bcast.go reads it at the run's strides) that this package's GEMM
// epilogue does not: a broadcast of a buffer is its own beside its FFMA products
// (symcontract_bcast.go), not beside tensor cores; any other view is codegen/ptx's.
func broadcastsEpilogue(k plan.Kernel, t plan.Target) bool {
	if !k.Symbolic || k.Sizes == nil {
		return false
	}
	chain := map[*ir.Value]bool{}
	for _, v := range k.Graph.Values {
		if v.Op == "dot_general" && len(v.Attrs.Ints("lhs_batch")) > 0 {
			maps.Copy(chain, operandChain(v))
		}
	}
	if len(chain) == 0 {
		return false
	}
	for v := range k.Sizes {
		switch {
		case chain[v] || len(v.Args) == 0 || !symbolicSizes(v.Args[0], k.Sizes):
			// an operand's view, or a static bias broadcast
		case (v.Op == "transpose" || v.Op == "reshape" || v.Op == "slice") && buffer(viewRoot(v)):
			return true
		case v.Op == "broadcast_in_dim" && (!ownsBroadcasts(k, t) || !buffer(v.Args[0])):
			return true
		}
	}
	return false
}

// viewRoot is the value v views through transposes, reshapes, slices and broadcasts.
func viewRoot(v *ir.Value) *ir.Value {
	for v.Op == "transpose" || v.Op == "reshape" || v.Op == "slice" || v.Op == "broadcast_in_dim" {
		v = v.Args[0]
	}
	return v
}

func buffer(v *ir.Value) bool { return v.Op == ir.OpInput || v.Op == ir.OpParam }
