package compiler

import (
	"maps"
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/passes"
)

// Symbolic dims that do not lead. A buffer [2, seq, 64] laid out contiguously at the run's sizes
// is 2·seq rows of 64: its rows are every dim up to its last symbolic one (rowsOf), the static
// ones before it included. The bound's code decodes a row index r into (b, s) with the bound's
// seq and encodes it back to r, so a kernel that never uses b or s apart (no op moves, reduces,
// slices or broadcasts along a dim of the rows; symrows.go's keepsRows) computes the run's rows
// when it runs its first R = 2·seq rows, exactly as for a leading [batch, seq].
//
// A product whose right operand is a static weight broadcast along the static dims before the
// symbolic ones (ONNX's MatMul of [2, seq, 16] by [16, 48] imports as a batched dot over the 2)
// would use b apart: its batch b starts at row b·seq at the run's sizes, b·bound in the
// template. unbatchWeights rewrites it to the unbatched product of the rows by the weight, the
// same values in the same order, which the GEMM templates take with M = R.

// unbatchWeights rewrites, in kernel k's body, each dot_general whose batch dims are the leading
// dims of both operands and whose right operand broadcasts a static weight along exactly them
// into the product of the left operand's rows by the weight itself. Called for symbolic kernels
// only, so static builds are unchanged.
func unbatchWeights(k *passes.Kernel) {
	for _, v := range k.Body.Values {
		if v.Op != "dot_general" || len(v.Args) != 2 {
			continue
		}
		lb, rb := v.Attrs.Ints("lhs_batch"), v.Attrs.Ints("rhs_batch")
		nb := len(lb)
		if nb == 0 || !leading(lb) || !leading(rb) {
			continue
		}
		r := v.Args[1]
		if r.Op != "broadcast_in_dim" || len(r.Args) != 1 || r.Args[0].Type.Sym != nil {
			continue
		}
		w, dims := r.Args[0], r.Attrs.Ints("dims")
		if w.Type.Shape.Rank() != r.Type.Shape.Rank()-nb || !w.Type.Shape.Equal(r.Type.Shape[nb:]) {
			continue
		}
		if slices.ContainsFunc(dims, func(d int) bool { return d < nb }) || !isRange(dims, nb) {
			continue
		}
		attrs := v.Attrs.Clone()
		delete(attrs, "lhs_batch")
		delete(attrs, "rhs_batch")
		rc := slices.Clone(v.Attrs.Ints("rhs_contract"))
		for i := range rc {
			rc[i] -= nb
		}
		attrs["rhs_contract"] = rc
		v.Args = []*ir.Value{v.Args[0], w}
		v.Attrs = attrs
	}
}

// leading reports whether dims are 0, 1, ..., len(dims)-1.
func leading(dims []int) bool { return isRange(dims, 0) }

// isRange reports whether dims are from, from+1, ....
func isRange(dims []int, from int) bool {
	for i, d := range dims {
		if d != from+i {
			return false
		}
	}
	return true
}

// A product's left operand read through views that move the symbolic dims ([2, 2, seq, 8]
// transposed and merged back into [2, seq, 16], the heads after attention) is not rows of its
// buffer, but it is rows itself: codegen/ptx's GEMM takes the dims and reads each row through
// the views at the run's sizes (symview.go there). viewRows accepts such a kernel when its
// other values keep rows, and returns the sizes of its values for that template.

// viewRows retries a contraction kernel that rowKernel refused (why) with its dot_general's left
// operand read through views: its rows, its values' sizes, or the first refusal. A kernel
// rowKernel took (rows r) whose left operand is a transpose of its rows' trailing dims gets its
// sizes too: codegen/ptx reads such a view through the generic copier, which needs them.
func viewRows(k *passes.Kernel, kg *passes.KernelGraph, ranges sym.Ranges, r sym.Expr, why string) (sym.Expr, map[*ir.Value][]sym.Expr, string) {
	chain, lhs := lhsViews(k)
	if chain == nil {
		return r, nil, why
	}
	if why == "" {
		if lhs.Op != "transpose" && !slices.ContainsFunc(slices.Collect(maps.Keys(chain)), func(v *ir.Value) bool { return v.Op == "transpose" }) {
			return r, nil, ""
		}
		sizes, why3 := bodySizes(k, kg, ranges)
		if why3 != "" {
			return r, nil, "" // the template refuses the view by name
		}
		return r, sizes, ""
	}
	r, why2 := rowKernelViews(k, false, chain, map[*ir.Value]bool{lhs: true})
	if why2 != "" {
		return r, nil, why
	}
	sizes, why3 := bodySizes(k, kg, ranges)
	if why3 != "" {
		return r, nil, why3
	}
	return r, sizes, ""
}

// lhsViews returns, for a kernel whose one dot_general reads its left operand through a chain
// of views of an input that nothing else reads, the chain below the operand and the operand.
func lhsViews(k *passes.Kernel) (map[*ir.Value]bool, *ir.Value) {
	var dot *ir.Value
	uses := map[*ir.Value]int{}
	for _, v := range k.Body.Values {
		if v.Op == "dot_general" {
			if dot != nil {
				return nil, nil
			}
			dot = v
		}
		for _, a := range v.Args {
			uses[a]++
		}
	}
	for _, o := range k.Body.Outputs {
		uses[o.Value]++
	}
	if dot == nil || len(dot.Args) != 2 || len(dot.Attrs.Ints("lhs_batch")) > 0 {
		return nil, nil
	}
	lhs := dot.Args[0]
	chain := map[*ir.Value]bool{}
	for u := lhs; ; {
		switch u.Op {
		case "transpose", "reshape", "slice", "broadcast_in_dim":
		default:
			return nil, nil
		}
		u = u.Args[0]
		if uses[u] != 1 {
			return nil, nil
		}
		chain[u] = true
		if u.Op == ir.OpInput {
			return chain, lhs
		}
	}
}

// copyRows takes a loop kernel that copies an input through views moving its symbolic dims
// (rowKernel refused it: why) as codegen/ptx's copy at the run's sizes (symcopy.go there): its
// size is its output's element count, with its values' sizes.
func copyRows(k *passes.Kernel, kg *passes.KernelGraph, ranges sym.Ranges, why string) (sym.Expr, map[*ir.Value][]sym.Expr, string) {
	sizes, why2 := bodySizes(k, kg, ranges)
	if why2 != "" {
		return sym.Expr{}, nil, why
	}
	n := sym.Const(1)
	for _, e := range sizes[k.Body.Outputs[0].Value] {
		n = sym.Mul(n, e)
	}
	if sizes[k.Body.Outputs[0].Value] == nil {
		return sym.Expr{}, nil, why
	}
	return n, sizes, ""
}
