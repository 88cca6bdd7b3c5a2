package nn

import "github.com/gcomp/gcomp/frontend"

// Module is a layer with one input and one output, the shape of most PyTorch modules' forward.
// Every module of this package with a single input implements it, so they compose in a
// Sequential; your own structs with a Forward method do too, in compiled Go and in a model file
// that gcomp runs alike: nn.NewSequential(NewBasicBlock(...), NewBasicBlock(...)).
type Module interface {
	Forward(x *frontend.Tensor) *frontend.Tensor
}

// Func adapts a function to a Module, like a lambda layer: nn.Func(func(x) { return x.Flatten(1, -1) }).
type Func func(x *frontend.Tensor) *frontend.Tensor

// Forward calls f(x).
func (f Func) Forward(x *frontend.Tensor) *frontend.Tensor { return f(x) }

// Sequential applies its modules in order (nn.Sequential). PyTorch names the parameters of the
// i-th module "i.weight" etc.; build the children in the Sequential's scope with those names:
//
//	net := nn.NewSequential(
//		nn.NewLinear(b, "0", 64, 32),
//		nn.ReLU{},
//		nn.NewLinear(b, "2", 32, 10),
//	)
type Sequential struct {
	Modules []Module
}

// NewSequential returns a Sequential of mods.
func NewSequential(mods ...Module) *Sequential { return &Sequential{Modules: mods} }

// Forward applies the modules in order.
func (m *Sequential) Forward(x *frontend.Tensor) *frontend.Tensor {
	for _, mod := range m.Modules {
		x = mod.Forward(x)
	}
	return x
}

// ReLU is nn.ReLU: max(x, 0).
type ReLU struct{}

// Forward returns x.Relu().
func (ReLU) Forward(x *frontend.Tensor) *frontend.Tensor { return x.Relu() }

// GELU is nn.GELU: the exact form x·Φ(x), or its tanh approximation when Approximate is "tanh".
type GELU struct {
	Approximate string // "" or "none" for the exact form, "tanh" for the approximation
}

// Forward applies GELU.
func (m GELU) Forward(x *frontend.Tensor) *frontend.Tensor {
	switch m.Approximate {
	case "", "none":
		return x.Gelu()
	case "tanh":
		return x.GeluTanh()
	}
	x.Builder().Fail(`gelu: approximate must be "none" or "tanh", have %q`, m.Approximate)
	return nil
}

// SiLU is nn.SiLU: x·sigmoid(x).
type SiLU struct{}

// Forward returns x.Silu().
func (SiLU) Forward(x *frontend.Tensor) *frontend.Tensor { return x.Silu() }

// Sigmoid is nn.Sigmoid.
type Sigmoid struct{}

// Forward returns x.Sigmoid().
func (Sigmoid) Forward(x *frontend.Tensor) *frontend.Tensor { return x.Sigmoid() }

// Tanh is nn.Tanh.
type Tanh struct{}

// Forward returns x.Tanh().
func (Tanh) Forward(x *frontend.Tensor) *frontend.Tensor { return x.Tanh() }

// Softmax is nn.Softmax(dim=Dim).
type Softmax struct{ Dim int }

// Forward returns x.Softmax(Dim).
func (m Softmax) Forward(x *frontend.Tensor) *frontend.Tensor { return x.Softmax(m.Dim) }

// LogSoftmax is nn.LogSoftmax(dim=Dim).
type LogSoftmax struct{ Dim int }

// Forward returns x.LogSoftmax(Dim).
func (m LogSoftmax) Forward(x *frontend.Tensor) *frontend.Tensor { return x.LogSoftmax(m.Dim) }

// Flatten is nn.Flatten: it merges dims StartDim..EndDim. The zero value flattens all dims but
// the first, like nn.Flatten().
type Flatten struct{ StartDim, EndDim int }

// Forward flattens x.
func (m Flatten) Forward(x *frontend.Tensor) *frontend.Tensor {
	if m == (Flatten{}) {
		m = Flatten{1, -1}
	}
	return x.Flatten(m.StartDim, m.EndDim)
}

// MaxPool2d is nn.MaxPool2d over [N,C,H,W]. A zero Stride means KernelSize, as in PyTorch.
type MaxPool2d struct {
	KernelSize, Stride, Padding int
}

// Forward pools x.
func (m MaxPool2d) Forward(x *frontend.Tensor) *frontend.Tensor {
	return frontend.MaxPool2d(x, pair(m.KernelSize), poolOptions(m.Stride, m.Padding, false))
}

// AvgPool2d is nn.AvgPool2d over [N,C,H,W]. A zero Stride means KernelSize; CountExcludePad is
// PyTorch's count_include_pad=False.
type AvgPool2d struct {
	KernelSize, Stride, Padding int
	CountExcludePad             bool
}

// Forward pools x.
func (m AvgPool2d) Forward(x *frontend.Tensor) *frontend.Tensor {
	return frontend.AvgPool2d(x, pair(m.KernelSize), poolOptions(m.Stride, m.Padding, m.CountExcludePad))
}

func pair(n int) [2]int { return [2]int{n, n} }

func poolOptions(stride, padding int, exclude bool) frontend.PoolOptions {
	o := frontend.PoolOptions{Padding: pair(padding), CountExcludePad: exclude}
	if stride != 0 {
		o.Stride = pair(stride)
	}
	return o
}
