package onnx

import (
	"fmt"
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/tensor"
)

// val is an ONNX tensor during import. A value known at compile time (a Constant, a bound
// input, a shape, and anything computed from those alone) has c set and enters the graph, as a
// constant, only if a runtime value needs it. An initializer has w, its bytes (converted only
// where ONNX wants a shape-determining operand), and enters the graph as a parameter.
type val struct {
	t     ir.Type
	c     *tensor.Tensor
	v     *ir.Value
	w     *weight
	param string // the initializer's name
	// deps are the graph inputs a run-time value is computed from: binding them (--const) makes
	// it known, for an operand that decides a shape.
	deps []string
	// sizes, for a compile-time integer vector computed from the sizes of an input with dynamic
	// axes, holds each entry as an expression (c holds their bounds); nil when all are static.
	sizes []sym.Expr
}

// folded says whether x is a compile-time value that ops on it may fold.
func (x *val) folded() bool { return x.c != nil && x.param == "" }

type builder struct {
	g   *ir.Graph
	src tensorSource
	pos string // where new values come from: "model.onnx:node17"
	// weights are the initializers that became parameters.
	weights *Weights
	// productWeights are the values every consumer of which reads as the weight (input B) of a
	// MatMul or Gemm: a DequantizeLinear of an initializer there stays int8 (weightquant.go).
	productWeights map[string]bool
	// dequantized are the values only DequantizeLinear reads, as its x (qdqweights.go).
	dequantized map[string]bool
	// paramName returns a new parameter's unused name.
	paramName func(string) string
}

func (b *builder) materialize(x *val) *ir.Value {
	if x.v != nil {
		return x.v
	}
	if x.sizes != nil {
		panic(internalError{sizesRefused(x, "a value computed in the graph")})
	}
	if x.param != "" {
		x.v = b.g.Param(x.param, x.t, nil)
		b.weights.m[x.param] = x.w
		return x.v
	}
	vals := make([]float64, x.c.Len())
	for i := range vals {
		vals[i] = x.c.At(i)
	}
	if len(vals) > 1 && allEqual(vals) {
		vals = vals[:1]
	}
	x.v = b.g.Add("constant", x.t, ir.Attrs{"shape": []int(x.t.Shape.Clone()), "dtype": x.t.DType, "value": vals})
	x.v.Pos = b.pos
	return x.v
}

func allEqual(v []float64) bool {
	for _, e := range v[1:] {
		if e != v[0] && !(e != e && v[0] != v[0]) {
			return false
		}
	}
	return true
}

// op applies a gcomp op. When every operand is known at compile time the result is computed
// with the op's reference semantics (ops.Eval) instead of entering the graph.
func (b *builder) op(name string, attrs ir.Attrs, args ...*val) (*val, error) {
	return b.opWant(name, attrs, nil, args...)
}

// opWant is op with the result's symbolic sizes given (reshape, broadcast_in_dim; nil derives
// them from the bounds).
func (b *builder) opWant(name string, attrs ir.Attrs, want []sym.Expr, args ...*val) (*val, error) {
	types := make([]ir.Type, len(args))
	fold, sized := true, false
	for i, a := range args {
		types[i] = a.t
		fold = fold && a.folded()
		sized = sized || a.sizes != nil
	}
	t, err := b.infer(name, types, attrs, want)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if sized && fold {
		return b.foldSizes(name, attrs, t, args)
	}
	if sized {
		return nil, sizesRefused(firstSized(args), "the run-time operand of "+name)
	}
	if fold && t.Sym == nil && t.Shape.NumElements() <= foldLimit {
		cs := make([]*tensor.Tensor, len(args))
		for i, a := range args {
			cs[i] = a.c
		}
		c, err := ops.Eval(&ir.Value{Op: name, Attrs: attrs, Type: t}, cs)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		return &val{t: t, c: c}, nil
	}
	vs := make([]*ir.Value, len(args))
	var deps []string
	for i, a := range args {
		vs[i] = b.materialize(a)
		for _, d := range a.deps {
			if !slices.Contains(deps, d) {
				deps = append(deps, d)
			}
		}
	}
	v := b.g.Add(name, t, attrs, vs...)
	v.Pos = b.pos
	return &val{t: t, v: v, deps: deps}, nil
}

// must panics on an error of op; the converters use it where their own checks have made the
// op's inference certain, and import recovers it into an error naming the node.
func must[T any](x T, err error) T {
	if err != nil {
		panic(internalError{err})
	}
	return x
}

type internalError struct{ err error }

// foldLimit bounds the elements of a value computed at import (a folded op, an index map), so
// that sizes read from a model cannot make import allocate without bound; larger constants are
// computed in the graph.
const foldLimit = 1 << 24

func checkFold(n int, what string) error {
	if n > foldLimit {
		return unsupportedf("%s has %d elements, more than gcomp computes at import (%d)", what, n, foldLimit)
	}
	return nil
}

// splatOf is a tensor of type t with every element v: folded when small, else a constant op.
func (b *builder) splatOf(t ir.Type, v float64) *val {
	if t.Sym != nil { // a scalar broadcast to the symbolic sizes
		return must(b.broadcastLike(b.splatOf(ir.Type{DType: t.DType}, v), t))
	}
	if t.Shape.NumElements() <= foldLimit {
		c := tensor.New(t)
		for i := 0; i < c.Len(); i++ {
			if c.F != nil {
				c.F[i] = tensor.RoundFloat(t.DType, v)
			} else {
				c.I[i] = tensor.WrapInt(t.DType, int64(v))
			}
		}
		return constant(c)
	}
	x := b.g.Add("constant", t, ir.Attrs{"shape": []int(t.Shape.Clone()), "dtype": t.DType, "value": []float64{v}})
	x.Pos = b.pos
	return &val{t: t, v: x}
}

// constant returns a compile-time value.
func constant(c *tensor.Tensor) *val { return &val{t: c.Type, c: c} }

func scalar(d ir.DType, f float64) *val {
	return constant(tensor.FromFloats(ir.T(d), []float64{f}))
}

func ints64(vals ...int) *val {
	f := make([]float64, len(vals))
	for i, v := range vals {
		f[i] = float64(v)
	}
	return constant(tensor.FromFloats(ir.T(ir.I64, len(vals)), f))
}

// Helpers over b.op with the attribute spelling of the op table.

func (b *builder) unary(op string, x *val) *val { return must(b.op(op, nil, x)) }

func (b *builder) reshape(x *val, shape ir.Shape) *val {
	if x.t.Shape.Equal(shape) {
		return x
	}
	return must(b.op("reshape", ir.Attrs{"shape": []int(shape.Clone())}, x))
}

func (b *builder) transpose(x *val, perm []int) *val {
	id := true
	for i, p := range perm {
		id = id && i == p
	}
	if id {
		return x
	}
	return must(b.op("transpose", ir.Attrs{"perm": perm}, x))
}

func (b *builder) cast(x *val, d ir.DType) *val {
	if x.t.DType == d {
		return x
	}
	return must(b.op("cast", ir.Attrs{"to": d}, x))
}

// broadcastTo is ONNX's (numpy's) broadcasting of x to shape: x's dims align with shape's last.
// In a graph with dims the shape is static; broadcastLike takes a symbolic type.
func (b *builder) broadcastTo(x *val, shape ir.Shape) (*val, error) {
	return b.broadcastLike(x, ir.Type{DType: x.t.DType, Shape: shape})
}

// broadcastLike broadcasts x to to's shape, symbolic sizes included.
func (b *builder) broadcastLike(x *val, to ir.Type) (*val, error) {
	shape := to.Shape
	if x.t.Shape.Equal(shape) {
		return x, nil
	}
	r, n := len(shape), len(x.t.Shape)
	if n > r {
		return nil, fmt.Errorf("cannot broadcast %s to %v", x.t, shape)
	}
	dims := make([]int, n)
	for i, d := range x.t.Shape {
		dims[i] = r - n + i
		if d != 1 && d != shape[r-n+i] {
			return nil, fmt.Errorf("cannot broadcast %s to %v", x.t, shape)
		}
	}
	var want []sym.Expr
	if to.Sym != nil {
		want = to.Axes()
	}
	return b.opWant("broadcast_in_dim", ir.Attrs{"shape": []int(shape.Clone()), "dims": dims}, want, x)
}

// broadcastShape is the multidirectional broadcast of shapes.
func broadcastShape(shapes ...ir.Shape) (ir.Shape, error) {
	r := 0
	for _, s := range shapes {
		r = max(r, len(s))
	}
	out := make(ir.Shape, r)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		for i, d := range s {
			j := r - len(s) + i
			switch {
			case d == out[j] || d == 1:
			case out[j] == 1:
				out[j] = d
			default:
				return nil, fmt.Errorf("shapes %v do not broadcast (dim %d: %d vs %d)", shapes, j, out[j], d)
			}
		}
	}
	return out, nil
}

// broadcastAll broadcasts xs to their common shape.
func (b *builder) broadcastAll(xs ...*val) ([]*val, error) {
	shapes := make([]ir.Shape, len(xs))
	for i, x := range xs {
		shapes[i] = x.t.Shape
	}
	s, err := broadcastShape(shapes...)
	if err != nil {
		return nil, err
	}
	to := ir.Type{Shape: s}
	if len(b.g.Dims) > 0 {
		if to, err = b.broadcastSym(xs); err != nil {
			return nil, err
		}
	}
	out := make([]*val, len(xs))
	for i, x := range xs {
		if out[i], err = b.broadcastLike(x, to); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// binary applies a two-operand elementwise op with ONNX broadcasting.
func (b *builder) binary(op string, x, y *val) (*val, error) {
	if x.t.DType != y.t.DType {
		return nil, fmt.Errorf("operand types differ: %s and %s", x.t.DType, y.t.DType)
	}
	xs, err := b.broadcastAll(x, y)
	if err != nil {
		return nil, err
	}
	return b.op(op, nil, xs[0], xs[1])
}

func (b *builder) bin(op string, x, y *val) *val { return must(b.binary(op, x, y)) }

// splat is a scalar of x's dtype broadcast as needed by bin.
func (b *builder) splat(x *val, f float64) *val { return scalar(x.t.DType, f) }

func (b *builder) reduce(op string, x *val, axes []int, keep bool) *val {
	if len(axes) == 0 {
		return x
	}
	return must(b.op(op, ir.Attrs{"axes": axes, "keepdims": keep}, x))
}

// selectOp is where(pred, x, y) with broadcasting.
func (b *builder) selectOp(pred, x, y *val) (*val, error) {
	xs, err := b.broadcastAll(pred, x, y)
	if err != nil {
		return nil, err
	}
	return b.op("select", nil, xs...)
}

// numElements of the dims axes of s.
func numElements(s ir.Shape, axes []int) int {
	n := 1
	for _, a := range axes {
		n *= s[a]
	}
	return n
}
