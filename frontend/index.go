package frontend

import (
	"math"

	"github.com/gcomp/gcomp/ir"
)

// This file holds the reductions that return positions (argmax, argmin, topk) and cumsum, as
// composites. argmax is a row maximum, a comparison, and a row minimum over the positions that
// hit (taken in i32, whose identity is exact, and widened to i64 as PyTorch returns).

// Argmax is torch.argmax(x, dim, keepdim): the i64 position of the first maximum along dim.
// NaN counts as larger than every number, as in PyTorch: a row with NaN gives its first NaN.
func (t *Tensor) Argmax(dim int, keepdim bool) *Tensor {
	return t.argExtreme("argmax", dim, keepdim, true)
}

// Argmin is torch.argmin(x, dim, keepdim): the i64 position of the first minimum along dim;
// NaN counts as smaller than every number (a row with NaN gives its first NaN).
func (t *Tensor) Argmin(dim int, keepdim bool) *Tensor {
	return t.argExtreme("argmin", dim, keepdim, false)
}

func (t *Tensor) argExtreme(what string, dim int, keepdim, largest bool) *Tensor {
	s := t.state()
	if t.DType() == ir.Bool {
		s.failf("%s: needs a numeric tensor, %s", what, t.describe("input"))
	}
	d := t.axis(what, dim)
	idx := t.firstHit(d, t.extremeHit(d, nil, largest, true))
	if !keepdim {
		idx = idx.Squeeze(d)
	}
	return idx.Cast(ir.I64)
}

// extremeHit is the bool mask of the positions along d that hold the row's maximum (minimum
// unless largest) among the positions not taken (taken may be nil). With nanWins a row's NaNs
// are its extreme; without, a NaN counts as +inf (topk's smallest take NaNs last).
func (t *Tensor) extremeHit(d int, taken *Tensor, largest, nanWins bool) *Tensor {
	x := t
	isFloat := t.DType().IsFloat()
	if isFloat && !nanWins {
		t = Where(t.Ne(t), t.scalar(math.Inf(1)), t)
		x = t
	}
	if taken != nil {
		fill := math.Inf(-1)
		if !largest {
			fill = math.Inf(1)
		}
		if !t.DType().IsFloat() {
			fill = intBound(t.DType(), !largest)
		}
		x = Where(taken, t.scalar(fill), t)
	}
	var m *Tensor
	if largest {
		m = x.MaxKeepDim(d)
	} else {
		m = x.MinKeepDim(d)
	}
	hit := t.Eq(m)
	if isFloat && nanWins {
		hit = hit.Or(t.Ne(t)) // where the row has a NaN, m is NaN and only NaNs hit
	}
	if taken != nil {
		hit = hit.And(taken.Not())
	}
	return hit
}

// firstHit returns the first position along d where hit is true, as i32 with d kept as size 1.
func (t *Tensor) firstHit(d int, hit *Tensor) *Tensor {
	n := t.Dim(d)
	b := &Builder{st: t.s}
	pos := b.Iota(ir.I32, d, t.Shape()...)
	return Where(hit, pos, pos.scalar(float64(n))).MinKeepDim(d)
}

// intBound is the smallest (or, with upper, the largest) value of an integer dtype.
func intBound(dt ir.DType, upper bool) float64 {
	var lo, hi float64
	switch dt {
	case ir.U8:
		lo, hi = 0, 255
	case ir.I8:
		lo, hi = math.MinInt8, math.MaxInt8
	case ir.I32:
		lo, hi = math.MinInt32, math.MaxInt32
	default: // i64: the float64 values that are exactly in range
		lo, hi = math.MinInt64, math.MaxInt64-1023
	}
	if upper {
		return hi
	}
	return lo
}

// Topk is torch.topk(x, k, dim, largest, sorted=True): the k largest (smallest unless largest)
// elements along dim in order and their i64 positions. Equal values come in position order; NaN
// counts as larger than every number, as in PyTorch. It takes k rounds of argmax, so it suits a
// small k.
func (t *Tensor) Topk(k, dim int, largest bool) (values, indices *Tensor) {
	s := t.state()
	d := t.axis("topk", dim)
	if t.DType() == ir.Bool || k < 1 || k > t.Dim(d) {
		s.failf("topk: k %d must lie in [1, %d] for a numeric %s", k, t.Dim(d), named(t, "input"))
	}
	b := &Builder{st: s}
	pos := b.Iota(ir.I32, d, t.Shape()...)
	var taken *Tensor
	vals, idxs := make([]*Tensor, k), make([]*Tensor, k)
	for r := range k {
		i := t.firstHit(d, t.extremeHit(d, taken, largest, largest))
		one := pos.Eq(i.broadcastTo(pos.v.Type.Shape))
		// The value at the chosen position: the one element a row maximum over it sees.
		fill := math.Inf(-1)
		if !t.DType().IsFloat() {
			fill = intBound(t.DType(), false)
		}
		vals[r] = Where(one, t, t.scalar(fill)).MaxKeepDim(d)
		idxs[r] = i
		if taken == nil {
			taken = one
		} else {
			taken = taken.Or(one)
		}
	}
	return Cat(d, vals...), Cat(d, idxs...).Cast(ir.I64)
}

// Cumsum is torch.cumsum(x, dim): y[..., j, ...] = Σ_{i ≤ j} x[..., i, ...], as ⌈log₂ n⌉ rounds of
// shifted additions (Hillis–Steele), so there is no product with zeros (an inf stays an inf
// until the sum meets a -inf). Floats add in a tree order, not PyTorch's sequential one.
func (t *Tensor) Cumsum(dim int) *Tensor {
	s := t.state()
	if t.DType() == ir.Bool {
		s.failf("cumsum: needs a numeric tensor, %s", t.describe("input"))
	}
	d := t.axis("cumsum", dim)
	n := t.Dim(d)
	y := t
	for sh := 1; sh < n; sh *= 2 {
		lo, hi := make([]int, t.Rank()), make([]int, t.Rank())
		lo[d] = sh
		y = y.Add(y.narrow(d, 0, n-sh).Pad(lo, hi, 0))
	}
	return y
}
