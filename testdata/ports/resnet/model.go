// Package resnet is torchvision's resnet18 (torchvision/models/resnet.py) ported line by line, as
// a PyTorch user writes it: a BasicBlock type of the file's own with its Forward, the blocks of
// each stage in an nn.Sequential built by _make_layer, and the projection shortcut an
// nn.Sequential named downsample. Its parameters are torchvision's state_dict keys, so
// resnet18(num_classes=10)'s state_dict loads under --strict. It classifies a batch of 2 RGB
// images of 32×32 into 10 classes, in eval mode.
package resnet

import (
	"strconv"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
)

const expansion = 1 // BasicBlock.expansion

// conv3x3 is torchvision's conv3x3: a 3×3 convolution with padding, without bias.
func conv3x3(b *frontend.Builder, name string, inPlanes, outPlanes, stride int) *nn.Conv2d {
	return nn.NewConv2d(b, name, inPlanes, outPlanes, 3, nn.Conv2dOptions{Stride: stride, Padding: 1, NoBias: true})
}

// conv1x1 is torchvision's conv1x1.
func conv1x1(b *frontend.Builder, name string, inPlanes, outPlanes, stride int) *nn.Conv2d {
	return nn.NewConv2d(b, name, inPlanes, outPlanes, 1, nn.Conv2dOptions{Stride: stride, NoBias: true})
}

// BasicBlock is torchvision's BasicBlock.
type BasicBlock struct {
	Conv1      *nn.Conv2d
	BN1        *nn.BatchNorm
	Relu       nn.ReLU
	Conv2      *nn.Conv2d
	BN2        *nn.BatchNorm
	Downsample *nn.Sequential // nil when the shortcut is the identity
}

// NewBasicBlock declares the block under name; downsample builds the shortcut's modules in the
// block's "downsample" scope, or is nil.
func NewBasicBlock(b *frontend.Builder, name string, inplanes, planes, stride int, downsample func(*frontend.Builder) *nn.Sequential) *BasicBlock {
	s := b.Sub(name)
	m := &BasicBlock{
		Conv1: conv3x3(s, "conv1", inplanes, planes, stride),
		BN1:   nn.NewBatchNorm2d(s, "bn1", planes),
		Conv2: conv3x3(s, "conv2", planes, planes, 1),
		BN2:   nn.NewBatchNorm2d(s, "bn2", planes),
	}
	if downsample != nil {
		m.Downsample = downsample(s.Sub("downsample"))
	}
	return m
}

// Forward is BasicBlock.forward.
func (m *BasicBlock) Forward(x *frontend.Tensor) *frontend.Tensor {
	identity := x

	out := m.Conv1.Forward(x)
	out = m.BN1.Forward(out)
	out = m.Relu.Forward(out)

	out = m.Conv2.Forward(out)
	out = m.BN2.Forward(out)

	if m.Downsample != nil {
		identity = m.Downsample.Forward(x)
	}

	out = out.Add(identity)
	out = m.Relu.Forward(out)
	return out
}

// ResNet is torchvision's ResNet with BasicBlock.
type ResNet struct {
	inplanes int

	Conv1                          *nn.Conv2d
	BN1                            *nn.BatchNorm
	Relu                           nn.ReLU
	Maxpool                        nn.MaxPool2d
	Layer1, Layer2, Layer3, Layer4 *nn.Sequential
	Avgpool                        nn.AdaptiveAvgPool2d
	FC                             *nn.Linear
}

// NewResNet is ResNet.__init__(BasicBlock, layers, num_classes).
func NewResNet(b *frontend.Builder, layers [4]int, numClasses int) *ResNet {
	m := &ResNet{inplanes: 64}
	m.Conv1 = nn.NewConv2d(b, "conv1", 3, m.inplanes, 7, nn.Conv2dOptions{Stride: 2, Padding: 3, NoBias: true})
	m.BN1 = nn.NewBatchNorm2d(b, "bn1", m.inplanes)
	m.Maxpool = nn.MaxPool2d{KernelSize: 3, Stride: 2, Padding: 1}
	m.Layer1 = m.makeLayer(b, "layer1", 64, layers[0], 1)
	m.Layer2 = m.makeLayer(b, "layer2", 128, layers[1], 2)
	m.Layer3 = m.makeLayer(b, "layer3", 256, layers[2], 2)
	m.Layer4 = m.makeLayer(b, "layer4", 512, layers[3], 2)
	m.Avgpool = nn.AdaptiveAvgPool2d{OutputSize: [2]int{1}} // nn.AdaptiveAvgPool2d(1)
	m.FC = nn.NewLinear(b, "fc", 512*expansion, numClasses)
	return m
}

// makeLayer is ResNet._make_layer: a Sequential of blocks "0", "1", ..., the first with the
// stride and, where the shape changes, a projection shortcut.
func (m *ResNet) makeLayer(b *frontend.Builder, name string, planes, blocks, stride int) *nn.Sequential {
	s := b.Sub(name)
	var downsample func(*frontend.Builder) *nn.Sequential
	if stride != 1 || m.inplanes != planes*expansion {
		inplanes := m.inplanes
		downsample = func(d *frontend.Builder) *nn.Sequential {
			return nn.NewSequential(
				conv1x1(d, "0", inplanes, planes*expansion, stride),
				nn.NewBatchNorm2d(d, "1", planes*expansion),
			)
		}
	}
	layers := nn.NewSequential(NewBasicBlock(s, "0", m.inplanes, planes, stride, downsample))
	m.inplanes = planes * expansion
	for i := 1; i < blocks; i++ {
		layers.Modules = append(layers.Modules, NewBasicBlock(s, strconv.Itoa(i), m.inplanes, planes, 1, nil))
	}
	return layers
}

// Forward is ResNet._forward_impl.
func (m *ResNet) Forward(x *frontend.Tensor) *frontend.Tensor {
	x = m.Conv1.Forward(x)
	x = m.BN1.Forward(x)
	x = m.Relu.Forward(x)
	x = m.Maxpool.Forward(x)

	x = m.Layer1.Forward(x)
	x = m.Layer2.Forward(x)
	x = m.Layer3.Forward(x)
	x = m.Layer4.Forward(x)

	x = m.Avgpool.Forward(x)
	x = x.Flatten(1, -1)
	x = m.FC.Forward(x)
	return x
}

// Model builds resnet18(num_classes=10): input x f32[2,3,32,32], output logits f32[2,10].
func Model(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, b.Batch(2), 3, 32, 32)
	b.Output("logits", NewResNet(b, [4]int{2, 2, 2, 2}, 10).Forward(x))
}
