package nn

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// Conv1dOptions are the optional arguments of NewConv1d; zero values mean PyTorch's defaults
// (stride 1, padding 0, dilation 1, groups 1, with bias). Same is padding="same".
type Conv1dOptions struct {
	Stride, Padding, Dilation, Groups int
	NoBias, Same                      bool
}

// Conv1d is nn.Conv1d over x[N, In, L].
type Conv1d struct {
	In, Out, KernelSize int
	Options             Conv1dOptions
	Weight              *frontend.Tensor // "weight" [Out, In/Groups, K], U(±1/√fan_in), fan_in = In/Groups·K
	Bias                *frontend.Tensor // "bias" [Out]; nil with NoBias
}

// NewConv1d declares the parameters of nn.Conv1d(in, out, kernelSize, ...) in b's scope.
func NewConv1d(b *frontend.Builder, name string, in, out, kernelSize int, opts ...Conv1dOptions) *Conv1d {
	o := one(b, opts)
	g := max(o.Groups, 1)
	if in%g != 0 || out%g != 0 || kernelSize < 1 {
		b.Fail("conv1d %s: groups %d must divide in channels %d and out channels %d; kernel size %d", b.Prefix()+name, g, in, out, kernelSize)
	}
	s := b.Sub(name)
	fanIn := in / g * kernelSize
	m := &Conv1d{In: in, Out: out, KernelSize: kernelSize, Options: o}
	m.Weight = s.Param("weight", ir.T(ir.F32, out, in/g, kernelSize), frontend.DefaultUniform(fanIn))
	if !o.NoBias {
		m.Bias = s.Param("bias", ir.T(ir.F32, out), frontend.DefaultUniform(fanIn))
	}
	return m
}

// Forward applies the convolution.
func (m *Conv1d) Forward(x *frontend.Tensor) *frontend.Tensor {
	o := m.Options
	return frontend.Conv1d(x, m.Weight, m.Bias, frontend.Conv1dOptions{Stride: o.Stride, Padding: o.Padding, Dilation: o.Dilation, Groups: o.Groups, Same: o.Same})
}

// ConvTranspose2dOptions are the optional arguments of NewConvTranspose2d; zero values mean
// PyTorch's defaults. The pairs are [height, width]; a non-zero pair replaces the int.
type ConvTranspose2dOptions struct {
	Stride, Padding, OutputPadding, Dilation, Groups int
	StrideHW, PaddingHW, OutputPaddingHW, DilationHW [2]int
	KernelHW                                         [2]int // replaces kernelSize, which is then 0
	NoBias                                           bool
}

// ConvTranspose2d is nn.ConvTranspose2d over x[N, In, H, W].
type ConvTranspose2d struct {
	In, Out int
	Options frontend.ConvTranspose2dOptions
	Weight  *frontend.Tensor // "weight" [In, Out/Groups, KH, KW], U(±1/√fan_in), fan_in = Out/Groups·KH·KW (PyTorch's)
	Bias    *frontend.Tensor // "bias" [Out]; nil with NoBias
}

// NewConvTranspose2d declares the parameters of nn.ConvTranspose2d(in, out, kernelSize, ...)
// in b's scope.
func NewConvTranspose2d(b *frontend.Builder, name string, in, out, kernelSize int, opts ...ConvTranspose2dOptions) *ConvTranspose2d {
	o := one(b, opts)
	g := max(o.Groups, 1)
	k := hw(o.KernelHW, kernelSize, 0)
	if in%g != 0 || out%g != 0 || k[0] < 1 || k[1] < 1 || o.KernelHW != [2]int{} && kernelSize != 0 {
		b.Fail("conv_transpose2d %s: groups %d must divide in channels %d and out channels %d; kernel %d or %v", b.Prefix()+name, g, in, out, kernelSize, o.KernelHW)
	}
	s := b.Sub(name)
	// PyTorch computes fan_in from the weight's dim 1 (out/groups) and the kernel.
	fanIn := out / g * k[0] * k[1]
	m := &ConvTranspose2d{In: in, Out: out, Options: frontend.ConvTranspose2dOptions{
		Stride: hw(o.StrideHW, o.Stride, 1), Padding: hw(o.PaddingHW, o.Padding, 0),
		OutputPadding: hw(o.OutputPaddingHW, o.OutputPadding, 0), Dilation: hw(o.DilationHW, o.Dilation, 1), Groups: g,
	}}
	m.Weight = s.Param("weight", ir.T(ir.F32, in, out/g, k[0], k[1]), frontend.DefaultUniform(fanIn))
	if !o.NoBias {
		m.Bias = s.Param("bias", ir.T(ir.F32, out), frontend.DefaultUniform(fanIn))
	}
	return m
}

// Forward applies the transposed convolution.
func (m *ConvTranspose2d) Forward(x *frontend.Tensor) *frontend.Tensor {
	return frontend.ConvTranspose2d(x, m.Weight, m.Bias, m.Options)
}

// AdaptiveAvgPool2d is nn.AdaptiveAvgPool2d(output_size) over [N, C, H, W]; OutputSize [OH, OW],
// or [2]int{N} for PyTorch's single number N, a square N×N (see square).
type AdaptiveAvgPool2d struct{ OutputSize [2]int }

// Forward pools x.
func (m AdaptiveAvgPool2d) Forward(x *frontend.Tensor) *frontend.Tensor {
	return frontend.AdaptiveAvgPool2d(x, square(m.OutputSize))
}

// AdaptiveMaxPool2d is nn.AdaptiveMaxPool2d(output_size) (values, return_indices=False);
// [2]int{N} is a square N×N.
type AdaptiveMaxPool2d struct{ OutputSize [2]int }

// Forward pools x.
func (m AdaptiveMaxPool2d) Forward(x *frontend.Tensor) *frontend.Tensor {
	return frontend.AdaptiveMaxPool2d(x, square(m.OutputSize))
}

// square reads a pair written with one number, [2]int{N} (that is {N, 0}), as {N, N}: PyTorch's
// output_size=N, size=N and scale_factor=N. A second element of 0 is never valid on its own
// (sizes and scale factors must be positive), so the rule changes no pair that worked before;
// {0, 0} stays unset.
func square[T int | float64](p [2]T) [2]T {
	if p[1] == 0 && p[0] != 0 {
		p[1] = p[0]
	}
	return p
}

// Upsample is nn.Upsample(size or scale_factor, mode, align_corners) over [N, C, H, W]: Mode
// "nearest" (the default) or "bilinear". Size [2]int{N} and ScaleFactor [2]float64{F} are
// square: N×N, F in both dims.
type Upsample struct {
	Size         [2]int
	ScaleFactor  [2]float64
	Mode         string
	AlignCorners bool
}

// Forward resamples x.
func (m Upsample) Forward(x *frontend.Tensor) *frontend.Tensor {
	return frontend.Interpolate(x, frontend.InterpolateOptions{Size: square(m.Size), ScaleFactor: square(m.ScaleFactor), Mode: m.Mode, AlignCorners: m.AlignCorners})
}
