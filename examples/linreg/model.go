// Package linreg is the LinearRegression model of the data-parallel tutorial: one linear layer,
// LinearRegression(2, 5), on a batch of 8.
package linreg

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
)

// LinearRegression is y = x·Wᵀ + b, with its layer under the name "linear" as in the tutorial.
type LinearRegression struct {
	Linear *nn.Linear
}

// NewLinearRegression declares the model's parameters, linear.weight and linear.bias.
func NewLinearRegression(b *frontend.Builder, inputSize, outputSize int) *LinearRegression {
	return &LinearRegression{Linear: nn.NewLinear(b, "linear", inputSize, outputSize)}
}

// Forward applies the model.
func (m *LinearRegression) Forward(x *frontend.Tensor) *frontend.Tensor {
	return m.Linear.Forward(x)
}

// Model builds the graph: input x f32[8,2], output y f32[8,5].
func Model(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, b.Batch(8), 2)
	model := NewLinearRegression(b, 2, 5)
	b.Output("y", model.Forward(x))
}
