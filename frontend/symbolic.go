package frontend

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
)

// dimHandleBase: the ints Builder.Dim returns are dimHandleBase, dimHandleBase-1, ...: far below
// -1 (Reshape's "infer this dim"), so no size and no other argument is mistaken for one.
const dimHandleBase = -1 << 40

// Dim declares a symbolic dimension: a size known only at run time, lo <= size <= hi
// (docs/dynamic.md). It returns a handle that Input and Reshape take in place of a size:
//
//	batch, seq := b.Dim("batch", 1, 64), b.Dim("seq", 1, 2048)
//	x := b.Input("x", ir.F32, batch, seq, 768) // f32[batch,seq,768]
//
// Ops propagate the sizes as expressions (x.Reshape(-1, 768) is f32[batch*seq,768]); Shape and
// Dim report each dim's bound, hi.
func (b *Builder) Dim(name string, lo, hi int) int {
	s := b.st
	if !sym.ValidName(name) {
		s.failf("Dim: bad name %q: a letter or _, then letters, digits or _", name)
	}
	for _, d := range s.g.Dims {
		if d.Name == name {
			s.failf("Dim: %s declared twice", name)
		}
	}
	switch {
	case lo < 0 || lo > hi:
		s.failf("Dim %s: bad range [%d, %d]: want 0 <= lo <= hi", name, lo, hi)
	case hi > ir.MaxElements:
		s.failf("Dim %s: the bound %d is over 2^31-1", name, hi)
	}
	s.g.DeclareDim(name, lo, hi)
	return dimHandleBase - (len(s.g.Dims) - 1)
}

// symbolic reports whether the graph has dims, so that ops infer over expressions.
func (s *state) symbolic() bool { return len(s.g.Dims) > 0 }

// size turns a size argument into an expression: a handle from Dim, or a constant.
func (s *state) size(d int) (sym.Expr, bool) {
	if i := dimHandleBase - d; i >= 0 && i < len(s.g.Dims) {
		return sym.Sym(s.g.Dims[i].Name), true
	}
	return sym.Const(int64(d)), false
}

// symType is the type of dtype with sizes dims, which may hold Dim handles.
func (s *state) symType(what string, dtype ir.DType, dims []int) ir.Type {
	es := make([]sym.Expr, len(dims))
	static := make([]int, len(dims))
	for i, d := range dims {
		es[i], _ = s.size(d)
		if _, ok := es[i].IsConst(); ok {
			static[i] = d
		}
	}
	t := s.checkType(what, dtype, static)
	if !s.symbolic() {
		return t
	}
	st, err := ir.SymType(dtype, s.g.Ranges(), es...)
	if err != nil {
		s.failf("%s: %v", what, err)
	}
	return st
}

// infer is ops.Infer, over expressions when the graph has dims; want is the result's symbolic
// form for the ops whose result shape is an attribute.
func (s *state) infer(name string, types []ir.Type, attrs ir.Attrs, want []sym.Expr) (ir.Type, error) {
	if !s.symbolic() {
		return ops.Infer(name, types, attrs)
	}
	return ops.InferSym(name, types, attrs, s.g.Ranges(), want)
}

// opWant is op with the result's symbolic sizes given.
func (s *state) opWant(name string, attrs ir.Attrs, want []sym.Expr, args ...*Tensor) *Tensor {
	types := make([]ir.Type, len(args))
	vals := make([]*ir.Value, len(args))
	for i, a := range args {
		s.own(a, name)
		if a.perm != nil {
			s.failf("%s: parameter %s %s is stored with its input channels permuted (act-order): only Linear reads it", name, strings.TrimSuffix(a.perm.v.Name, "_perm"), a.v.Type)
		}
		types[i], vals[i] = a.v.Type, a.v
	}
	t, err := s.infer(name, types, attrs, want)
	if err != nil {
		s.failf("%v", err)
	}
	return s.add(s.g.Add(name, t, attrs, vals...))
}

// broadcastChannels broadcasts the per-channel vector p to y's type along y's dim 1 (a bias).
func (s *state) broadcastChannels(p, y *Tensor) *Tensor {
	return s.opWant("broadcast_in_dim", ir.Attrs{"shape": y.Shape(), "dims": []int{1}}, y.v.Type.Sym, p)
}

// binarySym is binary for a graph with dims: NumPy broadcasting over expressions, where two
// sizes match if they are provably equal or one of them is the constant 1.
func (t *Tensor) binarySym(op string, o *Tensor) *Tensor {
	s := t.s
	out, err := broadcastSymAxes(t.v.Type.Axes(), o.v.Type.Axes())
	if err != nil {
		s.failf("%s: shapes cannot be broadcast together: %s: %v", op, describe2(t, o), err)
	}
	ty, err := ir.SymType(t.v.Type.DType, s.g.Ranges(), out...)
	if err != nil {
		s.failf("%s: %v", op, err)
	}
	return s.op(op, nil, t.broadcastSym(ty), o.broadcastSym(ty))
}

// broadcastSymAxes is NumPy broadcasting of two shapes over expressions: two sizes match if they
// are provably equal or one of them is the constant 1.
func broadcastSymAxes(a, b []sym.Expr) ([]sym.Expr, error) {
	n := max(len(a), len(b))
	out := make([]sym.Expr, n)
	one := sym.Const(1)
	for i := range n {
		da, db := one, one
		if j := i - (n - len(a)); j >= 0 {
			da = a[j]
		}
		if j := i - (n - len(b)); j >= 0 {
			db = b[j]
		}
		switch {
		case da.Equal(db) || db.Equal(one):
			out[i] = da
		case da.Equal(one):
			out[i] = db
		default:
			return nil, fmt.Errorf("dim %d is %s and %s, not provably equal", i, da, db)
		}
	}
	return out, nil
}

// whereSym is Where for a graph with dims: the three operands broadcast over expressions (a
// mask without the batch, [T, T], spreads over a symbolic batch).
func whereSym(cond, x, y *Tensor) *Tensor {
	s := cond.s
	out, err := broadcastSymAxes(x.v.Type.Axes(), y.v.Type.Axes())
	if err == nil {
		out, err = broadcastSymAxes(cond.v.Type.Axes(), out)
	}
	if err != nil {
		s.failf("where: shapes cannot be broadcast together: %s, %s, %s: %v", cond.describe("cond"), x.describe("x"), y.describe("y"), err)
	}
	ty, err := ir.SymType(x.v.Type.DType, s.g.Ranges(), out...)
	if err != nil {
		s.failf("where: %v", err)
	}
	mask := ir.Type{DType: ir.Bool, Shape: ty.Shape, Sym: ty.Sym}
	return s.op("select", nil, cond.broadcastSym(mask), x.broadcastSym(ty), y.broadcastSym(ty))
}

// broadcastSym broadcasts t to ty, whose trailing dims t's dims map to.
func (t *Tensor) broadcastSym(ty ir.Type) *Tensor {
	if t.v.Type.Equal(ir.Type{DType: t.v.Type.DType, Shape: ty.Shape, Sym: ty.Sym}) {
		return t
	}
	r := len(t.v.Type.Shape)
	dims := make([]int, r)
	for i := range dims {
		dims[i] = len(ty.Shape) - r + i
	}
	return t.s.opWant("broadcast_in_dim", ir.Attrs{"shape": []int(ty.Shape.Clone()), "dims": dims}, ty.Axes(), t)
}

// hasHandle reports whether sizes holds a Dim handle. Reshape sizes without one are bounds (as
// Shape and Dim report them, e.g. Flatten's products), from which the reshape's symbolic result
// is derived (docs/dynamic.md); sizes with one are expressions.
func (s *state) hasHandle(sizes []int) bool {
	return slices.ContainsFunc(sizes, func(d int) bool { _, h := s.size(d); return h })
}

// reshapeSym is reshape with Dim handles among the sizes, and at most one -1, which becomes the
// operand's size product divided by the others' when that division is exact.
func (t *Tensor) reshapeSym(what string, dims []int) *Tensor {
	s := t.s
	want := make([]sym.Expr, len(dims))
	infer := -1
	rest := sym.Const(1)
	for i, d := range dims {
		switch {
		case d == -1 && infer < 0:
			infer = i
			continue
		case d == -1:
			s.failf("%s: only one dim can be -1, have %v", what, s.sizes(dims))
		}
		e, handle := s.size(d)
		if d < 0 && !handle {
			s.failf("%s: bad size %d in %v", what, d, s.sizes(dims))
		}
		want[i] = e
		rest = sym.Mul(rest, e)
	}
	in := sym.Const(1)
	for _, e := range t.v.Type.Axes() {
		in = sym.Mul(in, e)
	}
	if infer >= 0 {
		q, ok := sym.Quo(in, rest) // [batch, -1] of f32[batch,4,16] is [batch,64]
		if !ok {
			s.failf("%s: shape %v is invalid for %s: its size %s is not a multiple of %s", what, s.sizes(dims), named(t, "input"), in, rest)
		}
		want[infer] = q
	} else if !rest.Equal(in) {
		s.failf("%s: shape %v is invalid for %s: %s elements, not %s", what, s.sizes(dims), named(t, "input"), rest, in)
	}
	ty, err := ir.SymType(t.v.Type.DType, s.g.Ranges(), want...)
	if err != nil {
		s.failf("%s: %v", what, err)
	}
	if ty.Equal(t.v.Type) {
		return t
	}
	return s.opWant("reshape", ir.Attrs{"shape": []int(ty.Shape.Clone())}, want, t)
}

// sizes prints size arguments with their handles as names: [batch,-1,768].
func (s *state) sizes(dims []int) string {
	parts := make([]string, len(dims))
	for i, d := range dims {
		if e, ok := s.size(d); ok {
			parts[i] = e.String()
		} else {
			parts[i] = fmt.Sprint(d)
		}
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// Size returns the size of dimension d as a size argument, torch's x.size(d): a static dim's
// size, or, where the dim's size is one symbolic dim, that dim's handle, which Input, Reshape
// and Expand take in place of a size (cls.Expand(x.Size(0), -1, -1) follows x's batch). A dim
// sized by an expression of dims (batch*seq) has no handle: Size fails naming it (Reshape's -1
// infers such a size).
func (t *Tensor) Size(d int) int {
	s := t.state()
	i := t.axis("size", d)
	e := t.v.Type.Axis(i)
	if n, ok := e.IsConst(); ok {
		return int(n)
	}
	for h, dim := range s.g.Dims {
		if e.Equal(sym.Sym(dim.Name)) {
			return dimHandleBase - h
		}
	}
	s.failf("size: dim %d of %s is %s, an expression of dims, not one: pass -1 to Reshape, or the dims' handles", i, named(t, "input"), e)
	return 0
}

// expandSym is Expand with Dim handles among the sizes: a handle sizes a new dim, or a dim of
// size 1 or of that dim.
func (t *Tensor) expandSym(dims []int) *Tensor {
	s := t.s
	r := t.Rank()
	want := make([]sym.Expr, len(dims))
	shape := make([]int, len(dims))
	for i, d := range dims {
		j := i - (len(dims) - r)
		e, handle := s.size(d)
		switch {
		case d == -1 && j >= 0:
			want[i], shape[i] = t.v.Type.Axis(j), t.v.Type.Shape[j]
			continue
		case d < 0 && !handle:
			s.failf("expand: bad size %d in %v", d, s.sizes(dims))
		}
		if j >= 0 {
			if have := t.v.Type.Axis(j); !have.Equal(sym.Const(1)) && !have.Equal(e) {
				s.failf("expand: cannot expand %s to %s: dim %d has size %s", named(t, "input"), s.sizes(dims), j, have)
			}
		}
		want[i], shape[i] = e, d
		if handle {
			shape[i] = s.g.Dims[dimHandleBase-d].Hi
		}
	}
	if slices.EqualFunc(want, t.v.Type.Axes(), sym.Expr.Equal) {
		return t
	}
	bdims := make([]int, r)
	for i := range bdims {
		bdims[i] = len(dims) - r + i
	}
	return s.opWant("broadcast_in_dim", ir.Attrs{"shape": shape, "dims": bdims}, want, t)
}
