// Package bncnn is a Fashion-MNIST classifier with BatchNorm and Dropout: examples/fashion/cnn's
// convolutions, each followed by BatchNorm (so without a bias of its own, which BatchNorm would
// cancel), and dropout before the last layer. In PyTorch:
//
//	conv1 = nn.Conv2d(1, 16, 3, padding=1, bias=False);  bn1 = nn.BatchNorm2d(16)  # 28×28, pooled to 14×14
//	conv2 = nn.Conv2d(16, 32, 3, padding=1, bias=False); bn2 = nn.BatchNorm2d(32)  # 14×14, pooled to 7×7
//	fc1, drop, fc2 = nn.Linear(32*7*7, 128), nn.Dropout(0.25), nn.Linear(128, 10)
//	x = pool(F.relu(bn1(conv1(x)))); x = pool(F.relu(bn2(conv2(x))))
//	return fc2(drop(F.relu(fc1(x.flatten(1)))))
//
// Under gcomp train the model runs in training mode (BatchNorm normalizes with the batch's
// statistics and updates its running ones; Dropout drops with a Philox mask); under build, run
// and check in eval mode (the running statistics; Dropout passes through).
//
// Training configuration: cross-entropy loss on the logits (added by gcomp train), Adam with
// learning rate 1e-3 annealed to 0 over the 5 epochs by a cosine (PyTorch's CosineAnnealingLR
// stepped every batch, T_max = 5·1875), batch 32, pixels in [0,1]; docs/perf.md has the test
// accuracy and time of each epoch on the reference device:
//
//	gcomp train examples/fashion/bncnn/model.go --data fashion-mnist --epochs 5 --batch 32 \
//	    --optimizer adam --lr 0.001 --lr-schedule cosine --device ref \
//	    --save bncnn.safetensors --log metrics.jsonl
package bncnn

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
)

// Batch is the number of images per step: 32 rather than 64, twice the steps per epoch for
// the same work on the reference device.
const Batch = 32

// C1 and C2 are the two convolutions' output channels.
const C1, C2 = 16, 32

// CNN holds the layers under their PyTorch names.
type CNN struct {
	Conv1, Conv2 *nn.Conv2d
	BN1, BN2     *nn.BatchNorm
	Pool         nn.MaxPool2d
	Drop         nn.Dropout
	FC1, FC2     *nn.Linear
}

// NewCNN declares the parameters and buffers conv1.*, bn1.*, conv2.*, bn2.*, fc1.* and fc2.*.
func NewCNN(b *frontend.Builder) *CNN {
	return &CNN{
		Conv1: nn.NewConv2d(b, "conv1", 1, C1, 3, nn.Conv2dOptions{Padding: 1, NoBias: true}),
		BN1:   nn.NewBatchNorm2d(b, "bn1", C1),
		Conv2: nn.NewConv2d(b, "conv2", C1, C2, 3, nn.Conv2dOptions{Padding: 1, NoBias: true}),
		BN2:   nn.NewBatchNorm2d(b, "bn2", C2),
		Pool:  nn.MaxPool2d{KernelSize: 2, Stride: 2},
		FC1:   nn.NewLinear(b, "fc1", C2*7*7, 128),
		Drop:  nn.Dropout{P: 0.25},
		FC2:   nn.NewLinear(b, "fc2", 128, 10),
	}
}

// Forward maps images [N,1,28,28] to class scores [N,10].
func (m *CNN) Forward(x *frontend.Tensor) *frontend.Tensor {
	return m.FC2.Forward(m.Hidden(x))
}

// Hidden is fc2's input [N,128]: fc1's activations after dropout.
func (m *CNN) Hidden(x *frontend.Tensor) *frontend.Tensor {
	x = m.Pool.Forward(m.BN1.Forward(m.Conv1.Forward(x)).Relu())
	x = m.Pool.Forward(m.BN2.Forward(m.Conv2.Forward(x)).Relu())
	x = m.FC1.Forward(x.View(-1, C2*7*7)).Relu()
	return m.Drop.Forward(x)
}

// Model builds the graph: input x f32[32,1,28,28] (pixels in [0,1]), output logits f32[32,10].
func Model(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, b.Batch(Batch), 1, 28, 28)
	b.Output("logits", NewCNN(b).Forward(x))
}
