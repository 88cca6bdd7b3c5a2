// Package cnn is the tutorial's image classifier: two convolution, ReLU and max-pooling stages
// and two linear layers, on a batch of 64 RGB images of 28×28.
package cnn

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
)

// CNN holds the layers under the tutorial's names.
type CNN struct {
	Conv1, Conv2 *nn.Conv2d
	Pool1, Pool2 nn.MaxPool2d
	FC1, FC2     *nn.Linear
}

// NewCNN declares the parameters conv1.*, conv2.*, fc1.* and fc2.*.
func NewCNN(b *frontend.Builder) *CNN {
	return &CNN{
		Conv1: nn.NewConv2d(b, "conv1", 3, 16, 3, nn.Conv2dOptions{Stride: 1, Padding: 1}),
		Pool1: nn.MaxPool2d{KernelSize: 2, Stride: 2},
		Conv2: nn.NewConv2d(b, "conv2", 16, 32, 3, nn.Conv2dOptions{Stride: 1, Padding: 1}),
		Pool2: nn.MaxPool2d{KernelSize: 2, Stride: 2},
		FC1:   nn.NewLinear(b, "fc1", 32*7*7, 128),
		FC2:   nn.NewLinear(b, "fc2", 128, 10),
	}
}

// Forward maps images [N,3,28,28] to class scores [N,10].
func (m *CNN) Forward(x *frontend.Tensor) *frontend.Tensor {
	x = m.Pool1.Forward(m.Conv1.Forward(x).Relu())
	x = m.Pool2.Forward(m.Conv2.Forward(x).Relu())
	x = x.View(-1, 32*7*7)
	x = m.FC1.Forward(x).Relu()
	return m.FC2.Forward(x)
}

// Model builds the graph: input x f32[64,3,28,28], output logits f32[64,10].
func Model(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, b.Batch(64), 3, 28, 28)
	b.Output("logits", NewCNN(b).Forward(x))
}
