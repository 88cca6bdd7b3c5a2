// Package linetest is a model whose calls span lines in the ways Go allows. The load tests build
// it compiled, where positions come from the Go stack, and through the interpreter, where they
// come from the loader's instrumentation, and want the same position for every value.
package linetest

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
)

// Net has its layers declared in one multi-line literal.
type Net struct {
	A, B *nn.Linear
	Seq  *nn.Sequential
}

type double struct{}

func (double) Forward(x *frontend.Tensor) *frontend.Tensor {
	return x.
		Add(x)
}

type layer interface {
	Forward(*frontend.Tensor) *frontend.Tensor
}

func NewNet(b *frontend.Builder) *Net {
	return &Net{
		A: nn.NewLinear(b, "a", 4, 4),
		B: nn.NewLinear(b,
			"b", 4, 4),
		Seq: nn.NewSequential(
			nn.ReLU{},
			nn.Func(func(x *frontend.Tensor) *frontend.Tensor {
				return x.Neg()
			}),
			nn.Func(double{}.Forward)),
	}
}

func Model(b *frontend.Builder) {
	x := b.Input("x",
		frontend.F32, 2, 4)
	n := NewNet(b)
	y := n.A.Forward(x).
		Relu().
		Add(
			n.B.Forward(x).Sigmoid())
	b.Output("y",
		y)
	z := frontend.Cat(1,
		x.Tanh(),
		y.Sin(),
	)
	if x.Rank() == 3 {
		z = z.Exp()
	} else if z.
		Rank() == 2 {
		z = z.Cos()
	}
	for i := 0; i < z.
		Dim(0)-1; i++ {
		z = z.Abs()
	}
	switch {
	case x.Rank() == 5:
		z = z.Log()
	case z.
		Rank() == 2:
		z = n.Seq.Forward(z)
	}
	parts := []*frontend.Tensor{x.Floor(), x.
		Ceil()}
	b.Output("z", frontend.Cat(0,
		parts...).Sum().Add(z.
		Sum()))
	var l layer = n.B
	var m nn.Module = n.A
	b.Output("w", l.Forward(
		m.
			Forward(x)))
}
