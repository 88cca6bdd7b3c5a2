// Package mobilenet is a MobileNetV2 inverted-residual block: a 1×1 expansion, a 3×3
// depthwise convolution (groups = channels) and a 1×1 projection, each followed by BatchNorm,
// the first two by ReLU6, with the residual connection, on a batch of 4 feature maps of
// 16×16×16. Its keys are torchvision's InvertedResidual's (conv.0.0 is the expansion's
// convolution, conv.0.1 its BatchNorm, ...). It runs in eval mode.
package mobilenet

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
)

// ConvBNReLU6 is torchvision's Conv2dNormActivation: "0" the convolution, "1" the BatchNorm,
// then ReLU6.
type ConvBNReLU6 struct {
	Conv *nn.Conv2d
	BN   *nn.BatchNorm
}

func newConvBNReLU6(b *frontend.Builder, name string, in, out, k, groups int) *ConvBNReLU6 {
	s := b.Sub(name)
	return &ConvBNReLU6{
		Conv: nn.NewConv2d(s, "0", in, out, k, nn.Conv2dOptions{Padding: (k - 1) / 2, Groups: groups, NoBias: true}),
		BN:   nn.NewBatchNorm2d(s, "1", out),
	}
}

// Forward applies convolution, BatchNorm and ReLU6.
func (m *ConvBNReLU6) Forward(x *frontend.Tensor) *frontend.Tensor {
	return nn.ReLU6{}.Forward(m.BN.Forward(m.Conv.Forward(x)))
}

// InvertedResidual is the block with stride 1 and equal in and out channels.
type InvertedResidual struct {
	Expand, Depthwise *ConvBNReLU6
	Project           *nn.Conv2d
	BN                *nn.BatchNorm
}

// NewInvertedResidual declares conv.0.*, conv.1.*, conv.2.* and conv.3.* under name.
func NewInvertedResidual(b *frontend.Builder, name string, ch, expand int) *InvertedResidual {
	s := b.Sub(name).Sub("conv")
	hidden := ch * expand
	return &InvertedResidual{
		Expand:    newConvBNReLU6(s, "0", ch, hidden, 1, 1),
		Depthwise: newConvBNReLU6(s, "1", hidden, hidden, 3, hidden),
		Project:   nn.NewConv2d(s, "2", hidden, ch, 1, nn.Conv2dOptions{NoBias: true}),
		BN:        nn.NewBatchNorm2d(s, "3", ch),
	}
}

// Forward returns x + project(depthwise(expand(x))).
func (m *InvertedResidual) Forward(x *frontend.Tensor) *frontend.Tensor {
	y := m.Depthwise.Forward(m.Expand.Forward(x))
	return x.Add(m.BN.Forward(m.Project.Forward(y)))
}

// Model builds the graph: input x f32[4,16,16,16], output y f32[4,16,16,16].
func Model(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, b.Batch(4), 16, 16, 16)
	b.Output("y", NewInvertedResidual(b, "block", 16, 4).Forward(x))
}
