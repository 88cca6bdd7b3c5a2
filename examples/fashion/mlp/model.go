// Package mlp is a multilayer perceptron for Fashion-MNIST: the 28×28 images flattened to 784
// values, one hidden layer of 256 ReLU units, 10 class scores. In PyTorch:
//
//	nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
//
// with the parameters named fc1.* and fc2.* here.
//
// Training configuration: cross-entropy loss on the logits (gcomp train adds it), Adam with
// learning rate 1e-3 and PyTorch's other defaults, batch 64, 3 epochs, the training set shuffled
// every epoch, pixels scaled to [0,1]. On the reference device (initial weights and shuffle of
// seed 0) this command measured 84.6%, 85.7% and 86.4% test accuracy after epochs 1 to 3, in 93
// seconds on 2 cores (docs/perf.md):
//
//	gcomp train examples/fashion/mlp/model.go --data fashion-mnist --epochs 3 --batch 64 \
//	    --optimizer adam --lr 0.001 --device ref --save mlp.safetensors --log metrics.jsonl
package mlp

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
)

// Batch is the number of images per step.
const Batch = 64

// MLP holds the layers under the names of the PyTorch module above.
type MLP struct {
	FC1, FC2 *nn.Linear
}

// NewMLP declares the parameters fc1.weight [256,784], fc1.bias, fc2.weight [10,256], fc2.bias.
func NewMLP(b *frontend.Builder) *MLP {
	return &MLP{FC1: nn.NewLinear(b, "fc1", 28*28, 256), FC2: nn.NewLinear(b, "fc2", 256, 10)}
}

// Forward maps images [N,1,28,28] to class scores [N,10].
func (m *MLP) Forward(x *frontend.Tensor) *frontend.Tensor {
	x = nn.Flatten{}.Forward(x)
	return m.FC2.Forward(m.FC1.Forward(x).Relu())
}

// Model builds the graph: input x f32[64,1,28,28] (pixels in [0,1]), output logits f32[64,10].
func Model(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, b.Batch(Batch), 1, 28, 28)
	b.Output("logits", NewMLP(b).Forward(x))
}
