// Package rnn is the tutorial's character-level Elman RNN: one step over a one-hot letter and
// the previous hidden state, giving log-probabilities of the 18 categories and the next hidden
// state.
package rnn

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
)

// The tutorial's sizes: 57 letters in, 128 hidden units, 18 categories out.
const (
	InputSize  = 57
	HiddenSize = 128
	OutputSize = 18
)

// RNN holds the two layers over cat(input, hidden).
type RNN struct {
	I2H, I2O *nn.Linear
	Softmax  nn.LogSoftmax
}

// NewRNN declares the parameters i2h.* and i2o.*.
func NewRNN(b *frontend.Builder, inputSize, hiddenSize, outputSize int) *RNN {
	return &RNN{
		I2H:     nn.NewLinear(b, "i2h", inputSize+hiddenSize, hiddenSize),
		I2O:     nn.NewLinear(b, "i2o", inputSize+hiddenSize, outputSize),
		Softmax: nn.LogSoftmax{Dim: 1},
	}
}

// Forward runs one step and returns the output and the next hidden state.
func (m *RNN) Forward(input, hidden *frontend.Tensor) (output, next *frontend.Tensor) {
	combined := frontend.Cat(1, input, hidden)
	next = m.I2H.Forward(combined)
	output = m.Softmax.Forward(m.I2O.Forward(combined))
	return output, next
}

// Model builds the graph: inputs input f32[1,57] and hidden f32[1,128], outputs output
// f32[1,18] and hidden_next f32[1,128].
func Model(b *frontend.Builder) {
	input := b.Input("input", frontend.F32, b.Batch(1), InputSize)
	hidden := b.Input("hidden", frontend.F32, b.Batch(1), HiddenSize)
	output, next := NewRNN(b, InputSize, HiddenSize, OutputSize).Forward(input, hidden)
	b.Output("output", output)
	b.Output("hidden_next", next)
}
