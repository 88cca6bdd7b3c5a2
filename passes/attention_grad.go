package passes

import (
	"fmt"
	"math"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// lowerAttentionGrad writes every attention_grad op (attention's gradient, which autodiff emits)
// as its decomposition: the softmax recomputed from q and k, then dS = P∘(dP − rowsum(dO∘O)) and
// the products of FlashAttention-2's backward, as dot_generals. Code generation has no kernel for
// attention_grad yet, so the backward materializes [B, H, L, S] scores as a differentiated
// decomposition does; the forward keeps its attention kernel. The gradients of one attention
// (dq, dk, dv, dbias) recompute the same softmax, which cse merges.
func lowerAttentionGrad(g *ir.Graph) *ir.Graph {
	found := false
	for _, v := range g.Values {
		found = found || v.Op == ops.AttentionGradOp
	}
	if !found {
		return g
	}
	return rewrite(g, func(rw *rewriter, v *ir.Value) *ir.Value {
		if v.Op != ops.AttentionGradOp {
			return nil
		}
		return expandAttentionGrad(rw, v)
	})
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
