// Package unet is a U-Net-style encoder/decoder for segmentation: two encoder stages (two 3×3
// convolutions with BatchNorm and ReLU, then 2×2 max pooling), a bottleneck, and two decoder
// stages that upsample by 2 (nn.Upsample, nearest), concatenate the encoder's features of the
// same resolution (the skip connection) and convolve again, then a 1×1 convolution to 2
// classes, on a batch of 2 RGB images of 32×32. It runs in eval mode.
package unet

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
)

// DoubleConv is (3×3 convolution, BatchNorm, ReLU) twice, as "0".."5" of a Sequential.
type DoubleConv struct {
	Conv1, Conv2 *nn.Conv2d
	BN1, BN2     *nn.BatchNorm
}

func newDoubleConv(b *frontend.Builder, name string, in, out int) *DoubleConv {
	s := b.Sub(name)
	o := nn.Conv2dOptions{Padding: 1, NoBias: true}
	return &DoubleConv{
		Conv1: nn.NewConv2d(s, "0", in, out, 3, o), BN1: nn.NewBatchNorm2d(s, "1", out),
		Conv2: nn.NewConv2d(s, "3", out, out, 3, o), BN2: nn.NewBatchNorm2d(s, "4", out),
	}
}

// Forward applies both stages.
func (m *DoubleConv) Forward(x *frontend.Tensor) *frontend.Tensor {
	x = m.BN1.Forward(m.Conv1.Forward(x)).Relu()
	return m.BN2.Forward(m.Conv2.Forward(x)).Relu()
}

// UNet holds the layers.
type UNet struct {
	Enc1, Enc2, Mid, Dec2, Dec1 *DoubleConv
	Up                          nn.Upsample
	Head                        *nn.Conv2d
	Pool                        nn.MaxPool2d
}

// NewUNet declares enc1.*, enc2.*, mid.*, dec2.*, dec1.* and head.*.
func NewUNet(b *frontend.Builder) *UNet {
	return &UNet{
		Enc1: newDoubleConv(b, "enc1", 3, 8),
		Enc2: newDoubleConv(b, "enc2", 8, 16),
		Mid:  newDoubleConv(b, "mid", 16, 32),
		Up:   nn.Upsample{ScaleFactor: [2]float64{2, 2}},
		Dec2: newDoubleConv(b, "dec2", 32+16, 16),
		Dec1: newDoubleConv(b, "dec1", 16+8, 8),
		Head: nn.NewConv2d(b, "head", 8, 2, 1),
		Pool: nn.MaxPool2d{KernelSize: 2},
	}
}

// Forward maps images [N,3,32,32] to per-pixel class scores [N,2,32,32].
func (m *UNet) Forward(x *frontend.Tensor) *frontend.Tensor {
	e1 := m.Enc1.Forward(x)
	e2 := m.Enc2.Forward(m.Pool.Forward(e1))
	mid := m.Mid.Forward(m.Pool.Forward(e2))
	d2 := m.Dec2.Forward(frontend.Cat(1, m.Up.Forward(mid), e2))
	d1 := m.Dec1.Forward(frontend.Cat(1, m.Up.Forward(d2), e1))
	return m.Head.Forward(d1)
}

// Model builds the graph: input x f32[2,3,32,32], output logits f32[2,2,32,32].
func Model(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, b.Batch(2), 3, 32, 32)
	b.Output("logits", NewUNet(b).Forward(x))
}
