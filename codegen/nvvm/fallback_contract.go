package nvvm

import (
	"maps"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
)

// broadcastsEpilogue reports whether k is a batched product whose epilogue reads a tensor at the
// run's sizes through a broadcast or another view that this package's GEMM epilogue does not
// read at the run's strides: beside a product symContract does not take (M or the batch symbolic
// alone, whose epilogue reads at the bound's), or a view of a value computed in the kernel
// (codegen/ptx refuses it in its words). Views of a buffer beside a product contracting a
// symbolic dim or with a symbolic N, on FFMA or tensor cores, are this package's own
// (symcontract_bcast.go).
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
		case chain[v] || !isView(v) || !symbolicSizes(v.Args[0], k.Sizes):
			// an operand's view, or a static bias broadcast
		case !buffer(viewRoot(v)) || !ownsViews(k, t):
			return true
		}
	}
	return false
}

// isView reports whether v is a view an epilogue reads through at the run's sizes.
func isView(v *ir.Value) bool {
	switch v.Op {
	case "transpose", "reshape", "slice", "broadcast_in_dim":
		return true
	}
	return false
}

// viewRoot is the value v views through transposes, reshapes, slices and broadcasts.
func viewRoot(v *ir.Value) *ir.Value {
	for isView(v) {
		v = v.Args[0]
	}
	return v
}

func buffer(v *ir.Value) bool { return v.Op == ir.OpInput || v.Op == ir.OpParam }
