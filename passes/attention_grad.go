package passes

import (
	"fmt"
	"math"

	"github.com/gcomp/gcomp/codegen/splitkv"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// lowerAttentionGrad prepares every attention_grad op (attention's gradient, which autodiff
// emits) for code generation. Where the fused backward's templates apply (fusedGrad) it gives the
// op its lse operand, the rows' log-sum-exp (attention_lse of the same operands, one per
// attention once cse merges them), and the op keeps a kernel of its own that never materializes
// the scores. Elsewhere it writes the op as its decomposition: the softmax recomputed from q and
// k, then dS = P∘(dP − rowsum(dO∘O)) and the products of FlashAttention-2's backward, as
// dot_generals, which materialize [B, H, L, S] scores as a differentiated decomposition does;
// the gradients of one attention (dq, dk, dv, dbias) recompute the same softmax, which cse
// merges.
func lowerAttentionGrad(g *ir.Graph) *ir.Graph {
	found := false
	for _, v := range g.Values {
		found = found || v.Op == ops.AttentionGradOp
	}
	if !found {
		return g
	}
	return rewrite(g, func(rw *rewriter, v *ir.Value) *ir.Value {
		switch {
		case v.Op != ops.AttentionGradOp || v.Attrs.Bool("lse", false):
			return nil
		case fusedGrad(v):
			return withLSE(rw, v)
		}
		return expandAttentionGrad(rw, v)
	})
}

// fusedGrad reports whether code generation's backward templates compute attention_grad op v:
// the gradient of q, k or v (the bias's is [B, H, L, S] itself), no position mask (training
// does not use it; a row that sees no key would need NaN rules of its own), head dims up to 128.
func fusedGrad(v *ir.Value) bool {
	e, ev := v.Args[0].Type.Shape[3], v.Args[2].Type.Shape[3]
	switch v.Attrs.String("wrt", "") {
	case "q", "k", "v":
	default:
		return false
	}
	return v.Attrs.String("mask", "") != ops.MaskPosition && e <= 128 && ev <= 128
}

// withLSE is attention_grad op v reading attention_lse of its attention's operands.
func withLSE(rw *rewriter, v *ir.Value) *ir.Value {
	o, _ := ops.AttentionGradOperands(v)
	fwd := v.Args[:o]
	attrs := v.Attrs.Clone()
	delete(attrs, "wrt")
	ts := make([]ir.Type, len(fwd))
	for i, a := range fwd {
		ts[i] = a.Type
	}
	t, err := ops.Infer(ops.AttentionLSEOp, ts, attrs)
	if err != nil {
		panic(fmt.Sprintf("passes: internal error: attention_lse: %v", err))
	}
	lse := rw.add(ops.AttentionLSEOp, t, attrs, v.Pos, fwd...)
	gattrs := v.Attrs.Clone()
	gattrs["lse"] = true
	return rw.add(ops.AttentionGradOp, v.Type, gattrs, v.Pos, append(append([]*ir.Value{}, v.Args...), lse)...)
}

// partnerGroup returns the group v joins as a second output of one attention kernel, nil for
// none: the group of the attention_lse of forward attention op v's operands unless the split-KV
// template computes v (the CUDA-core and tensor-core ones write the rows' log-sum-exp beside o
// instead of a kernel of its own recomputing the scores), or for dk the group of dv of the same attention (one kernel computes
// both from one recomputation of P). Values are visited last to first: the backward's
// attention_lse has its group before its forward is visited, and dv (after dk in operand order)
// before dk.
func (f *fuser) partnerGroup(v *ir.Value) *group {
	switch {
	case v.Op == ops.AttentionOp:
		if _, decode := splitkv.Of(v); decode {
			return nil
		}
	case v.Op == ops.AttentionGradOp && v.Attrs.String("wrt", "") == "k" && v.Attrs.Bool("lse", false):
	default:
		return nil
	}
	for _, u := range f.users[v.Args[0]] {
		gr := f.home[u]
		if gr != nil && len(gr.members) == 1 && (ops.LSEOf(u, v) || ops.GradPair(u, v)) {
			return gr
		}
	}
	return nil
}

// attentionKernelOp reports whether op gets an attention kernel of its own: the forward, the
// backward's log-sum-exp and its gradients.
func attentionKernelOp(op string) bool {
	return op == ops.AttentionOp || op == ops.AttentionGradOp || op == ops.AttentionLSEOp
}

func expandAttentionGrad(rw *rewriter, v *ir.Value) *ir.Value {
	op := func(name string, attrs ir.Attrs, args ...*ir.Value) *ir.Value {
		ts := make([]ir.Type, len(args))
		for i, a := range args {
			ts[i] = a.Type
		}
		t, err := ops.Infer(name, ts, attrs)
		if err != nil {
			panic(fmt.Sprintf("passes: internal error: lowering attention_grad: %s: %v", name, err))
		}
		return rw.add(name, t, attrs, v.Pos, args...)
	}
	splat := func(x float64, like ir.Type) *ir.Value {
		return op("constant", ir.Attrs{"shape": []int(like.Shape.Clone()), "dtype": like.DType, "value": []float64{x}})
	}
	n := len(v.Args)
	q, k, val, o, do := v.Args[0], v.Args[1], v.Args[2], v.Args[n-2], v.Args[n-1]
	b, h, l := q.Type.Shape[0], q.Type.Shape[1], q.Type.Shape[2]
	kvh, s := k.Type.Shape[1], k.Type.Shape[2]
	grp := h / kvh
	scores := []int{b, h, l, s}
	full := ir.Type{DType: q.Type.DType, Shape: scores}
	scale, mask := v.Attrs.Float("scale", 1), v.Attrs.String("mask", "")
	// rep copies each KV head to the query heads of its group; unrep sums them back.
	rep := func(x *ir.Value) *ir.Value {
		if grp == 1 {
			return x
		}
		d := x.Type.Shape[3]
		wide := op("broadcast_in_dim", ir.Attrs{"shape": []int{b, kvh, grp, s, d}, "dims": []int{0, 1, 3, 4}}, x)
		return op("reshape", ir.Attrs{"shape": []int{b, h, s, d}}, wide)
	}
	unrep := func(x *ir.Value) *ir.Value {
		if grp == 1 {
			return x
		}
		d := x.Type.Shape[3]
		return op("reduce_sum", ir.Attrs{"axes": []int{2}}, op("reshape", ir.Attrs{"shape": []int{b, kvh, grp, s, d}}, x))
	}
	dot := func(x, y *ir.Value, lc, rc int) *ir.Value {
		return op("dot_general", ir.Attrs{"lhs_batch": []int{0, 1}, "rhs_batch": []int{0, 1}, "lhs_contract": []int{lc}, "rhs_contract": []int{rc}}, x, y)
	}
	rows := func(red string, x *ir.Value) *ir.Value { // red over the last axis, broadcast back
		r := op(red, ir.Attrs{"axes": []int{3}, "keepdims": true}, x)
		return op("broadcast_in_dim", ir.Attrs{"shape": scores, "dims": []int{0, 1, 2, 3}}, r)
	}
	kx, vx := rep(k), rep(val)
	sc := op("mul", nil, dot(q, kx, 3, 3), splat(scale, full))
	var hidden *ir.Value
	switch mask {
	case ops.MaskCausal:
		col := op("iota", ir.Attrs{"shape": scores, "dim": 3, "dtype": ir.I64})
		row := op("iota", ir.Attrs{"shape": scores, "dim": 2, "dtype": ir.I64})
		hidden = op("gt", nil, col, row)
	case ops.MaskPosition:
		pos := v.Args[3]
		col := op("iota", ir.Attrs{"shape": scores, "dim": 3, "dtype": pos.Type.DType})
		row := op("iota", ir.Attrs{"shape": scores, "dim": 2, "dtype": pos.Type.DType})
		hidden = op("gt", nil, col, op("add", nil, row, op("broadcast_in_dim", ir.Attrs{"shape": scores, "dims": []int{0}}, pos)))
	}
	if hidden != nil {
		sc = op("select", nil, hidden, splat(math.Inf(-1), full), sc)
	}
	var bias *ir.Value
	if v.Attrs.Bool("additive", false) {
		bias = v.Args[n-3]
		sc = op("add", nil, sc, op("broadcast_in_dim", ir.Attrs{"shape": scores, "dims": []int{0, 1, 2, 3}}, bias))
	}
	e := op("exp", nil, op("sub", nil, sc, rows("reduce_max", sc)))
	p := op("div", nil, e, rows("reduce_sum", e))
	d := op("reduce_sum", ir.Attrs{"axes": []int{3}, "keepdims": true}, op("mul", nil, do, o))
	d = op("broadcast_in_dim", ir.Attrs{"shape": scores, "dims": []int{0, 1, 2, 3}}, d)
	ds := op("mul", nil, p, op("sub", nil, dot(do, vx, 3, 3), d))
	switch v.Attrs.String("wrt", "") {
	case "q":
		dq := dot(ds, kx, 3, 2)
		return op("mul", nil, dq, splat(scale, dq.Type))
	case "k":
		dk := dot(ds, q, 2, 2)
		return unrep(op("mul", nil, dk, splat(scale, dk.Type)))
	case "v":
		return unrep(dot(p, do, 2, 2))
	}
	var axes []int // the dims the bias broadcasts
	for i, n := range bias.Type.Shape {
		if n == 1 && scores[i] != 1 {
			axes = append(axes, i)
		}
	}
	if len(axes) == 0 {
		return ds
	}
	return op("reduce_sum", ir.Attrs{"axes": axes, "keepdims": true}, ds)
}

// FormAttention replaces the attention decompositions of g (the attention pass) in place and
// returns g. The train package runs it on the forward graph before differentiating it, so that
// the step's forward keeps the attention kernel and its backward is attention_grad.
func FormAttention(g *ir.Graph) *ir.Graph { return findAttention(g) }
