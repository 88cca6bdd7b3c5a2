package frontend

import (
	"github.com/gcomp/gcomp/ir"
)

// This file holds the normalizations over channels of torch.nn.functional: batch_norm,
// group_norm and instance_norm, as composites (reductions and one elementwise tail).

// channel broadcasts p[C] along dim 1 of x's shape, or returns nil for a nil p.
func (t *Tensor) channel(what string, p *Tensor) *Tensor {
	if p == nil {
		return nil
	}
	s := t.state()
	s.own(p, what)
	if t.Rank() < 2 || !p.Type().Equal(ir.T(t.DType(), t.Dim(1))) {
		s.failf("%s: %s does not match the channels (dim 1) of %s", what, p.describe("parameter"), t.describe("input"))
	}
	return s.broadcastChannels(p, t)
}

// BatchNorm is F.batch_norm in eval mode (training=False) over x[N, C, ...]: with the running
// statistics mean[C] and var[C], y = x·α + β where α = weight/√(var + eps) and
// β = bias − mean·α, in PyTorch's CPU order. α and β depend on parameters only. weight and bias
// may be nil (affine=False).
func BatchNorm(x, mean, variance, weight, bias *Tensor, eps float64) *Tensor {
	s := x.state()
	if !x.DType().IsFloat() || x.Rank() < 2 {
		s.failf("batch_norm: want a float input [N, C, ...], %s", x.describe("input"))
	}
	c := x.Dim(1)
	for _, p := range []*Tensor{mean, variance, weight, bias} {
		if p != nil {
			s.own(p, "batch_norm")
			if !p.Type().Equal(ir.T(x.DType(), c)) {
				s.failf("batch_norm: %s, want %s for %s", p.describe("parameter"), ir.T(x.DType(), c), x.describe("input"))
			}
		}
	}
	if mean == nil || variance == nil {
		s.failf("batch_norm: eval mode needs the running mean and variance")
	}
	alpha := variance.AddScalar(eps).Rsqrt()
	if weight != nil {
		alpha = alpha.Mul(weight)
	}
	beta := mean.Mul(alpha).Neg()
	if bias != nil {
		beta = bias.Sub(mean.Mul(alpha))
	}
	return x.Mul(x.channel("batch_norm", alpha)).Add(x.channel("batch_norm", beta))
}

// normalize returns (x − mean)/√(var + eps) with the biased variance over dims (kept as size 1).
func (x *Tensor) normalize(dims []int, eps float64) *Tensor {
	xc := x.Sub(x.MeanKeepDim(dims...))
	return xc.Mul(xc.Mul(xc).MeanKeepDim(dims...).AddScalar(eps).Rsqrt())
}

// affine multiplies by weight[C] and adds bias[C] along dim 1; either may be nil.
func (x *Tensor) affine(what string, weight, bias *Tensor) *Tensor {
	if w := x.channel(what, weight); w != nil {
		x = x.Mul(w)
	}
	if b := x.channel(what, bias); b != nil {
		x = x.Add(b)
	}
	return x
}

// GroupNorm is F.group_norm over x[N, C, ...]: the channels split into groups consecutive
// groups, each normalized over its channels and every spatial position with the biased
// variance, then scaled by weight[C] and shifted by bias[C] (either may be nil).
func GroupNorm(x *Tensor, groups int, weight, bias *Tensor, eps float64) *Tensor {
	s := x.state()
	if !x.DType().IsFloat() || x.Rank() < 2 {
		s.failf("group_norm: want a float input [N, C, ...], %s", x.describe("input"))
	}
	if groups < 1 || x.Dim(1)%groups != 0 {
		s.failf("group_norm: %d groups do not divide the %d channels of %s", groups, x.Dim(1), x.describe("input"))
	}
	shape := x.Shape()
	y := x.Reshape(shape[0], groups, -1).normalize([]int{2}, eps).Reshape(shape...)
	return y.affine("group_norm", weight, bias)
}

// InstanceNorm is F.instance_norm without running statistics over x[N, C, ...]: each (n, c)
// normalized over its spatial positions with the biased variance, then scaled by weight[C] and
// shifted by bias[C] (either may be nil).
func InstanceNorm(x *Tensor, weight, bias *Tensor, eps float64) *Tensor {
	s := x.state()
	if !x.DType().IsFloat() || x.Rank() < 3 {
		s.failf("instance_norm: want a float input [N, C, spatial...], %s", x.describe("input"))
	}
	dims := make([]int, x.Rank()-2)
	for i := range dims {
		dims[i] = i + 2
	}
	return x.normalize(dims, eps).affine("instance_norm", weight, bias)
}

// BatchNormTrain is F.batch_norm in training mode over x[N, C, ...]: x normalized with the
// batch's statistics per channel (mean and biased variance over every dim but 1), scaled by
// weight and shifted by bias (either may be nil). It also returns the batch mean and the
// unbiased variance (n/(n−1) times the biased one, n the elements per channel at the run's
// sizes), which PyTorch folds into the running statistics with its momentum. n must be at least
// 2 (over a symbolic batch: at the smallest sizes in range).
func BatchNormTrain(x, weight, bias *Tensor, eps float64) (y, mean, unbiased *Tensor) {
	s := x.state()
	if !x.DType().IsFloat() || x.Rank() < 2 {
		s.failf("batch_norm: want a float input [N, C, ...], %s", x.describe("input"))
	}
	dims := []int{0}
	for d := 2; d < x.Rank(); d++ {
		dims = append(dims, d)
	}
	n := x.perChannel(dims)
	if n < 2 {
		s.failf("batch_norm: expected more than 1 value per channel when training, %s", x.describe("input"))
	}
	avg := func(t *Tensor) *Tensor { return t.MeanKeepDim(dims...) }
	var count *Tensor
	if x.symbolicAxes(dims) {
		// The run's count n, summed as a symbolic mean's (symmean.go), divides the sums and
		// makes the unbiased variance n/(n−1) times the biased one at run time: one count, so
		// the kernels computing the statistics fold it beside them.
		count = x.scalar(1).reduce("reduce_sum", "batch_norm", dims, true)
		avg = func(t *Tensor) *Tensor { return t.reduce("reduce_sum", "batch_norm", dims, true).Div(count) }
	}
	m := avg(x)
	xc := x.Sub(m)
	v := avg(xc.Mul(xc))
	y = xc.Mul(v.AddScalar(eps).Rsqrt()).affine("batch_norm", weight, bias)
	c := x.Dim(1)
	if count != nil {
		return y, m.Reshape(c), v.Mul(count.Div(count.AddScalar(-1))).Reshape(c)
	}
	return y, m.Reshape(c), v.Reshape(c).MulScalar(float64(n) / float64(n-1))
}

// perChannel is the smallest number of x's elements over dims at any sizes in the dims' ranges
// (their product when static): BatchNorm's count per channel, which must be at least 2 at every
// run for the unbiased variance, as PyTorch requires of each batch.
func (x *Tensor) perChannel(dims []int) int {
	n := 1
	for _, d := range dims {
		if lo, _, err := x.v.Type.Axis(d).Range(x.state().g.Ranges()); err == nil {
			n *= int(lo)
		} else {
			n *= x.Dim(d)
		}
	}
	return n
}
