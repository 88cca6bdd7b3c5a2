package frontend

import "github.com/gcomp/gcomp/ir"

// This file holds the activation family of torch.nn.functional as composites of exact
// primitives (compares, select, add, mul, exp, log, tanh). Each is elementwise, so a chain of
// them fuses into one kernel, and its gradient comes from the primitives' rules. The masks are
// chosen so that the gradient at the kinks is PyTorch's: clamp passes the gradient where
// min ≤ x ≤ max, hardtanh (and relu6, hardsigmoid) only where min < x < max.

// Clamp is torch.clamp(x, min, max): min(max(x, lo), hi), so lo > hi gives hi everywhere, as
// in PyTorch. NaN stays NaN. Integer tensors need integer bounds.
func (t *Tensor) Clamp(lo, hi float64) *Tensor { return t.ClampMin(lo).ClampMax(hi) }

// ClampMin is torch.clamp(x, min=lo): lo where x < lo, else x (NaN stays NaN).
func (t *Tensor) ClampMin(lo float64) *Tensor {
	c := t.scalar(lo)
	return Where(t.Lt(c), c, t)
}

// ClampMax is torch.clamp(x, max=hi): hi where x > hi, else x (NaN stays NaN).
func (t *Tensor) ClampMax(hi float64) *Tensor {
	c := t.scalar(hi)
	return Where(t.Gt(c), c, t)
}

// Hardtanh is F.hardtanh(x, lo, hi): x clamped to [lo, hi], whose gradient is 1 only strictly
// inside (lo, hi), as PyTorch's hardtanh_backward. A bound of 0 met by a zero keeps the zero's
// sign (relu6(-0) = -0), as PyTorch's clamp.
func Hardtanh(x *Tensor, lo, hi float64) *Tensor {
	l, h := x.scalar(lo), x.scalar(hi)
	y := Where(x.Le(l), atBound(x, l, lo, (*Tensor).Lt), x)
	return Where(y.Ge(h), atBound(y, h, hi, (*Tensor).Gt), y)
}

// atBound is a clamp's value where x is at or past the bound b (past(x, b): x is outside): b,
// except that x = ±0 at a bound of 0 stays itself, read as x·0 so that no gradient passes.
func atBound(x, b *Tensor, bound float64, past func(x, b *Tensor) *Tensor) *Tensor {
	if bound != 0 || !x.DType().IsFloat() {
		return b
	}
	return Where(past(x, b), b, x.MulScalar(0))
}

// Relu6 is F.relu6: hardtanh(x, 0, 6).
func (t *Tensor) Relu6() *Tensor { return Hardtanh(t, 0, 6) }

// Hardsigmoid is F.hardsigmoid: relu6(x + 3) / 6 (0 for x ≤ -3, 1 for x ≥ 3), computed in
// PyTorch's order; the gradient is 1/6 strictly inside (-3, 3).
func (t *Tensor) Hardsigmoid() *Tensor { return Hardtanh(t.AddScalar(3), 0, 6).DivScalar(6) }

// Hardswish is F.hardswish: x · clamp(x + 3, 0, 6) / 6, in PyTorch's order. Its gradient is
// PyTorch's: 0 below -3, x/3 + 1/2 on [-3, 3), 1 from 3 on (the clamp passes the gradient at
// its lower bound, not at its upper one).
func (t *Tensor) Hardswish() *Tensor {
	h := t.AddScalar(3).ClampMin(0)
	six := h.scalar(6)
	return t.Mul(Where(h.Ge(six), six, h)).DivScalar(6)
}

// LeakyRelu is F.leaky_relu(x, slope): x where x > 0, else x·slope.
func LeakyRelu(x *Tensor, slope float64) *Tensor {
	return Where(x.GtScalar(0), x, x.MulScalar(slope))
}

// Elu is F.elu(x, alpha): x where x > 0, else alpha·(eˣ − 1). The exponential reads min(x, 0)
// (by a select), so a large x never makes an inf whose zero gradient would turn into NaN.
func Elu(x *Tensor, alpha float64) *Tensor {
	pos := x.GtScalar(0)
	neg := Where(pos, x.scalar(0), x)
	return Where(pos, x, neg.Exp().SubScalar(1).MulScalar(alpha))
}

// Softplus is F.softplus(x, beta, threshold): log(1 + e^(beta·x))/beta, and x itself where
// beta·x > threshold (PyTorch's defaults are beta 1, threshold 20). Below f64 the logarithm is
// taken in f64, which gives PyTorch's log1p to within the result dtype's rounding (log(1 + y)
// in f32 would lose everything below 2⁻²⁴); for y = e^(beta·x) < 2⁻³⁰ it is y itself, which is
// log1p(y) rounded to f64's precision. Like Elu, the exponential never sees the large
// arguments the select discards.
func Softplus(x *Tensor, beta, threshold float64) *Tensor {
	s := x.state()
	if !x.DType().IsFloat() {
		s.failf("softplus: needs a float tensor, %s", x.describe("input"))
	}
	bx := x
	if beta != 1 {
		bx = x.MulScalar(beta)
	}
	big := bx.GtScalar(threshold)
	return Where(big, x, log1pExp(Where(big, bx.scalar(0), bx), beta))
}

// log1pExp returns log(1 + eᶻ)/beta, computed in f64 and rounded once to z's dtype.
func log1pExp(z *Tensor, beta float64) *Tensor {
	dt := z.DType()
	z = z.Cast(ir.F64)
	y := z.Exp()
	r := Where(y.LtScalar(0x1p-30), y, y.AddScalar(1).Log())
	if beta != 1 {
		r = r.DivScalar(beta)
	}
	return r.Cast(dt)
}

// Mish is F.mish: x·tanh(softplus(x)), with softplus's default threshold 20 (above it
// tanh(x) is 1 in every float dtype).
func (t *Tensor) Mish() *Tensor { return t.Mul(Softplus(t, 1, 20).Tanh()) }

// Prelu is F.prelu(x, weight): x where x > 0, else weight·x, with weight[C] applying to channel
// dim 1 of x (or to every element when it has one element).
func Prelu(x, weight *Tensor) *Tensor {
	s := x.state()
	s.own(weight, "prelu")
	n := weight.Type().Shape.NumElements()
	if weight.Rank() != 1 || x.DType() != weight.DType() {
		s.failf("prelu: want a 1-D weight of the input's dtype: %s, %s", x.describe("input"), weight.describe("weight"))
	}
	var w *Tensor
	switch {
	case n == 1:
		w = weight.Reshape().broadcastTo(x.v.Type.Shape)
	case x.Rank() >= 2 && x.Dim(1) == n:
		w = s.broadcastChannels(weight, x)
	default:
		s.failf("prelu: the weight has %d elements and the input's channel dim 1 does not: %s", n, x.describe("input"))
	}
	return Where(x.GtScalar(0), x, x.Mul(w))
}
