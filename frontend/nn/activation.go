package nn

import (
	"math"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// The activation modules of torch.nn. As everywhere in this package, a zero field means
// PyTorch's default: Hardtanh{} is nn.Hardtanh() (min_val -1, max_val 1), LeakyReLU{} has
// negative_slope 0.01, ELU{} alpha 1, Softplus{} beta 1 and threshold 20.

// ReLU6 is nn.ReLU6: min(max(x, 0), 6).
type ReLU6 struct{}

// Forward returns x.Relu6().
func (ReLU6) Forward(x *frontend.Tensor) *frontend.Tensor { return x.Relu6() }

// Hardtanh is nn.Hardtanh(min_val, max_val). Both zero means PyTorch's defaults -1 and 1.
type Hardtanh struct{ MinVal, MaxVal float64 }

// Forward clamps x to [MinVal, MaxVal].
func (m Hardtanh) Forward(x *frontend.Tensor) *frontend.Tensor {
	if m == (Hardtanh{}) {
		m = Hardtanh{-1, 1}
	}
	if !(m.MinVal <= m.MaxVal) {
		x.Builder().Fail("hardtanh: max_val %v must be at least min_val %v", m.MaxVal, m.MinVal)
	}
	return frontend.Hardtanh(x, m.MinVal, m.MaxVal)
}

// Hardswish is nn.Hardswish: x·relu6(x+3)/6.
type Hardswish struct{}

// Forward returns x.Hardswish().
func (Hardswish) Forward(x *frontend.Tensor) *frontend.Tensor { return x.Hardswish() }

// Hardsigmoid is nn.Hardsigmoid: relu6(x+3)/6.
type Hardsigmoid struct{}

// Forward returns x.Hardsigmoid().
func (Hardsigmoid) Forward(x *frontend.Tensor) *frontend.Tensor { return x.Hardsigmoid() }

// LeakyReLU is nn.LeakyReLU(negative_slope); zero means PyTorch's default 0.01.
type LeakyReLU struct{ NegativeSlope float64 }

// Forward returns x where x > 0, else NegativeSlope·x.
func (m LeakyReLU) Forward(x *frontend.Tensor) *frontend.Tensor {
	s := m.NegativeSlope
	if s == 0 {
		s = 0.01
	}
	return frontend.LeakyRelu(x, s)
}

// ELU is nn.ELU(alpha); zero means PyTorch's default 1.
type ELU struct{ Alpha float64 }

// Forward returns x where x > 0, else Alpha·(eˣ − 1).
func (m ELU) Forward(x *frontend.Tensor) *frontend.Tensor {
	a := m.Alpha
	if a == 0 {
		a = 1
	}
	return frontend.Elu(x, a)
}

// Softplus is nn.Softplus(beta, threshold); zeros mean PyTorch's defaults 1 and 20.
type Softplus struct{ Beta, Threshold float64 }

// Forward returns log(1 + e^(Beta·x))/Beta, or x where Beta·x > Threshold.
func (m Softplus) Forward(x *frontend.Tensor) *frontend.Tensor {
	beta, th := m.Beta, m.Threshold
	if beta == 0 {
		beta = 1
	}
	if th == 0 {
		th = 20
	}
	if math.IsNaN(beta) || math.IsInf(beta, 0) || math.IsNaN(th) {
		x.Builder().Fail("softplus: beta %v and threshold %v must be numbers", beta, th)
	}
	return frontend.Softplus(x, beta, th)
}

// Mish is nn.Mish: x·tanh(softplus(x)).
type Mish struct{}

// Forward returns x.Mish().
func (Mish) Forward(x *frontend.Tensor) *frontend.Tensor { return x.Mish() }

// PReLUOptions are the optional arguments of NewPReLU; zeros mean PyTorch's defaults
// (num_parameters 1, init 0.25).
type PReLUOptions struct {
	NumParameters int
	Init          float64
}

// PReLU is nn.PReLU: x where x > 0, else Weight·x, with one slope per channel (dim 1) or one
// for all.
type PReLU struct {
	Weight *frontend.Tensor // "weight" [NumParameters], filled with Init
}

// NewPReLU declares the parameter of nn.PReLU(num_parameters, init) in b's scope: "name.weight".
func NewPReLU(b *frontend.Builder, name string, opts ...PReLUOptions) *PReLU {
	o := one(b, opts)
	n, init := max(o.NumParameters, 1), o.Init
	if init == 0 {
		init = 0.25
	}
	return &PReLU{Weight: b.Sub(name).Param("weight", ir.T(ir.F32, n), frontend.Constant(init))}
}

// Forward applies the layer.
func (m *PReLU) Forward(x *frontend.Tensor) *frontend.Tensor { return frontend.Prelu(x, m.Weight) }

// Identity is nn.Identity: x unchanged.
type Identity struct{}

// Forward returns x.
func (Identity) Forward(x *frontend.Tensor) *frontend.Tensor { return x }

// Dropout is nn.Dropout(p). In eval mode it passes x through unchanged (PyTorch's
// model.eval()); in training mode (a graph built WithTraining, as `gcomp train` builds it) it
// zeroes each element with probability P and scales the others by 1/(1−P), with a mask from the
// graph's random key and a stream of its own (frontend.DropoutTrain). P must lie in [0, 1].
type Dropout struct{ P float64 }

// Forward applies dropout.
func (m Dropout) Forward(x *frontend.Tensor) *frontend.Tensor {
	b := x.Builder()
	if !(m.P >= 0 && m.P <= 1) {
		b.Fail("dropout probability has to be between 0 and 1, but got %v", m.P)
	}
	if !b.Training() || m.P == 0 {
		return x
	}
	return frontend.DropoutTrain(x, m.P, b.RandomKey(), b.NextStream())
}
