package autodiff

import (
	"fmt"
	"slices"

	"github.com/gcomp/gcomp/ir"
)

// Emitter appends type-checked nodes to a graph. The gradient rules build with it, and so do
// graph builders outside this package (the optimizers of package train). A node the op table
// rejects is a bug in the rule that built it: the Emitter panics with an emitError, which Emit
// (and Grad) turn back into an error.
type Emitter struct {
	G   *ir.Graph
	Pos string // position recorded on every node appended (optional)
	// hints are the types of the primal a rule differentiates (its operands and result), which
	// name the symbolic sizes of the shapes it builds first (symemit.go).
	hints []ir.Type
}

type emitError struct{ err error }

// Emit runs build on an Emitter for g and returns the first failure as an error instead of a
// panic. Nodes appended before a failure stay in g: callers that must not leave g half-written
// work on a clone.
func Emit(g *ir.Graph, build func(e *Emitter)) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if ee, ok := r.(emitError); ok {
				err = ee.err
				return
			}
			err = fmt.Errorf("internal error: %v", r)
		}
	}()
	build(&Emitter{G: g})
	return nil
}

// Fail aborts the enclosing Emit with an error.
func (e *Emitter) Fail(format string, args ...any) { panic(emitError{fmt.Errorf(format, args...)}) }

// Op appends op(args...) with the result type the op table infers.
func (e *Emitter) Op(op string, attrs ir.Attrs, args ...*ir.Value) *ir.Value {
	types := make([]ir.Type, len(args))
	for i, a := range args {
		types[i] = a.Type
	}
	t, err := e.infer(op, types, attrs) // symemit.go
	if err != nil {
		e.Fail("building %s: %v", op, err)
	}
	v := e.G.Add(op, t, attrs, args...)
	v.Pos = e.Pos
	return v
}

// Const is a splat constant of type t.
func (e *Emitter) Const(value float64, t ir.Type) *ir.Value {
	if t.Sym != nil {
		return e.symConst(value, t)
	}
	return e.Op("constant", ir.Attrs{"shape": slices.Clone([]int(t.Shape)), "dtype": t.DType, "value": []float64{value}})
}

// Scalar is a splat constant of x's type.
func (e *Emitter) Scalar(value float64, like *ir.Value) *ir.Value { return e.Const(value, like.Type) }

// Elementwise shorthands; operands have equal types.
func (e *Emitter) Add(a, b *ir.Value) *ir.Value { return e.Op("add", nil, a, b) }
func (e *Emitter) Sub(a, b *ir.Value) *ir.Value { return e.Op("sub", nil, a, b) }
func (e *Emitter) Mul(a, b *ir.Value) *ir.Value { return e.Op("mul", nil, a, b) }
func (e *Emitter) Div(a, b *ir.Value) *ir.Value { return e.Op("div", nil, a, b) }
func (e *Emitter) Neg(a *ir.Value) *ir.Value    { return e.Op("neg", nil, a) }

// Select is pred ? a : b.
func (e *Emitter) Select(pred, a, b *ir.Value) *ir.Value { return e.Op("select", nil, pred, a, b) }

// MulScalar is a·c.
func (e *Emitter) MulScalar(a *ir.Value, c float64) *ir.Value { return e.Mul(a, e.Scalar(c, a)) }

// AddScalar is a+c.
func (e *Emitter) AddScalar(a *ir.Value, c float64) *ir.Value { return e.Add(a, e.Scalar(c, a)) }

// Cast converts a to d (a itself if it has that dtype).
func (e *Emitter) Cast(a *ir.Value, d ir.DType) *ir.Value {
	if a.Type.DType == d {
		return a
	}
	return e.Op("cast", ir.Attrs{"to": d}, a)
}

// Reshape returns a with shape (a itself if it has it).
func (e *Emitter) Reshape(a *ir.Value, shape []int) *ir.Value {
	if a.Type.Shape.Equal(shape) {
		return a
	}
	return e.Op("reshape", ir.Attrs{"shape": slices.Clone(shape)}, a)
}

// Transpose permutes a's dims (a itself for the identity).
func (e *Emitter) Transpose(a *ir.Value, perm []int) *ir.Value {
	if isIdentity(perm) {
		return a
	}
	return e.Op("transpose", ir.Attrs{"perm": slices.Clone(perm)}, a)
}

// Broadcast is broadcast_in_dim(a) to shape with a's dim i at dims[i] (a itself if nothing changes).
func (e *Emitter) Broadcast(a *ir.Value, shape []int, dims []int) *ir.Value {
	if a.Type.Shape.Equal(shape) && isIdentity(dims) {
		return a
	}
	return e.Op("broadcast_in_dim", ir.Attrs{"shape": slices.Clone(shape), "dims": slices.Clone(dims)}, a)
}

// BroadcastScalar broadcasts a rank-0 a to shape.
func (e *Emitter) BroadcastScalar(a *ir.Value, shape []int) *ir.Value {
	return e.Broadcast(a, shape, []int{})
}

// SumAll reduces every dim of a to a scalar.
func (e *Emitter) SumAll(a *ir.Value) *ir.Value {
	if a.Type.Shape.Rank() == 0 {
		return a
	}
	return e.Op("reduce_sum", ir.Attrs{"axes": iota0(a.Type.Shape.Rank())}, a)
}

// Slice takes [start, limit) with stride along every dim (a itself for the whole tensor).
func (e *Emitter) Slice(a *ir.Value, start, limit, stride []int) *ir.Value {
	whole := true
	for i, n := range a.Type.Shape {
		whole = whole && start[i] == 0 && limit[i] == n && (stride == nil || stride[i] == 1)
	}
	if whole {
		return a
	}
	attrs := ir.Attrs{"start": slices.Clone(start), "limit": slices.Clone(limit)}
	if stride != nil {
		attrs["stride"] = slices.Clone(stride)
	}
	return e.Op("slice", attrs, a)
}

// Pad pads a with zeros (a itself when there is nothing to pad).
func (e *Emitter) Pad(a *ir.Value, low, high []int, value float64) *ir.Value {
	if allZero(low) && allZero(high) {
		return a
	}
	attrs := ir.Attrs{"low": slices.Clone(low), "high": slices.Clone(high)}
	if value != 0 {
		attrs["value"] = value
	}
	return e.Op("pad", attrs, a)
}

// PadOrSlice grows (positive) or trims (negative) each end of every dim.
func (e *Emitter) PadOrSlice(a *ir.Value, low, high []int) *ir.Value {
	r := len(low)
	start, limit := make([]int, r), slices.Clone([]int(a.Type.Shape))
	pl, ph := make([]int, r), make([]int, r)
	for i := range r {
		if low[i] < 0 {
			start[i] = -low[i]
		} else {
			pl[i] = low[i]
		}
		if high[i] < 0 {
			limit[i] += high[i]
		} else {
			ph[i] = high[i]
		}
	}
	return e.Pad(e.Slice(a, start, limit, nil), pl, ph, 0)
}

// Dilate inserts s-1 zeros between neighbours along dim (length n becomes (n-1)·s+1), with
// movement ops only: reshape to [..., n, 1, ...], pad the unit dim to s, reshape, trim.
func (e *Emitter) Dilate(a *ir.Value, dim, s int) *ir.Value {
	if s == 1 {
		return a
	}
	shape := []int(a.Type.Shape)
	n := shape[dim]
	if n == 0 {
		return a
	}
	split := slices.Concat(shape[:dim+1], []int{1}, shape[dim+1:])
	x := e.Reshape(a, split)
	high := make([]int, len(split))
	high[dim+1] = s - 1
	x = e.Pad(x, make([]int, len(split)), high, 0)
	merged := slices.Clone(shape)
	merged[dim] = n * s
	x = e.Reshape(x, merged)
	limit := slices.Clone(merged)
	limit[dim] = (n-1)*s + 1
	return e.Slice(x, make([]int, len(merged)), limit, nil)
}

// Reverse flips dim with slices and a concat (movement only).
func (e *Emitter) Reverse(a *ir.Value, dim int) *ir.Value {
	n := a.Type.Shape[dim]
	if n <= 1 {
		return a
	}
	r := a.Type.Shape.Rank()
	parts := make([]*ir.Value, n)
	for i := range n {
		start, limit := make([]int, r), slices.Clone([]int(a.Type.Shape))
		start[dim], limit[dim] = n-1-i, n-i
		parts[i] = e.Slice(a, start, limit, nil)
	}
	return e.Op("concat", ir.Attrs{"axis": dim}, parts...)
}

// AddAll sums vs (all of one type) left to right.
func (e *Emitter) AddAll(vs []*ir.Value) *ir.Value {
	acc := vs[0]
	for _, v := range vs[1:] {
		acc = e.Add(acc, v)
	}
	return acc
}

func iota0(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func isIdentity(perm []int) bool {
	for i, p := range perm {
		if p != i {
			return false
		}
	}
	return true
}

func allZero(s []int) bool {
	for _, x := range s {
		if x != 0 {
			return false
		}
	}
	return true
}
