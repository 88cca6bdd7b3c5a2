package frontend

import (
	"slices"

	"github.com/gcomp/gcomp/ir"
)

// Tensor is a value of the graph being built: an input, a parameter, or the result of an
// operation. Its methods add operations to the graph and return new tensors; a tensor never
// changes. Binary operations broadcast their operands the way NumPy and PyTorch do.
type Tensor struct {
	s *state
	v *ir.Value
	// perm is set on a weight stored with its input channels permuted (Quant.Permuted): v is
	// the weight in perm's order, which only Linear reads (by gathering its input by perm).
	perm *Tensor
}

// state returns the tensor's graph state; a nil tensor is a user error, reported at the call.
func (t *Tensor) state() *state {
	if t == nil || t.v == nil || t.s == nil {
		panic(&Error{Pos: CallerPosition(), Msg: "nil tensor (a tensor used before it was assigned?)"})
	}
	return t.s
}

// Value returns the graph value the tensor stands for.
func (t *Tensor) Value() *ir.Value { t.state(); return t.v }

// Type returns the tensor's dtype and shape.
func (t *Tensor) Type() ir.Type {
	t.state()
	return ir.Type{DType: t.v.Type.DType, Shape: t.v.Type.Shape.Clone(), Sym: slices.Clone(t.v.Type.Sym)}
}

// DType returns the element type.
func (t *Tensor) DType() ir.DType { t.state(); return t.v.Type.DType }

// Shape returns a copy of the tensor's shape.
func (t *Tensor) Shape() []int { t.state(); return slices.Clone(t.v.Type.Shape) }

// Rank returns the number of dimensions.
func (t *Tensor) Rank() int { t.state(); return len(t.v.Type.Shape) }

// Dim returns the size of dimension d; a negative d counts from the end (-1 is the last). A
// symbolic dim's size is its bound; Size gives its handle.
func (t *Tensor) Dim(d int) int { return t.v.Type.Shape[t.axis("dim", d)] }

// String returns the tensor's name, if it has one, and its type: "x f32[8,2]".
func (t *Tensor) String() string {
	if t == nil || t.v == nil {
		return "<nil>"
	}
	if t.v.Name != "" {
		return t.v.Name + " " + t.v.Type.String()
	}
	return t.v.Type.String()
}

// describe names t in messages: "x is f32[64,784]" for a named tensor, else "role is f32[...]".
func (t *Tensor) describe(role string) string {
	if t == nil || t.v == nil {
		return role + " is nil"
	}
	if t.v.Name != "" {
		role = t.v.Name
	}
	return role + " is " + t.v.Type.String()
}

// describe2 names two operands: "x is f32[2,3], y is f32[4]".
func describe2(a, b *Tensor) string { return a.describe("lhs") + ", " + b.describe("rhs") }

// axis normalizes a possibly negative dimension index of t, or fails naming the operation.
func (t *Tensor) axis(what string, d int) int {
	s := t.state()
	r := len(t.v.Type.Shape)
	if d < -r || d >= r {
		if r == 0 {
			s.failf("%s: dim %d out of range: %s has no dimensions", what, d, named(t, "input"))
		}
		s.failf("%s: dim %d out of range for %s (want %d..%d)", what, d, named(t, "input"), -r, r-1)
	}
	if d < 0 {
		d += r
	}
	return d
}

// axes normalizes a list of dims: all dims when empty, sorted, without repeats.
func (t *Tensor) axes(what string, dims []int) []int {
	if len(dims) == 0 {
		all := make([]int, t.Rank())
		for i := range all {
			all[i] = i
		}
		return all
	}
	out := make([]int, len(dims))
	for i, d := range dims {
		out[i] = t.axis(what, d)
	}
	slices.Sort(out)
	for i := 1; i < len(out); i++ {
		if out[i] == out[i-1] {
			t.s.failf("%s: dim %d repeated in %v", what, out[i], dims)
		}
	}
	return out
}

// --- elementwise ---

func (t *Tensor) unary(op string) *Tensor { return t.state().op(op, nil, t) }

// Neg returns -t.
func (t *Tensor) Neg() *Tensor { return t.unary("neg") }

// Abs returns |t|.
func (t *Tensor) Abs() *Tensor { return t.unary("abs") }

// Exp returns eᵗ.
func (t *Tensor) Exp() *Tensor { return t.unary("exp") }

// Log returns the natural logarithm.
func (t *Tensor) Log() *Tensor { return t.unary("log") }

// Sqrt returns the square root.
func (t *Tensor) Sqrt() *Tensor { return t.unary("sqrt") }

// Rsqrt returns 1/√t.
func (t *Tensor) Rsqrt() *Tensor { return t.unary("rsqrt") }

// Tanh returns the hyperbolic tangent.
func (t *Tensor) Tanh() *Tensor { return t.unary("tanh") }

// Sigmoid returns 1/(1+e⁻ᵗ).
func (t *Tensor) Sigmoid() *Tensor { return t.unary("sigmoid") }

// Relu returns max(t, 0).
func (t *Tensor) Relu() *Tensor { return t.unary("relu") }

// Erf returns the error function.
func (t *Tensor) Erf() *Tensor { return t.unary("erf") }

// Sin returns the sine.
func (t *Tensor) Sin() *Tensor { return t.unary("sin") }

// Cos returns the cosine.
func (t *Tensor) Cos() *Tensor { return t.unary("cos") }

// Floor rounds down.
func (t *Tensor) Floor() *Tensor { return t.unary("floor") }

// Ceil rounds up.
func (t *Tensor) Ceil() *Tensor { return t.unary("ceil") }

// Not returns the logical not of a bool tensor (bitwise not of an integer one).
func (t *Tensor) Not() *Tensor { return t.unary("not") }

// Cast converts to dtype (PyTorch's x.to(dtype)); a cast to the same dtype returns t.
func (t *Tensor) Cast(dtype ir.DType) *Tensor {
	s := t.state()
	if !dtype.Valid() {
		s.failf("cast: invalid dtype")
	}
	if dtype == t.v.Type.DType {
		return t
	}
	return s.op("cast", ir.Attrs{"to": dtype}, t)
}

// binary applies a binary op after broadcasting the operands to a common shape.
func (t *Tensor) binary(op string, o *Tensor) *Tensor {
	s := t.state()
	s.own(o, op)
	if t.v.Type.DType != o.v.Type.DType {
		s.failf("%s: dtypes differ: %s (convert one with Cast)", op, describe2(t, o))
	}
	if s.symbolic() {
		return t.binarySym(op, o) // symbolic.go
	}
	shape, ok := broadcastShapes(t.v.Type.Shape, o.v.Type.Shape)
	if !ok {
		s.failf("%s: shapes cannot be broadcast together: %s", op, describe2(t, o))
	}
	return s.op(op, nil, t.broadcastTo(shape), o.broadcastTo(shape))
}

// broadcastShapes returns the NumPy broadcast of a and b: dims aligned at the right, each pair
// equal or one of them 1.
func broadcastShapes(a, b ir.Shape) (ir.Shape, bool) {
	n := max(len(a), len(b))
	out := make(ir.Shape, n)
	for i := range n {
		da, db := 1, 1
		if j := i - (n - len(a)); j >= 0 {
			da = a[j]
		}
		if j := i - (n - len(b)); j >= 0 {
			db = b[j]
		}
		switch {
		case da == db || db == 1:
			out[i] = da
		case da == 1:
			out[i] = db
		default:
			return nil, false
		}
	}
	return out, true
}

// broadcastTo broadcasts t to shape (a NumPy broadcast of t's shape): the dims of t map to the
// trailing dims of the result. It returns t itself if the shapes are equal.
func (t *Tensor) broadcastTo(shape ir.Shape) *Tensor {
	if t.v.Type.Shape.Equal(shape) {
		return t
	}
	r := len(t.v.Type.Shape)
	dims := make([]int, r)
	for i := range dims {
		dims[i] = len(shape) - r + i
	}
	return t.s.op("broadcast_in_dim", ir.Attrs{"shape": []int(shape.Clone()), "dims": dims}, t)
}

// Expand broadcasts t to the given shape (torch's expand / broadcast_to): size-1 dims repeat and
// new dims are added on the left; -1 keeps a dim's size. A size may be a symbolic dim's handle
// (Builder.Dim, Tensor.Size): cls.Expand(x.Size(0), -1, -1) follows x's batch at run time.
func (t *Tensor) Expand(dims ...int) *Tensor {
	s := t.state()
	r := t.Rank()
	if len(dims) < r {
		s.failf("expand: %v has fewer dims than %s", dims, named(t, "input"))
	}
	if s.hasHandle(dims) {
		return t.expandSym(dims) // symbolic.go
	}
	shape := make(ir.Shape, len(dims))
	for i, d := range dims {
		j := i - (len(dims) - r)
		switch {
		case d == -1 && j >= 0:
			shape[i] = t.v.Type.Shape[j]
		case d < 0:
			s.failf("expand: bad size %d in %v", d, dims)
		case j >= 0 && t.v.Type.Shape[j] != d && t.v.Type.Shape[j] != 1:
			s.failf("expand: cannot expand %s to %v: dim %d has size %d", named(t, "input"), dims, j, t.v.Type.Shape[j])
		default:
			shape[i] = d
		}
	}
	return t.broadcastTo(shape)
}

// Add returns t + o.
func (t *Tensor) Add(o *Tensor) *Tensor { return t.binary("add", o) }

// Sub returns t - o.
func (t *Tensor) Sub(o *Tensor) *Tensor { return t.binary("sub", o) }

// Mul returns t * o, elementwise.
func (t *Tensor) Mul(o *Tensor) *Tensor { return t.binary("mul", o) }

// Div returns t / o (integer division truncates toward zero).
func (t *Tensor) Div(o *Tensor) *Tensor { return t.binary("div", o) }

// Pow returns tᵒ.
func (t *Tensor) Pow(o *Tensor) *Tensor { return t.binary("pow", o) }

// Maximum returns the elementwise larger of t and o (torch.maximum).
func (t *Tensor) Maximum(o *Tensor) *Tensor { return t.binary("max", o) }

// Minimum returns the elementwise smaller of t and o (torch.minimum).
func (t *Tensor) Minimum(o *Tensor) *Tensor { return t.binary("min", o) }

// Eq returns t == o as a bool tensor.
func (t *Tensor) Eq(o *Tensor) *Tensor { return t.binary("eq", o) }

// Ne returns t != o.
func (t *Tensor) Ne(o *Tensor) *Tensor { return t.binary("ne", o) }

// Lt returns t < o.
func (t *Tensor) Lt(o *Tensor) *Tensor { return t.binary("lt", o) }

// Le returns t <= o.
func (t *Tensor) Le(o *Tensor) *Tensor { return t.binary("le", o) }

// Gt returns t > o.
func (t *Tensor) Gt(o *Tensor) *Tensor { return t.binary("gt", o) }

// Ge returns t >= o.
func (t *Tensor) Ge(o *Tensor) *Tensor { return t.binary("ge", o) }

// And returns the logical and of bool tensors (bitwise and of integers).
func (t *Tensor) And(o *Tensor) *Tensor { return t.binary("and", o) }

// Or returns the logical or of bool tensors (bitwise or of integers).
func (t *Tensor) Or(o *Tensor) *Tensor { return t.binary("or", o) }

// scalar returns a constant with t's dtype and shape, for the scalar variants.
func (t *Tensor) scalar(v float64) *Tensor {
	return t.state().constant(v, t.v.Type)
}

// FullLike returns a tensor of t's dtype and shape, symbolic sizes included, with every element
// equal to v (torch.full_like).
func (t *Tensor) FullLike(v float64) *Tensor { return t.scalar(v) }

// AddScalar returns t + v.
func (t *Tensor) AddScalar(v float64) *Tensor { return t.Add(t.scalar(v)) }

// SubScalar returns t - v.
func (t *Tensor) SubScalar(v float64) *Tensor { return t.Sub(t.scalar(v)) }

// RSubScalar returns v - t.
func (t *Tensor) RSubScalar(v float64) *Tensor { return t.scalar(v).Sub(t) }

// MulScalar returns t * v.
func (t *Tensor) MulScalar(v float64) *Tensor { return t.Mul(t.scalar(v)) }

// DivScalar returns t / v.
func (t *Tensor) DivScalar(v float64) *Tensor { return t.Div(t.scalar(v)) }

// PowScalar returns tᵛ.
func (t *Tensor) PowScalar(v float64) *Tensor { return t.Pow(t.scalar(v)) }

// MaximumScalar returns max(t, v) elementwise (torch.clamp(t, min=v)).
func (t *Tensor) MaximumScalar(v float64) *Tensor { return t.Maximum(t.scalar(v)) }

// MinimumScalar returns min(t, v) elementwise (torch.clamp(t, max=v)).
func (t *Tensor) MinimumScalar(v float64) *Tensor { return t.Minimum(t.scalar(v)) }

// EqScalar returns t == v.
func (t *Tensor) EqScalar(v float64) *Tensor { return t.Eq(t.scalar(v)) }

// LtScalar returns t < v.
func (t *Tensor) LtScalar(v float64) *Tensor { return t.Lt(t.scalar(v)) }

// GtScalar returns t > v.
func (t *Tensor) GtScalar(v float64) *Tensor { return t.Gt(t.scalar(v)) }

// Where returns x where cond is true and y elsewhere (torch.where); the three broadcast
// together, and cond is a bool tensor.
func Where(cond, x, y *Tensor) *Tensor {
	s := cond.state()
	s.own(x, "where")
	s.own(y, "where")
	if cond.v.Type.DType != ir.Bool {
		s.failf("where: the condition must be bool, %s", cond.describe("cond"))
	}
	if x.v.Type.DType != y.v.Type.DType {
		s.failf("where: dtypes differ: %s, %s (convert one with Cast)", x.describe("x"), y.describe("y"))
	}
	if s.symbolic() {
		return whereSym(cond, x, y) // symbolic.go
	}
	shape, ok := broadcastShapes(x.v.Type.Shape, y.v.Type.Shape)
	if ok {
		shape, ok = broadcastShapes(cond.v.Type.Shape, shape)
	}
	if !ok {
		s.failf("where: shapes cannot be broadcast together: %s, %s, %s",
			cond.describe("cond"), x.describe("x"), y.describe("y"))
	}
	return s.op("select", nil, cond.broadcastTo(shape), x.broadcastTo(shape), y.broadcastTo(shape))
}

// MaskedFill returns t with value wherever mask is true (torch's masked_fill); mask broadcasts to
// t's shape.
func (t *Tensor) MaskedFill(mask *Tensor, value float64) *Tensor {
	s := t.state()
	s.own(mask, "masked_fill")
	if bs, ok := broadcastShapes(t.v.Type.Shape, mask.v.Type.Shape); !ok || !bs.Equal(t.v.Type.Shape) {
		s.failf("masked_fill: mask does not broadcast to the input: %s, %s", t.describe("input"), mask.describe("mask"))
	}
	return Where(mask, t.scalar(value), t)
}

// named names t inside a phrase: "x f32[64,784]" for a named tensor, else "role f32[...]".
func named(t *Tensor, role string) string {
	if t.v.Name != "" {
		role = t.v.Name
	}
	return role + " " + t.v.Type.String()
}
