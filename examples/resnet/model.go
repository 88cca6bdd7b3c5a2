// Package resnet is a ResNet-style image classifier: a stem (3×3 convolution, BatchNorm, ReLU)
// and two basic blocks (two 3×3 convolutions with BatchNorm and a residual connection; the
// second block halves the resolution and projects its shortcut with a strided 1×1 convolution
// and BatchNorm, as torchvision's ResNet does), then global average pooling and a linear layer,
// on a batch of 4 RGB images of 32×32. It runs in eval mode: BatchNorm uses its running
// statistics.
package resnet

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
)

// BasicBlock is torchvision's BasicBlock: conv1, bn1, relu, conv2, bn2, plus the shortcut
// (downsample.0 a 1×1 convolution, downsample.1 its BatchNorm, when the shape changes), relu.
type BasicBlock struct {
	Conv1, Conv2 *nn.Conv2d
	BN1, BN2     *nn.BatchNorm
	DownConv     *nn.Conv2d
	DownBN       *nn.BatchNorm
}

// NewBasicBlock declares the block's parameters under name, with torchvision's keys.
func NewBasicBlock(b *frontend.Builder, name string, in, out, stride int) *BasicBlock {
	s := b.Sub(name)
	m := &BasicBlock{
		Conv1: nn.NewConv2d(s, "conv1", in, out, 3, nn.Conv2dOptions{Stride: stride, Padding: 1, NoBias: true}),
		BN1:   nn.NewBatchNorm2d(s, "bn1", out),
		Conv2: nn.NewConv2d(s, "conv2", out, out, 3, nn.Conv2dOptions{Padding: 1, NoBias: true}),
		BN2:   nn.NewBatchNorm2d(s, "bn2", out),
	}
	if stride != 1 || in != out {
		d := s.Sub("downsample")
		m.DownConv = nn.NewConv2d(d, "0", in, out, 1, nn.Conv2dOptions{Stride: stride, NoBias: true})
		m.DownBN = nn.NewBatchNorm2d(d, "1", out)
	}
	return m
}

// Forward applies the block.
func (m *BasicBlock) Forward(x *frontend.Tensor) *frontend.Tensor {
	y := m.BN1.Forward(m.Conv1.Forward(x)).Relu()
	y = m.BN2.Forward(m.Conv2.Forward(y))
	if m.DownConv != nil {
		x = m.DownBN.Forward(m.DownConv.Forward(x))
	}
	return y.Add(x).Relu()
}

// ResNet holds the layers under torchvision-like names.
type ResNet struct {
	Conv1          *nn.Conv2d
	BN1            *nn.BatchNorm
	Layer1, Layer2 *BasicBlock
	Pool           nn.AdaptiveAvgPool2d
	FC             *nn.Linear
}

// NewResNet declares conv1.*, bn1.*, layer1.*, layer2.* and fc.*.
func NewResNet(b *frontend.Builder) *ResNet {
	return &ResNet{
		Conv1:  nn.NewConv2d(b, "conv1", 3, 16, 3, nn.Conv2dOptions{Padding: 1, NoBias: true}),
		BN1:    nn.NewBatchNorm2d(b, "bn1", 16),
		Layer1: NewBasicBlock(b, "layer1", 16, 16, 1),
		Layer2: NewBasicBlock(b, "layer2", 16, 32, 2),
		Pool:   nn.AdaptiveAvgPool2d{OutputSize: [2]int{1, 1}},
		FC:     nn.NewLinear(b, "fc", 32, 10),
	}
}

// Forward maps images [N,3,32,32] to class scores [N,10].
func (m *ResNet) Forward(x *frontend.Tensor) *frontend.Tensor {
	x = m.BN1.Forward(m.Conv1.Forward(x)).Relu()
	x = m.Layer2.Forward(m.Layer1.Forward(x))
	return m.FC.Forward(m.Pool.Forward(x).Flatten(1, -1))
}

// Model builds the graph: input x f32[4,3,32,32], output logits f32[4,10].
func Model(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, b.Batch(4), 3, 32, 32)
	b.Output("logits", NewResNet(b).Forward(x))
}
