package passes

import (
	"math"
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// findAttention replaces the decomposition of scaled dot-product attention that
// frontend.ScaledDotProductAttention (and nn.MultiheadAttention through it) writes,
//
//	s = dot_general(q, k) · c           (c a splat; or / c, or no scale)
//	x = select(causal, -inf, s) | s + bias | s
//	p = exp(x − max(x)) / Σ exp(x − max(x))   (over the last axis)
//	o = dot_general(p, v)
//
// by one attention op (package ops), so that its kernel streams K and V and never writes the
// [heads, L, S] scores. The batch dims are reshaped to the op's [B, H] (free: reshapes of
// contiguous buffers). A decomposition whose intermediates have other users (a train step's
// backward reads p) stays as it is.
func findAttention(g *ir.Graph) *ir.Graph {
	uses := map[*ir.Value]int{}
	for _, v := range g.Values {
		for _, a := range v.Args {
			uses[a]++
		}
	}
	for _, o := range g.Outputs {
		uses[o.Value] += 2 // never an intermediate
	}
	changed := false
	g = rewrite(g, func(rw *rewriter, v *ir.Value) *ir.Value {
		m, ok := matchAttention(v, uses)
		if !ok {
			return nil
		}
		changed = true
		return m.build(rw, v)
	})
	if changed {
		g = deadCode(g)
	}
	return g
}

// attnMatch is one matched decomposition.
type attnMatch struct {
	q, k, v, bias *ir.Value
	scale         float64
	mask          string
}

// matchAttention matches o = dot_general(p, v) at the end of the decomposition.
func matchAttention(o *ir.Value, uses map[*ir.Value]int) (attnMatch, bool) {
	var m attnMatch
	r := len(o.Type.Shape)
	if o.Op != "dot_general" || r < 2 || !o.Type.DType.IsFloat() {
		return m, false
	}
	nb := r - 2
	if !batchedDot(o, nb, r-1, r-2) {
		return m, false
	}
	p, v := o.Args[0], o.Args[1]
	only := func(x *ir.Value, n int) bool { return uses[x] == n }
	// p = e / broadcast(reduce_sum(e)); e = exp(x - broadcast(reduce_max(x))).
	if p.Op != "div" || !only(p, 1) {
		return m, false
	}
	e, sum := p.Args[0], rowReduced(p.Args[1], "reduce_sum", r)
	if e.Op != "exp" || !only(e, 2) || sum == nil || sum.Args[0] != e {
		return m, false
	}
	d := e.Args[0]
	if d.Op != "sub" || !only(d, 1) {
		return m, false
	}
	x, mx := d.Args[0], rowReduced(d.Args[1], "reduce_max", r)
	if mx == nil || mx.Args[0] != x || !only(x, 2) {
		return m, false
	}
	s := x
	m.mask = ops.MaskNone
	switch {
	case x.Op == "select" && isSplat(x.Args[1], math.Inf(-1)) && causalMask(x.Args[0], nb):
		s, m.mask = x.Args[2], ops.MaskCausal
	case x.Op == "add":
		s, m.bias = x.Args[0], x.Args[1]
	}
	if s != x && !only(s, 1) {
		return m, false
	}
	m.scale = 1
	dot := s
	if s.Op == "mul" || s.Op == "div" {
		c, ok := splatValue(s.Args[1])
		dot = s.Args[0]
		if s.Op == "mul" && !ok {
			c, ok = splatValue(s.Args[0])
			dot = s.Args[1]
		}
		if !ok || c == 0 || math.IsInf(c, 0) || math.IsNaN(c) {
			return m, false
		}
		m.scale = c
		if s.Op == "div" {
			m.scale = 1 / c
		}
		if !only(dot, 1) {
			return m, false
		}
	}
	m.q, m.k, m.v = dot.Args[0], dot.Args[1], v
	switch {
	case batchedDot(dot, nb, nb+1, nb+1):
	case batchedDot(dot, nb, nb+1, nb) && swapsLast(m.k):
		m.k = m.k.Args[0] // q·(kᵀ) as torch's matmul writes it
	default:
		return m, false
	}
	if m.bias != nil && m.bias.Type.DType != m.q.Type.DType {
		return m, false
	}
	return m, true
}

// batchedDot reports whether v is a dot_general over the batch dims 0..nb-1 of both operands
// contracting one dim of each.
func batchedDot(v *ir.Value, nb, lc, rc int) bool {
	if v.Op != "dot_general" {
		return false
	}
	batch := make([]int, nb)
	for i := range batch {
		batch[i] = i
	}
	a := v.Attrs
	return slices.Equal(a.Ints("lhs_batch"), batch) && slices.Equal(a.Ints("rhs_batch"), batch) &&
		slices.Equal(a.Ints("lhs_contract"), []int{lc}) && slices.Equal(a.Ints("rhs_contract"), []int{rc}) &&
		len(v.Args[0].Type.Shape) == nb+2 && len(v.Args[1].Type.Shape) == nb+2
}

// rowReduced returns red when b = broadcast_in_dim(red) back over the last axis of rank r and
// red = op(x) over that axis with keepdims.
func rowReduced(b *ir.Value, op string, r int) *ir.Value {
	if b.Op != "broadcast_in_dim" {
		return nil
	}
	red := b.Args[0]
	if red.Op != op || !slices.Equal(red.Attrs.Ints("axes"), []int{r - 1}) || !red.Attrs.Bool("keepdims", false) {
		return nil
	}
	ident := make([]int, r)
	for i := range ident {
		ident[i] = i
	}
	if !slices.Equal(b.Attrs.Ints("dims"), ident) {
		return nil
	}
	return red
}

// causalMask reports whether pred, of rank nb+2, is gt(iota col, iota row) over the last two
// dims (the key index past the query index), directly or broadcast over the batch dims.
func causalMask(pred *ir.Value, nb int) bool {
	if pred.Op == "broadcast_in_dim" {
		if !slices.Equal(pred.Attrs.Ints("dims"), []int{nb, nb + 1}) {
			return false
		}
		pred, nb = pred.Args[0], 0
	}
	if pred.Op != "gt" || len(pred.Type.Shape) != nb+2 {
		return false
	}
	col, row := pred.Args[0], pred.Args[1]
	return col.Op == "iota" && row.Op == "iota" && col.Attrs.Int("dim", -1) == nb+1 && row.Attrs.Int("dim", -1) == nb
}

// build adds the attention op in place of o, its operands reshaped to [B, H, ·, ·] and its
// result back to o's shape.
func (m attnMatch) build(rw *rewriter, o *ir.Value) *ir.Value {
	r := len(o.Type.Shape)
	batch := o.Type.Shape[:r-2]
	b, h := 1, 1
	if len(batch) > 0 {
		h = batch[len(batch)-1]
		for _, n := range batch[:len(batch)-1] {
			b *= n
		}
	}
	to4 := func(x *ir.Value) *ir.Value {
		sh := x.Type.Shape
		want := ir.Shape{b, h, sh[r-2], sh[r-1]}
		if sh.Equal(want) {
			return x
		}
		return rw.add("reshape", ir.Type{DType: x.Type.DType, Shape: want}, ir.Attrs{"shape": []int(want)}, o.Pos, x)
	}
	args := []*ir.Value{to4(m.q), to4(m.k), to4(m.v)}
	attrs := ir.Attrs{"scale": m.scale, "mask": m.mask}
	if m.bias != nil {
		args = append(args, to4(m.bias))
		attrs["additive"] = true
	}
	l, ev := o.Type.Shape[r-2], o.Type.Shape[r-1]
	a := rw.add(ops.AttentionOp, ir.T(o.Type.DType, b, h, l, ev), attrs, o.Pos, args...)
	if a.Type.Shape.Equal(o.Type.Shape) {
		return a
	}
	return rw.add("reshape", o.Type, ir.Attrs{"shape": []int(o.Type.Shape)}, o.Pos, a)
}

// swapsLast reports whether v transposes the last two dims of its operand and no others.
func swapsLast(v *ir.Value) bool {
	if v.Op != "transpose" {
		return false
	}
	perm := v.Attrs.Ints("perm")
	r := len(perm)
	if r < 2 || perm[r-2] != r-1 || perm[r-1] != r-2 {
		return false
	}
	for i := range r - 2 {
		if perm[i] != i {
			return false
		}
	}
	return true
}
