package compiler

import (
	"fmt"
	"strings"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/passes"
)

// Batched products contracting a symbolic dim that is not the rows: per batch element
// x[b, seq, d]ᵀ·y[b, seq, e] → [b, d, e] (a pooling by matmul over seq), or scores·V that
// attention formation did not catch, [b, t, seq]·[b, seq, d] → [b, t, d]. Laid out at the run's
// sizes, the operands' batch strides (and the scores' row stride) follow seq, so they are not
// rows: codegen/ptx's GEMM reads both through its generic copier at the run's sizes and bounds
// its k loop by K at the run (symcontract.go there). contractViews hands it the operands' sizes
// where the product is batched over the operands' leading dims (symbolic or static in any order:
// the producers split grid.z at the run's batch sizes; a fold of the rows has its symbolic batch
// after the rows: symfold_batch.go), the right
// operand's free dims are static and both operands contract the same sizes; the result is then
// static (a static batch) or rows of the batch, which the epilogue keeps, or, with a symbolic M
// beside, rows of batch·M (symcontract_free.go).

// contractViews retries a contraction kernel that rowKernel refused (rows r, refusal why) as
// such a batched product, its operands buffers or views of them. It returns the kernel's rows
// (the batch), the sizes of the operands' views, or the refusal; a kernel that is no such product
// keeps r and why.
func contractViews(k *passes.Kernel, kg *passes.KernelGraph, ranges sym.Ranges, r sym.Expr, why string) (sym.Expr, map[*ir.Value][]sym.Expr, string) {
	dot, chain := batchedOperandViews(k)
	if dot == nil || why == "" {
		return r, nil, why
	}
	sizes := foldViewSizes(k, kg, ranges, chain) // symfold_view.go
	if sizes == nil {
		return r, nil, why
	}
	at := dot.Attrs
	lb, rb := at.Ints("lhs_batch"), at.Ints("rhs_batch")
	lc, rc := at.Ints("lhs_contract"), at.Ints("rhs_contract")
	ls, rs := ptx.SymSizes(dot.Args[0], sizes), ptx.SymSizes(dot.Args[1], sizes)
	kl, kr := product(ls, lc), product(rs, rc)
	if isConst(kl) && isConst(kr) && isConst(plan.SymFree(rs, rb, rc)) { // a symbolic N: symcontract_rhs.go
		return r, nil, why
	}
	types := symTypes(k)
	format := func(v *ir.Value) string { // in the source's types
		return strings.TrimSuffix(k.Body.Format(v), v.Type.String()) + types[v].String()
	}
	switch {
	case !kl.Equal(kr):
		return r, nil, fmt.Sprintf("%s contracts %s by %s", format(dot), kl, kr)
	case (!leading(lb) || !leading(rb)) && !plan.FoldsSymbolicBatch(dot, sizes):
		// A fold of the rows batched over a symbolic dim has the batch after the rows; the
		// templates read both operands through the generic copier (symfold_batch.go).
		return r, nil, fmt.Sprintf("%s contracts a symbolic dim in a product batched over dims that do not lead its operands", format(dot))
	}
	for i, d := range lb {
		if !ls[d].Equal(rs[rb[i]]) {
			return r, nil, fmt.Sprintf("%s contracts a symbolic dim in a product batched over %s by %s", format(dot), exprList(pick(ls, lb)), exprList(pick(rs, rb)))
		}
	}
	m, n := plan.SymFree(ls, lb, lc), plan.SymFree(rs, rb, rc)
	if why := oneFreeDim(dot, ls, rs, format); why != "" {
		return r, nil, why
	}
	// The epilogue keeps the rows: the batch, or nothing symbolic when the batch is static; with
	// a symbolic M (the left operand's free dims) its values are the result's rows, batch·M, with
	// a symbolic N (symcontract_rhs.go) batch·M·N, and read nothing else at the run's sizes
	// (symcontract_free.go).
	skip := withValue(chain, dot)
	if !isConst(m) || !isConst(n) { // views of buffers read at the run's strides (symcontract_bcast.go)
		bc, bwhy := runViews(k, types, chain, dot, format)
		if bwhy != "" {
			return r, nil, bwhy
		}
		if len(bc) > 0 {
			for v := range bc {
				skip[v] = true
			}
			if sizes = foldViewSizes(k, kg, ranges, skip); sizes == nil {
				return r, nil, why
			}
			delete(sizes, dot)
		}
	}
	rows := product(ls, lb)
	want := resultRows(rows, m, n)
	er, why2 := rowKernelViews(k, false, skip, nil)
	if why2 != "" {
		return r, nil, why2
	}
	for _, v := range k.Body.Values {
		if !skip[v] && types[v].Sym != nil {
			if !er.Equal(want) || isConst(want) {
				return r, nil, fmt.Sprintf("%s has %s rows, %s has %s", format(v), er, format(dot), want)
			}
			break
		}
	}
	if why := freeEpilogue(k, skip, types, dot, m, n, format); why != "" {
		return r, nil, why
	}
	return rows, sizes, ""
}

// batchedOperandViews returns kernel k's one dot_general when it has batch dims, with the values
// of both operands' chains of views down to their buffers; nil for another kernel.
func batchedOperandViews(k *passes.Kernel) (*ir.Value, map[*ir.Value]bool) {
	dot := oneDot(k) // symfold_view.go
	if dot == nil || len(dot.Args) != 2 || len(dot.Attrs.Ints("lhs_batch")) == 0 {
		return nil, nil
	}
	return dot, operandChains(dot)
}

// operandChains returns the values of dot's operands' chains of views down to their buffers,
// nil when an operand is computed in the kernel.
func operandChains(dot *ir.Value) map[*ir.Value]bool {
	chain := map[*ir.Value]bool{}
	for _, a := range dot.Args {
		for u := a; ; u = u.Args[0] {
			chain[u] = true
			if buffer(u) {
				break
			}
			switch u.Op {
			case "transpose", "reshape", "slice", "broadcast_in_dim":
				continue
			}
			return nil // computed in the kernel
		}
	}
	return chain
}

// withValue is chain with v added (a new set).
func withValue(chain map[*ir.Value]bool, v *ir.Value) map[*ir.Value]bool {
	s := map[*ir.Value]bool{v: true}
	for u := range chain {
		s[u] = true
	}
	return s
}

// product is the product of s's entries at dims.
func product(s []sym.Expr, dims []int) sym.Expr {
	p := sym.Const(1)
	for _, d := range dims {
		p = sym.Mul(p, s[d])
	}
	return p
}

// pick is s's entries at dims.
func pick(s []sym.Expr, dims []int) []sym.Expr {
	out := make([]sym.Expr, len(dims))
	for i, d := range dims {
		out[i] = s[d]
	}
	return out
}

func exprList(s []sym.Expr) string {
	t := make([]string, len(s))
	for i, e := range s {
		t[i] = e.String()
	}
	return "[" + strings.Join(t, ",") + "]"
}
