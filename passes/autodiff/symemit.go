package autodiff

import (
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
)

// Emitting into a graph with dims (docs/dynamic.md). The rules speak in bound shapes, as the
// passes do; the Emitter infers each node over expressions (ops.InferSym), so a gradient has its
// primal's symbolic type. The ops whose result shape is an attribute (broadcast_in_dim, reshape,
// a splat constant) take their symbolic sizes from the primal: each result dim an operand dim
// maps to keeps that dim's expression, and the others come from the first type of the same bound
// shape (and, for a reshape, the same element count) among the primal's operands and result (the
// rule's hints; a static one keeps the result static), else among the graph's symbolic values.
// With none, the result is static at its bound. A wrong choice cannot pass silently: InferSym
// checks every result, and Grad checks each gradient's type against its primal's.

// infer is ops.Infer, over expressions when the graph has dims.
func (e *Emitter) infer(op string, types []ir.Type, attrs ir.Attrs) (ir.Type, error) {
	if len(e.G.Dims) == 0 {
		return ops.Infer(op, types, attrs)
	}
	return ops.InferSym(op, types, attrs, e.G.Ranges(), e.want(op, types, attrs))
}

// want is the symbolic result of an op whose result shape is an attribute, or nil.
func (e *Emitter) want(op string, types []ir.Type, attrs ir.Attrs) []sym.Expr {
	var shape []int
	var known func(like []sym.Expr) bool
	switch op {
	case "broadcast_in_dim":
		shape = attrs.Ints("shape")
		from := types[0]
		mapped := map[int]sym.Expr{}
		for i, d := range attrs.Ints("dims") {
			if from.Sym != nil && from.Shape[i] == shape[d] {
				mapped[d] = from.Sym[i]
			}
		}
		known = func(like []sym.Expr) bool {
			if like == nil { // static: only where no operand dim maps a symbolic size
				return len(mapped) == 0
			}
			for d, x := range mapped {
				if !like[d].Equal(x) {
					return false
				}
			}
			return true
		}
		if len(mapped) == len(shape) && len(shape) > 0 {
			w := make([]sym.Expr, len(shape))
			for d := range w {
				w[d] = mapped[d]
			}
			return w
		}
	case "reshape":
		shape = attrs.Ints("shape")
		count := elements(types[0])
		known = func(like []sym.Expr) bool { return elements(ir.Type{Shape: shape, Sym: like}).Equal(count) }
	default:
		return nil
	}
	for _, h := range e.hints {
		if h.Shape.Equal(shape) && known(h.Sym) {
			return h.Sym
		}
	}
	for _, v := range e.G.Values {
		if v.Type.Sym != nil && v.Type.Shape.Equal(shape) && known(v.Type.Sym) {
			return v.Type.Sym
		}
	}
	return nil
}

// primalTypes are the types of v's operands and v's.
func primalTypes(v *ir.Value) []ir.Type {
	ts := make([]ir.Type, 0, len(v.Args)+1)
	for _, a := range v.Args {
		ts = append(ts, a.Type)
	}
	return append(ts, v.Type)
}

// elements is t's element count as an expression.
func elements(t ir.Type) sym.Expr {
	n := sym.Const(1)
	for i, s := range t.Shape {
		if t.Sym != nil {
			n = sym.Mul(n, t.Sym[i])
		} else {
			n = sym.Mul(n, sym.Const(int64(s)))
		}
	}
	return n
}

// symConst is a splat of value with symbolic type t: a scalar constant broadcast to it.
func (e *Emitter) symConst(value float64, t ir.Type) *ir.Value {
	return e.BroadcastScalarTo(e.Const(value, ir.Type{DType: t.DType, Shape: ir.Shape{}}), t)
}

// BroadcastScalarTo broadcasts a rank-0 a to t's sizes, symbolic ones included: a static t
// gives a static result, where BroadcastScalar outside a rule takes the sizes of a symbolic value
// of the same bound shape (an optimizer's scalar broadcast to a parameter shaped like the
// activations at the bound would take the batch).
func (e *Emitter) BroadcastScalarTo(a *ir.Value, t ir.Type) *ir.Value {
	return e.BroadcastTo(a, t, []int{})
}

// BroadcastTo is broadcast_in_dim(a) to t's sizes, symbolic ones included, with a's dim i at
// dims[i]: the result is t, never a symbolic value's type of the same bound shape (what
// Broadcast may take when a maps no symbolic size).
func (e *Emitter) BroadcastTo(a *ir.Value, t ir.Type, dims []int) *ir.Value {
	if len(e.G.Dims) == 0 || a.Type.Shape.Equal(t.Shape) && isIdentity(dims) && t.Sym == nil {
		return e.Broadcast(a, t.Shape, dims)
	}
	attrs := ir.Attrs{"shape": slices.Clone([]int(t.Shape)), "dims": slices.Clone(dims)}
	r, err := ops.InferSym("broadcast_in_dim", []ir.Type{a.Type}, attrs, e.G.Ranges(), t.Sym)
	if err != nil {
		e.Fail("broadcasting %s to %s: %v", a.Type, t, err)
	}
	v := e.G.Add("broadcast_in_dim", r, attrs, a)
	v.Pos = e.Pos
	return v
}
