package nvvm

import (
	"slices"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// contractsSymbolic reports whether k is a batched product contracting a symbolic dim that is
// not its rows (codegen/ptx's symcontract.go) that codegen/ptx computes on tensor cores (or any
// template but FFMA): this package's is the FFMA template's (symcontract.go), so
// codegen/backend's nvvm producer takes codegen/ptx's entry for the others.
func contractsSymbolic(k plan.Kernel, t plan.Target) bool {
	if !k.Symbolic || k.Sizes == nil {
		return false
	}
	for _, v := range k.Graph.Values {
		if v.Op != "dot_general" || len(v.Attrs.Ints("lhs_batch")) == 0 || slices.Contains(v.Attrs.Ints("lhs_contract"), 0) {
			continue // a batched fold of the rows is symfold*.go's
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

// productsRHSSymbolic reports whether k has a batched product whose right operand has a symbolic
// free dim that codegen/ptx computes on tensor cores (or any template but FFMA): this package's
// is the FFMA template's (symcontract_rhs.go).
func productsRHSSymbolic(k plan.Kernel, t plan.Target) bool {
	if !k.Symbolic || k.Sizes == nil {
		return false
	}
	for _, v := range k.Graph.Values {
		if v.Op == "dot_general" && len(v.Attrs.Ints("lhs_batch")) > 0 && symbolicRHSFree(v, k) {
			c, err := plan.ContractionPlan(k, t)
			return err != nil || c.Kind != "ffma"
		}
	}
	return false
}

// symbolicRHSFree reports whether batched product v's right operand has a symbolic free dim
// (q·kᵀ by hand over a symbolic seq: codegen/ptx's symcontract_rhs.go).
func symbolicRHSFree(v *ir.Value, k plan.Kernel) bool {
	s := plan.SymSizes(v.Args[1], k.Sizes)
	for d, e := range s {
		if _, ok := e.IsConst(); !ok && !slices.Contains(v.Attrs.Ints("rhs_batch"), d) && !slices.Contains(v.Attrs.Ints("rhs_contract"), d) {
			return true
		}
	}
	return false
}

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
