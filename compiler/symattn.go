package compiler

import (
	"fmt"
	"slices"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
)

// Attention at symbolic sizes. An attention kernel over a symbolic batch or sequence does not
// keep rows: its keys are every row of K and V, and its operands are views of buffers whose
// symbolic dims need not lead ([2, seq, 48] split into heads). codegen/ptx's template takes the
// dims as parameters and computes the lengths, the grid and every stride from them
// (symattn.go there); here the kernel's values get their sizes as expressions, which that
// template reads (ptx.Kernel.Sizes).

// attentionSizes returns the symbolic sizes of attention kernel k's values (its inputs' from
// their buffers, the others' from the pass graph's values they compute), or why it cannot run
// at symbolic sizes.
func attentionSizes(k *passes.Kernel, kg *passes.KernelGraph, ranges sym.Ranges) (map[*ir.Value][]sym.Expr, string) {
	sizes, why := bodySizes(k, kg, ranges)
	if why != "" {
		return nil, why
	}
	for _, v := range k.Body.Values {
		switch v.Op {
		case ops.AttentionOp, ops.AttentionLSEOp, ops.AttentionGradOp, ir.OpInput, ir.OpParam, "reshape", "transpose", "broadcast_in_dim", "slice",
			ops.UpdateSliceOp: // a cache the attention appends to (codegen/ptx's symattn_decode.go)
		default:
			return nil, fmt.Sprintf("%s is fused with attention, which runs at symbolic sizes alone with views of its operands", k.Body.Format(v))
		}
	}
	return sizes, ""
}

// bodySizes returns the symbolic sizes of kernel k's values: its inputs' from their buffers, the
// others' from the pass graph's values they compute, or inferred for views the passes made.
func bodySizes(k *passes.Kernel, kg *passes.KernelGraph, ranges sym.Ranges) (map[*ir.Value][]sym.Expr, string) {
	sizes := map[*ir.Value][]sym.Expr{}
	for _, v := range k.Body.Values {
		t := v.Type
		if o := k.Origins[v]; t.Sym == nil && o != nil && o.Type.Shape.Equal(t.Shape) {
			t = o.Type
		}
		if buf := kg.Buffer(v.Name); (v.Op == ir.OpInput || v.Op == ir.OpParam) && buf != nil {
			t = buf.Type // an intermediate's body input is at its bound
		}
		if t.Sym != nil {
			sizes[v] = t.Sym
			continue
		}
		if !slices.ContainsFunc(v.Args, func(a *ir.Value) bool { return sizes[a] != nil }) {
			continue
		}
		// A view the attention pass made (no value of the pass graph computes it): inferred.
		args := make([]ir.Type, len(v.Args))
		for i, a := range v.Args {
			args[i] = ir.Type{DType: a.Type.DType, Shape: a.Type.Shape, Sym: sizes[a]}
		}
		if v.Op == ops.AttentionOp { // [B, H, L] of q, Ev of v (q may be static: a cache's length alone is symbolic)
			sizes[v] = append(slices.Clone(ptx.SymSizes(v.Args[0], sizes)[:3]), ptx.SymSizes(v.Args[2], sizes)[3])
			continue
		}
		it, err := ops.InferSym(v.Op, args, v.Attrs, ranges, nil)
		if err != nil || !it.Shape.Equal(v.Type.Shape) || it.Sym == nil {
			return nil, fmt.Sprintf("%s has no symbolic sizes but reads symbolic ones", k.Body.Format(v))
		}
		sizes[v] = it.Sym
	}
	return sizes, ""
}

// onClone maps sizes, keyed by body's values, to the same values of c, body's Clone.
func onClone(sizes map[*ir.Value][]sym.Expr, body, c *ir.Graph) map[*ir.Value][]sym.Expr {
	if sizes == nil {
		return nil
	}
	m := map[*ir.Value][]sym.Expr{}
	for i, v := range body.Values {
		if s, ok := sizes[v]; ok {
			m[c.Values[i]] = s
		}
	}
	return m
}

// symbolicOutputs gives each output buffer of kernel k that the passes left at its bound (the
// attention pass forms its op at the bound) the symbolic sizes of the value k writes there, so
// that the kernels reading it read it at the run's sizes.
func symbolicOutputs(k *passes.Kernel, kg *passes.KernelGraph, sizes map[*ir.Value][]sym.Expr) {
	for _, o := range k.Body.Outputs {
		// An output static at every run (a decode step's rows over a symbolic cache length)
		// stays static: its readers are static kernels.
		if b := kg.Buffer(o.Name); b != nil && b.Type.Sym == nil && slices.ContainsFunc(sizes[o.Value], func(e sym.Expr) bool { return !isConst(e) }) {
			b.Type.Sym = sizes[o.Value]
		}
	}
}
