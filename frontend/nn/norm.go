package nn

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// BatchNormOptions are the optional arguments of NewBatchNorm2d and NewBatchNorm1d; zero values
// mean PyTorch's defaults (eps 1e-5, momentum 0.1, affine, tracking running statistics).
type BatchNormOptions struct {
	Eps, Momentum float64
	NoAffine      bool // PyTorch's affine=False
}

// BatchNorm is nn.BatchNorm2d / nn.BatchNorm1d. In eval mode x is normalized per channel
// (dim 1) with the running statistics, y = (x − running_mean)/√(running_var + eps)·weight + bias;
// in training mode with the batch's, and the running statistics and num_batches_tracked are
// updated as PyTorch does (Builder.UpdateBuffer; a training step feeds them back).
// Its state_dict keys are PyTorch's, buffers included, so a saved state_dict loads unchanged.
type BatchNorm struct {
	NumFeatures       int
	Eps, Momentum     float64
	Weight, Bias      *frontend.Tensor // "weight" (ones) and "bias" (zeros) [C]; nil with NoAffine
	RunningMean       *frontend.Tensor // "running_mean" [C], zeros
	RunningVar        *frontend.Tensor // "running_var" [C], ones
	NumBatchesTracked *frontend.Tensor // "num_batches_tracked", an i64 scalar, 0
	rank              []int            // the input ranks accepted
	kind              string
}

// NewBatchNorm2d declares the state of nn.BatchNorm2d(numFeatures) in b's scope under name:
// name.weight, name.bias, name.running_mean, name.running_var, name.num_batches_tracked.
func NewBatchNorm2d(b *frontend.Builder, name string, numFeatures int, opts ...BatchNormOptions) *BatchNorm {
	return newBatchNorm(b, name, numFeatures, one(b, opts), "batch_norm2d", 4)
}

// NewBatchNorm1d declares the state of nn.BatchNorm1d(numFeatures), for [N, C] or [N, C, L].
func NewBatchNorm1d(b *frontend.Builder, name string, numFeatures int, opts ...BatchNormOptions) *BatchNorm {
	return newBatchNorm(b, name, numFeatures, one(b, opts), "batch_norm1d", 2, 3)
}

func newBatchNorm(b *frontend.Builder, name string, c int, o BatchNormOptions, kind string, rank ...int) *BatchNorm {
	m := &BatchNorm{NumFeatures: c, Eps: o.Eps, Momentum: o.Momentum, rank: rank, kind: kind}
	if m.Eps == 0 {
		m.Eps = 1e-5
	}
	if m.Momentum == 0 {
		m.Momentum = 0.1
	}
	if c < 1 || !(m.Eps > 0) || !(m.Momentum > 0 && m.Momentum <= 1) {
		b.Fail("%s %s: want positive num_features, eps and a momentum in (0, 1], have %d, %v, %v", kind, b.Prefix()+name, c, m.Eps, m.Momentum)
	}
	s := b.Sub(name)
	if !o.NoAffine {
		m.Weight = s.Param("weight", ir.T(ir.F32, c), frontend.Ones())
		m.Bias = s.Param("bias", ir.T(ir.F32, c), frontend.Zeros())
	}
	m.RunningMean = s.Param("running_mean", ir.T(ir.F32, c), frontend.Zeros())
	m.RunningVar = s.Param("running_var", ir.T(ir.F32, c), frontend.Ones())
	m.NumBatchesTracked = s.Param("num_batches_tracked", ir.T(ir.I64), frontend.Zeros())
	return m
}

// Forward normalizes x with the running statistics.
func (m *BatchNorm) Forward(x *frontend.Tensor) *frontend.Tensor {
	ok := false
	for _, r := range m.rank {
		ok = ok || x.Rank() == r
	}
	b := x.Builder()
	if !ok {
		b.Fail("%s: expected a %v-D input, have %s", m.kind, m.rank, x)
	}
	if !b.Training() {
		return frontend.BatchNorm(x, m.RunningMean, m.RunningVar, m.Weight, m.Bias, m.Eps)
	}
	// Training: the batch's statistics, and PyTorch's updates of the running ones:
	// r ← (1−momentum)·r + momentum·batch value (the variance unbiased), and one more batch.
	y, mean, variance := frontend.BatchNormTrain(x, m.Weight, m.Bias, m.Eps)
	ema := func(r, v *frontend.Tensor) *frontend.Tensor {
		return r.MulScalar(1 - m.Momentum).Add(v.MulScalar(m.Momentum))
	}
	b.UpdateBuffer(m.RunningMean, ema(m.RunningMean, mean))
	b.UpdateBuffer(m.RunningVar, ema(m.RunningVar, variance))
	b.UpdateBuffer(m.NumBatchesTracked, m.NumBatchesTracked.AddScalar(1))
	return y
}

// GroupNormOptions are the optional arguments of NewGroupNorm; zero values mean PyTorch's
// defaults (eps 1e-5, affine).
type GroupNormOptions struct {
	Eps      float64
	NoAffine bool
}

// GroupNorm is nn.GroupNorm(num_groups, num_channels).
type GroupNorm struct {
	NumGroups, NumChannels int
	Eps                    float64
	Weight, Bias           *frontend.Tensor // "weight" (ones), "bias" (zeros) [C]; nil with NoAffine
}

// NewGroupNorm declares the parameters of nn.GroupNorm(numGroups, numChannels) in b's scope.
func NewGroupNorm(b *frontend.Builder, name string, numGroups, numChannels int, opts ...GroupNormOptions) *GroupNorm {
	o := one(b, opts)
	if numGroups < 1 || numChannels%numGroups != 0 {
		b.Fail("group_norm %s: num_channels %d must be divisible by num_groups %d", b.Prefix()+name, numChannels, numGroups)
	}
	m := &GroupNorm{NumGroups: numGroups, NumChannels: numChannels, Eps: o.Eps}
	if m.Eps == 0 {
		m.Eps = 1e-5
	}
	if !o.NoAffine {
		s := b.Sub(name)
		m.Weight = s.Param("weight", ir.T(ir.F32, numChannels), frontend.Ones())
		m.Bias = s.Param("bias", ir.T(ir.F32, numChannels), frontend.Zeros())
	}
	return m
}

// Forward normalizes x[N, C, ...] per group.
func (m *GroupNorm) Forward(x *frontend.Tensor) *frontend.Tensor {
	return frontend.GroupNorm(x, m.NumGroups, m.Weight, m.Bias, m.Eps)
}

// InstanceNormOptions are the optional arguments of NewInstanceNorm2d; zero values mean
// PyTorch's defaults (eps 1e-5, momentum 0.1, affine=False, track_running_stats=False).
type InstanceNormOptions struct {
	Eps, Momentum     float64
	Affine            bool
	TrackRunningStats bool
}

// InstanceNorm2d is nn.InstanceNorm2d in eval mode: each (n, c) plane normalized over its
// positions, or with the running statistics when they are tracked.
type InstanceNorm2d struct {
	NumFeatures       int
	Eps               float64
	Weight, Bias      *frontend.Tensor // with Affine: "weight" (ones), "bias" (zeros) [C]
	RunningMean       *frontend.Tensor // with TrackRunningStats: "running_mean", "running_var",
	RunningVar        *frontend.Tensor // "num_batches_tracked" as in BatchNorm
	NumBatchesTracked *frontend.Tensor
}

// NewInstanceNorm2d declares the state of nn.InstanceNorm2d(numFeatures) in b's scope.
func NewInstanceNorm2d(b *frontend.Builder, name string, numFeatures int, opts ...InstanceNormOptions) *InstanceNorm2d {
	o := one(b, opts)
	m := &InstanceNorm2d{NumFeatures: numFeatures, Eps: o.Eps}
	if m.Eps == 0 {
		m.Eps = 1e-5
	}
	s := b.Sub(name)
	if o.Affine {
		m.Weight = s.Param("weight", ir.T(ir.F32, numFeatures), frontend.Ones())
		m.Bias = s.Param("bias", ir.T(ir.F32, numFeatures), frontend.Zeros())
	}
	if o.TrackRunningStats {
		m.RunningMean = s.Param("running_mean", ir.T(ir.F32, numFeatures), frontend.Zeros())
		m.RunningVar = s.Param("running_var", ir.T(ir.F32, numFeatures), frontend.Ones())
		m.NumBatchesTracked = s.Param("num_batches_tracked", ir.T(ir.I64), frontend.Zeros())
	}
	return m
}

// Forward normalizes x[N, C, H, W].
func (m *InstanceNorm2d) Forward(x *frontend.Tensor) *frontend.Tensor {
	if x.Rank() != 4 || x.Dim(1) != m.NumFeatures {
		x.Builder().Fail("instance_norm2d: expected [N, %d, H, W], have %s", m.NumFeatures, x)
	}
	if m.RunningMean != nil {
		return frontend.BatchNorm(x, m.RunningMean, m.RunningVar, m.Weight, m.Bias, m.Eps)
	}
	return frontend.InstanceNorm(x, m.Weight, m.Bias, m.Eps)
}
