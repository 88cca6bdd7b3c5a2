package passes

import (
	"math"
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
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
	pos           *ir.Value // the position mask's pos[B]
	kT            bool      // k is [..., E, S]: the op reads its transpose, a view
	scale         float64
	mask          string
}

// matchAttention matches o = dot_general(p, v) at the end of the decomposition.
func matchAttention(o *ir.Value, uses map[*ir.Value]int) (m attnMatch, ok bool) {
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
	case x.Op == "select" && isBroadcastSplat(x.Args[1], math.Inf(-1)) && causalMask(x.Args[0], nb):
		s, m.mask = x.Args[2], ops.MaskCausal
	case x.Op == "select" && isBroadcastSplat(x.Args[1], math.Inf(-1)) && nb == 2:
		var t int
		if m.pos, t = positionMask(x.Args[0]); m.pos == nil {
			return m, false
		}
		s, m.mask = x.Args[2], ops.MaskPosition
		defer func() {
			if ok {
				m, ok = m.groupedQueries(t)
			}
		}()
	case x.Op == "add" && x.Args[1].Op == "constant":
		// A folded additive mask (torch's export of scores + a constant 0/−inf triangle): the
		// kernel reads no constants, so only the causal one is taken, as the causal mask.
		if !constantCausal(x.Args[1]) {
			return m, false
		}
		s, m.mask = x.Args[0], ops.MaskCausal
	case x.Op == "add":
		s, m.bias = x.Args[0], x.Args[1]
	}
	if s != x && !only(s, 1) {
		return m, false
	}
	m.scale = 1
	dot := s
	if s.Op == "mul" || s.Op == "div" {
		c, ok := broadcastSplat(s.Args[1])
		dot = s.Args[0]
		if s.Op == "mul" && !ok {
			c, ok = broadcastSplat(s.Args[0])
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
	case batchedDot(dot, nb, nb+1, nb): // q·(kᵀ) as torch's matmul writes it: k is [..., E, S]
		m.kT = true
	default:
		return m, false
	}
	// A query scaled before the product (torch's ONNX export: MatMul(Div(q, √d), kᵀ)).
	if (m.q.Op == "mul" || m.q.Op == "div") && only(m.q, 1) {
		if c, ok := broadcastSplat(m.q.Args[1]); ok && c != 0 && !math.IsInf(c, 0) && !math.IsNaN(c) {
			if m.q.Op == "div" {
				c = 1 / c
			}
			m.scale *= c
			m.q = m.q.Args[0]
		}
	}
	if m.bias != nil && m.bias.Type.DType != m.q.Type.DType {
		return m, false
	}
	return m, true
}

// broadcastSplat is splatValue through a broadcast_in_dim: a graph over symbolic sizes spells a
// scalar constant of a symbolic shape as a broadcast of a scalar (canonicalization, which folds
// it into one constant, runs after train's step formed its attention ops).
func broadcastSplat(v *ir.Value) (float64, bool) {
	if v.Op == "broadcast_in_dim" {
		v = v.Args[0]
	}
	return splatValue(v)
}

// isBroadcastSplat is isSplat through a broadcast_in_dim (broadcastSplat).
func isBroadcastSplat(v *ir.Value, x float64) bool {
	f, ok := broadcastSplat(v)
	return ok && math.Float64bits(f) == math.Float64bits(x)
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
// dims (the key index past the query index), directly or broadcast over the batch dims, or a
// constant holding those values (torch's ONNX export folds masked_fill's ~tril(ones) into one).
func causalMask(pred *ir.Value, nb int) bool {
	if pred.Op == "constant" {
		return constantCausal(pred)
	}
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

// positionMask matches frontend/nn's CachedAttention mask, key s hidden from query row r when
// s > r mod T + pos[b]:
//
//	gt(key, add(row, broadcast(reshape(pos))))   key = iota over the last dim of [G·T, S],
//	                                              row = iota {dim=1} of [G, T, S] reshaped
//
// each side possibly broadcast over the batch, or gt(key, broadcast(reshape(pos))) for one
// query token (T = 1). It returns pos (integers [B]) and T.
func positionMask(pred *ir.Value) (pos *ir.Value, t int) {
	strip := func(v *ir.Value) *ir.Value {
		for v.Op == "broadcast_in_dim" || v.Op == "reshape" {
			v = v.Args[0]
		}
		return v
	}
	for pred.Op == "broadcast_in_dim" {
		pred = pred.Args[0]
	}
	if pred.Op != "gt" || len(pred.Type.Shape) != 4 {
		return nil, 0
	}
	gt, rows, s := pred.Type.Shape, pred.Type.Shape[2], pred.Type.Shape[3]
	key, sum := strip(pred.Args[0]), pred.Args[1]
	if key.Op != "iota" || key.Attrs.Int("dim", -1) != len(key.Type.Shape)-1 || key.Type.Shape.NumElements() != rows*s || key.Type.Shape[len(key.Type.Shape)-1] != s {
		return nil, 0
	}
	// pos [B] integers, reshaped to [B,1,1,1] under p.
	posOf := func(p *ir.Value) *ir.Value {
		if p.Op != "reshape" {
			return nil
		}
		pos := p.Args[0]
		if len(pos.Type.Shape) != 1 || pos.Type.DType.IsFloat() || pos.Type.DType == ir.Bool ||
			!p.Type.Shape.Equal(ir.Shape{pos.Type.Shape[0], 1, 1, 1}) || gt[0] != 1 && gt[0] != pos.Type.Shape[0] {
			return nil
		}
		return pos
	}
	for sum.Op == "broadcast_in_dim" {
		sum = sum.Args[0]
	}
	if pos := posOf(sum); pos != nil {
		// One query token: the row iota had one element, 0, which canonicalization folded
		// away (fold's zeroIota, then x + 0 = x), leaving gt(key, pos).
		return pos, 1
	}
	if sum.Op != "add" {
		return nil, 0
	}
	for _, i := range []int{0, 1} {
		row, p := strip(sum.Args[i]), sum.Args[1-i]
		rs := row.Type.Shape
		if row.Op != "iota" || len(rs) != 3 || row.Attrs.Int("dim", -1) != 1 || rs[0]*rs[1] != rows || rs[2] != s {
			continue
		}
		// p = broadcast_in_dim(reshape(pos [B] → [B,1,1,1])).
		if p.Op != "broadcast_in_dim" {
			continue
		}
		if pos := posOf(p.Args[0]); pos != nil {
			return pos, rs[1]
		}
	}
	return nil, 0
}

// groupedQueries undoes CachedAttention's grouping of the queries by KV head: q [B, KVH, G·T, E]
// is q0 [B, H, T, E] reshaped (or q0 itself when G = 1), which the attention op reads directly
// (query head h reads KV head h/G, the op's own rule); the result is reshaped back.
func (m attnMatch) groupedQueries(t int) (attnMatch, bool) {
	qs := m.q.Type.Shape
	if len(qs) != 4 || t <= 0 || qs[2]%t != 0 || m.pos.Type.Shape[0] != qs[0] {
		return m, false
	}
	g := qs[2] / t
	if g == 1 {
		return m, true
	}
	q0 := m.q
	if q0.Op != "reshape" {
		return m, false
	}
	q0 = q0.Args[0]
	want := ir.Shape{qs[0], qs[1] * g, t, qs[3]}
	if !q0.Type.Shape.Equal(want) {
		return m, false
	}
	m.q = q0
	return m, true
}

// build adds the attention op in place of o, its operands reshaped to [B, H, ·, ·] and its
// result back to o's shape. Over symbolic sizes the values it adds get their sizes as
// expressions (ops.InferSym), as the values they replace had.
func (m attnMatch) build(rw *rewriter, o *ir.Value) *ir.Value {
	add := func(op string, t ir.Type, attrs ir.Attrs, want []sym.Expr, args ...*ir.Value) *ir.Value {
		types := make([]ir.Type, len(args))
		symbolic := want != nil
		for i, a := range args {
			types[i], symbolic = a.Type, symbolic || a.Type.Sym != nil
		}
		if symbolic {
			if st, err := ops.InferSym(op, types, attrs, rw.g.Ranges(), want); err == nil && st.Shape.Equal(t.Shape) {
				t = st
			}
		}
		return rw.add(op, t, attrs, o.Pos, args...)
	}
	if m.kT {
		ks := m.k.Type.Shape
		r := len(ks)
		perm := make([]int, r)
		for i := range perm {
			perm[i] = i
		}
		perm[r-2], perm[r-1] = r-1, r-2
		shape := ks.Clone()
		shape[r-2], shape[r-1] = ks[r-1], ks[r-2]
		m.k = add("transpose", ir.Type{DType: m.k.Type.DType, Shape: shape}, ir.Attrs{"perm": perm}, nil, m.k)
	}
	r := len(o.Type.Shape)
	batch := o.Type.Shape[:r-2]
	nb := len(batch)
	b, h := 1, 1
	if nb > 0 {
		h = batch[nb-1]
		for _, n := range batch[:nb-1] {
			b *= n
		}
	}
	to4 := func(x *ir.Value) *ir.Value {
		sh := x.Type.Shape
		want := ir.Shape{b, h, sh[r-2], sh[r-1]}
		if sh.Equal(want) {
			return x
		}
		var axes []sym.Expr // [the leading batch dims' product, the last's, ·, ·]
		if x.Type.Sym != nil {
			ax := x.Type.Axes()
			lead, last := sym.Const(1), sym.Const(1)
			if nb > 0 {
				last = ax[nb-1]
				for _, e := range ax[:nb-1] {
					lead = sym.Mul(lead, e)
				}
			}
			axes = []sym.Expr{lead, last, ax[r-2], ax[r-1]}
		}
		return add("reshape", ir.Type{DType: x.Type.DType, Shape: want}, ir.Attrs{"shape": []int(want)}, axes, x)
	}
	if m.pos != nil { // grouped queries: q is [B, H, T, E], o [B, KVH, G·T, Ev]
		qs := m.q.Type.Shape
		args := []*ir.Value{m.q, m.k, m.v, m.pos}
		a := add(ops.AttentionOp, ir.T(o.Type.DType, qs[0], qs[1], qs[2], o.Type.Shape[3]),
			ir.Attrs{"scale": m.scale, "mask": m.mask}, nil, args...)
		if a.Type.Shape.Equal(o.Type.Shape) {
			return a
		}
		return add("reshape", o.Type, ir.Attrs{"shape": []int(o.Type.Shape)}, o.Type.Sym, a)
	}
	args := []*ir.Value{to4(m.q), to4(m.k), to4(m.v)}
	attrs := ir.Attrs{"scale": m.scale, "mask": m.mask}
	if m.bias != nil {
		args = append(args, to4(m.bias))
		attrs["additive"] = true
	}
	l, ev := o.Type.Shape[r-2], o.Type.Shape[r-1]
	a := add(ops.AttentionOp, ir.T(o.Type.DType, b, h, l, ev), attrs, nil, args...)
	if a.Type.Shape.Equal(o.Type.Shape) {
		return a
	}
	return add("reshape", o.Type, ir.Attrs{"shape": []int(o.Type.Shape)}, o.Type.Sym, a)
}

// constantCausal reports whether c, a constant of rank ≥ 2 over square [L, L] matrices, hides
// exactly the keys past the query in every matrix: a bool predicate true there, or an additive
// f32/f16/bf16 mask −inf there and 0 elsewhere.
func constantCausal(c *ir.Value) bool {
	sh := c.Type.Shape
	r := len(sh)
	if r < 2 || sh[r-1] != sh[r-2] {
		return false
	}
	hidden := func(x float64) (hide, ok bool) { return x == math.Inf(-1), x == 0 || math.IsInf(x, -1) }
	switch {
	case c.Type.DType == ir.Bool:
		hidden = func(x float64) (bool, bool) { return x != 0, true }
	case !c.Type.DType.IsFloat():
		return false
	}
	vals, n := c.Attrs.Floats("value"), sh[r-1]
	if len(vals) != sh.NumElements() || n < 2 { // a splat is not causal unless L = 1
		return false
	}
	for i, x := range vals {
		row, col := i/n%n, i%n
		if hide, ok := hidden(x); !ok || hide != (col > row) {
			return false
		}
	}
	return true
}
