package frontend

import (
	"slices"

	"github.com/gcomp/gcomp/ir"
)

func (t *Tensor) reduce(op, what string, dims []int, keep bool) *Tensor {
	s := t.state()
	axes := t.axes(what, dims)
	attrs := ir.Attrs{"axes": axes}
	if keep {
		attrs["keepdims"] = true
	}
	return s.op(op, attrs, t)
}

// Sum sums over dims (all dims if none are given) and drops them, like x.sum(dims).
func (t *Tensor) Sum(dims ...int) *Tensor { return t.reduce("reduce_sum", "sum", dims, false) }

// SumKeepDim sums over dims and keeps them with size 1, like x.sum(dims, keepdim=True).
func (t *Tensor) SumKeepDim(dims ...int) *Tensor { return t.reduce("reduce_sum", "sum", dims, true) }

// Mean averages over dims (all dims if none are given) and drops them.
func (t *Tensor) Mean(dims ...int) *Tensor { return t.mean(dims, false) }

// MeanKeepDim averages over dims and keeps them with size 1.
func (t *Tensor) MeanKeepDim(dims ...int) *Tensor { return t.mean(dims, true) }

func (t *Tensor) mean(dims []int, keep bool) *Tensor {
	if !t.DType().IsFloat() {
		t.s.failf("mean: needs a float tensor, %s (convert it with Cast)", t.describe("input"))
	}
	if t.symbolicAxes(t.axes("mean", dims)) {
		return t.symbolicMean(dims, keep) // symmean.go
	}
	n := 1
	for _, a := range t.axes("mean", dims) {
		n *= t.v.Type.Shape[a]
	}
	return t.reduce("reduce_sum", "mean", dims, keep).DivScalar(float64(n))
}

// Max returns the maximum over dims (all dims if none are given), dropping them. Unlike
// PyTorch's x.max(dim) it returns only the values, not the indices.
func (t *Tensor) Max(dims ...int) *Tensor { return t.reduce("reduce_max", "max", dims, false) }

// MaxKeepDim returns the maximum over dims, keeping them with size 1.
func (t *Tensor) MaxKeepDim(dims ...int) *Tensor { return t.reduce("reduce_max", "max", dims, true) }

// Min returns the minimum over dims (all dims if none are given), dropping them.
func (t *Tensor) Min(dims ...int) *Tensor { return t.reduce("reduce_min", "min", dims, false) }

// MinKeepDim returns the minimum over dims, keeping them with size 1.
func (t *Tensor) MinKeepDim(dims ...int) *Tensor { return t.reduce("reduce_min", "min", dims, true) }

// Prod multiplies over dims (all dims if none are given), dropping them.
func (t *Tensor) Prod(dims ...int) *Tensor { return t.reduce("reduce_prod", "prod", dims, false) }

// Softmax returns exp(x)/Σexp(x) along dim, computed stably by subtracting the maximum first.
func (t *Tensor) Softmax(dim int) *Tensor {
	dim = t.axis("softmax", dim)
	e := t.Sub(t.MaxKeepDim(dim)).Exp()
	return e.Div(e.SumKeepDim(dim))
}

// LogSoftmax returns log(Softmax(dim)) computed stably: x - max - log Σ exp(x - max).
func (t *Tensor) LogSoftmax(dim int) *Tensor {
	dim = t.axis("log_softmax", dim)
	z := t.Sub(t.MaxKeepDim(dim))
	return z.Sub(z.Exp().SumKeepDim(dim).Log())
}

// Matmul is torch.matmul: a matrix product over the last dim of t and the second-to-last of o
// (the only dim of a 1-D operand), with the leading batch dims broadcast. 1-D operands are
// treated as a row (t) or column (o) vector whose extra dim is dropped from the result.
func (t *Tensor) Matmul(o *Tensor) *Tensor {
	s := t.state()
	s.own(o, "matmul")
	ra, rb := t.Rank(), o.Rank()
	if ra == 0 || rb == 0 {
		s.failf("matmul: both operands need at least one dim: %s", describe2(t, o))
	}
	if t.v.Type.DType != o.v.Type.DType {
		s.failf("matmul: dtypes differ: %s (convert one with Cast)", describe2(t, o))
	}
	ka := t.v.Type.Shape[ra-1]
	kb := o.v.Type.Shape[max(rb-2, 0)]
	if ka != kb {
		s.failf("matmul: inner dimensions differ: %s", describe2(t, o))
	}
	switch {
	case rb <= 2 || ra == 1:
		// No batch dims to pair: contract t's last dim with o's inner dim. The result holds t's
		// other dims, then o's, as torch.matmul does for these cases.
		return dotGeneral(t, o, nil, nil, []int{ra - 1}, []int{max(rb-2, 0)})
	}
	// Batched: broadcast the batch dims (all but the last two; a 2-D t has none) to one shape.
	batchA := t.v.Type.Shape[:ra-2]
	batchB := o.v.Type.Shape[:rb-2]
	batch, ok := broadcastShapes(batchA, batchB)
	if !ok {
		s.failf("matmul: batch dimensions cannot be broadcast together: %s", describe2(t, o))
	}
	nb := len(batch)
	a := t.broadcastTo(append(slices.Clone(batch), t.v.Type.Shape[ra-2:]...))
	b := o.broadcastTo(append(slices.Clone(batch), o.v.Type.Shape[rb-2:]...))
	bd := make([]int, nb)
	for i := range bd {
		bd[i] = i
	}
	return dotGeneral(a, b, bd, bd, []int{nb + 1}, []int{nb})
}

// dotGeneral adds a dot_general node; empty dim lists are left out of the attributes.
func dotGeneral(a, b *Tensor, lb, rb, lc, rc []int) *Tensor {
	attrs := ir.Attrs{}
	for k, v := range map[string][]int{"lhs_batch": lb, "rhs_batch": rb, "lhs_contract": lc, "rhs_contract": rc} {
		if len(v) > 0 {
			attrs[k] = v
		}
	}
	return a.s.op("dot_general", attrs, a, b)
}
