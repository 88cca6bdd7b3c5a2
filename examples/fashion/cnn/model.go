// Package cnn is the PyTorch CUDA tutorial's convolutional network (examples/cnn) adapted to
// Fashion-MNIST's 1×28×28 images: the first convolution takes one channel instead of three. In
// PyTorch:
//
//	conv1 = nn.Conv2d(1, 16, 3, stride=1, padding=1)   # 28×28, pooled to 14×14
//	conv2 = nn.Conv2d(16, 32, 3, stride=1, padding=1)  # 14×14, pooled to 7×7
//	fc1, fc2 = nn.Linear(32*7*7, 128), nn.Linear(128, 10)
//	x = pool(F.relu(conv1(x))); x = pool(F.relu(conv2(x))); x = x.view(-1, 32*7*7)
//	return fc2(F.relu(fc1(x)))
//
// Training configuration: cross-entropy loss on the logits (added by gcomp train), Adam with
// learning rate 1e-3 and PyTorch's other defaults, batch 64, 3 epochs, shuffled every epoch,
// pixels in [0,1]. On the reference device (initial weights and shuffle of seed 0) this command
// measured 86.83%, 87.66% and 88.63% test accuracy after epochs 1 to 3, in 10 minutes on 2
// cores (docs/perf.md):
//
//	gcomp train examples/fashion/cnn/model.go --data fashion-mnist --epochs 3 --batch 64 \
//	    --optimizer adam --lr 0.001 --device ref --save cnn.safetensors --log metrics.jsonl
package cnn

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
)

// Batch is the number of images per step.
const Batch = 64

// CNN holds the layers under the tutorial's names.
type CNN struct {
	Conv1, Conv2 *nn.Conv2d
	Pool1, Pool2 nn.MaxPool2d
	FC1, FC2     *nn.Linear
}

// NewCNN declares the parameters conv1.*, conv2.*, fc1.* and fc2.*.
func NewCNN(b *frontend.Builder) *CNN {
	return &CNN{
		Conv1: nn.NewConv2d(b, "conv1", 1, 16, 3, nn.Conv2dOptions{Stride: 1, Padding: 1}),
		Pool1: nn.MaxPool2d{KernelSize: 2, Stride: 2},
		Conv2: nn.NewConv2d(b, "conv2", 16, 32, 3, nn.Conv2dOptions{Stride: 1, Padding: 1}),
		Pool2: nn.MaxPool2d{KernelSize: 2, Stride: 2},
		FC1:   nn.NewLinear(b, "fc1", 32*7*7, 128),
		FC2:   nn.NewLinear(b, "fc2", 128, 10),
	}
}

// Forward maps images [N,1,28,28] to class scores [N,10].
func (m *CNN) Forward(x *frontend.Tensor) *frontend.Tensor {
	x = m.Pool1.Forward(m.Conv1.Forward(x).Relu())
	x = m.Pool2.Forward(m.Conv2.Forward(x).Relu())
	x = x.View(-1, 32*7*7)
	x = m.FC1.Forward(x).Relu()
	return m.FC2.Forward(x)
}

// Model builds the graph: input x f32[64,1,28,28] (pixels in [0,1]), output logits f32[64,10].
func Model(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, b.Batch(Batch), 1, 28, 28)
	b.Output("logits", NewCNN(b).Forward(x))
}
