package compiler

import (
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
)

// A weight gradient whose operand is read through views: attention's dq, dk and dv merged back
// from [batch, heads, seq, d] into [batch·seq, heads·d] before dW = Xᵀ·dY contracts the rows.
// rowKernel takes the fold where the views keep the rows (a batch leading); where they move
// them (a symbolic seq after static dims), foldViews checks the dot's operands' rows alone.
// codegen/ptx's GEMM reads such an operand through the generic copier, whose k coordinate it
// delinearizes over the view's sizes at the run: foldViews hands it the sizes of the views'
// values (and a strided operand's: one whose strides follow the sizes, a transpose of
// [2, seq], it reads through its views too).

// foldViews retries a contraction kernel that viewRows left without sizes (rows r, refusal
// why) as a fold reading its operands through views: the views below the dot's operands are
// not checked for rows (the copier reads them at the run's sizes), the operands are, and the
// dot must fold their rows. It returns the rows, the sizes of the views' values, or the
// refusal; a kernel that is no such fold keeps r and why.
func foldViews(k *passes.Kernel, kg *passes.KernelGraph, ranges sym.Ranges, r sym.Expr, why string) (sym.Expr, map[*ir.Value][]sym.Expr, string) {
	dot, chain := foldOperandViews(k)
	if dot == nil {
		return r, nil, why
	}
	if why != "" {
		below := map[*ir.Value]bool{}
		for v := range chain {
			if v != dot.Args[0] && v != dot.Args[1] {
				below[v] = true
			}
		}
		// The operands' own rows lead; a view below one may move them (kᵀ's gradient read
		// back through the transpose that made it), read at the run's sizes.
		read := map[*ir.Value]bool{dot.Args[0]: !buffer(dot.Args[0]), dot.Args[1]: !buffer(dot.Args[1])}
		r2, why2 := rowKernelViews(k, true, below, read)
		if why2 != "" {
			return r, nil, why
		}
		r = r2
	}
	sizes := foldViewSizes(k, kg, ranges, chain)
	if sizes == nil && why != "" {
		return r, nil, why
	}
	return r, sizes, "" // without sizes, the template refuses the view by name
}

// foldOperandViews returns kernel k's dot_general when it contracts its left operand's leading
// axis (a fold of the rows, symfold.go; batched or not: over static batch dims the templates
// take each batch coordinate from blockIdx.z as the static kernel does, over a symbolic one the
// fold is contractViews' (symfold_batch.go)) and reads an operand through views, with the values
// of both operands' chains down to their buffers; nil for another kernel.
func foldOperandViews(k *passes.Kernel) (*ir.Value, map[*ir.Value]bool) {
	dot := oneDot(k)
	if dot == nil || len(dot.Args) != 2 || !slices.Contains(dot.Attrs.Ints("lhs_contract"), 0) {
		return nil, nil
	}
	if buffer(dot.Args[0]) && buffer(dot.Args[1]) {
		return nil, nil // strided
	}
	chain := operandChains(dot) // symcontract.go
	if chain == nil {
		return nil, nil // computed in the kernel: the template refuses it by name
	}
	return dot, chain
}

func buffer(v *ir.Value) bool { return v.Op == ir.OpInput || v.Op == ir.OpParam }

// foldViewSizes returns the sizes of the values of chain (foldOperandViews), nil when a view's
// sizes are unknown. The dot and what follows are static: they have no sizes.
func foldViewSizes(k *passes.Kernel, kg *passes.KernelGraph, ranges sym.Ranges, chain map[*ir.Value]bool) map[*ir.Value][]sym.Expr {
	types := symTypes(k)
	sizes := map[*ir.Value][]sym.Expr{}
	for _, v := range k.Body.Values {
		if !chain[v] {
			continue
		}
		t := types[v]
		if buf := kg.Buffer(v.Name); buffer(v) && buf != nil {
			t = buf.Type
		}
		switch {
		case t.Sym != nil:
			sizes[v] = t.Sym
		case buffer(v) || sizes[v.Args[0]] == nil:
			// static
		default: // a view the passes made: inferred
			a := v.Args[0]
			it, err := ops.InferSym(v.Op, []ir.Type{{DType: a.Type.DType, Shape: a.Type.Shape, Sym: sizes[a]}}, v.Attrs, ranges, nil)
			if err != nil || !it.Shape.Equal(v.Type.Shape) || it.Sym == nil {
				return nil
			}
			sizes[v] = it.Sym
		}
	}
	return sizes
}

// oneDot returns kernel k's dot_general when it has exactly one, else nil.
func oneDot(k *passes.Kernel) *ir.Value {
	var dot *ir.Value
	for _, v := range k.Body.Values {
		if v.Op == "dot_general" {
			if dot != nil {
				return nil
			}
			dot = v
		}
	}
	return dot
}
