package nn

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// LinearOptions are the optional arguments of NewLinear.
type LinearOptions struct {
	NoBias bool // PyTorch's bias=False
}

// Linear is nn.Linear: y = x·Weightᵀ + Bias for x[..., In].
type Linear struct {
	In, Out int
	Weight  *frontend.Tensor // "weight" [Out, In], U(±1/√In)
	Bias    *frontend.Tensor // "bias" [Out], U(±1/√In); nil with NoBias
}

// NewLinear declares the parameters of nn.Linear(in, out) in b's scope under name:
// "name.weight" and "name.bias".
func NewLinear(b *frontend.Builder, name string, in, out int, opts ...LinearOptions) *Linear {
	o := one(b, opts)
	s := b.Sub(name)
	m := &Linear{In: in, Out: out}
	m.Weight = s.Param("weight", ir.T(ir.F32, out, in), frontend.DefaultUniform(in))
	if !o.NoBias {
		m.Bias = s.Param("bias", ir.T(ir.F32, out), frontend.DefaultUniform(in))
	}
	return m
}

// Forward applies the layer.
func (m *Linear) Forward(x *frontend.Tensor) *frontend.Tensor {
	return frontend.Linear(x, m.Weight, m.Bias)
}

// Conv2dOptions are the optional arguments of NewConv2d; zero values mean PyTorch's defaults
// (stride 1, padding 0, dilation 1, groups 1, with bias).
type Conv2dOptions struct {
	Stride, Padding, Dilation, Groups int
	NoBias                            bool
	// Non-square kernels, strides, paddings and dilations as PyTorch's tuples [height, width]:
	// a non-zero pair replaces the int above (KernelHW replaces NewConv2d's kernelSize, which
	// is then 0).
	KernelHW, StrideHW, PaddingHW, DilationHW [2]int
	Same                                      bool // padding="same" (stride 1)
}

// hw returns the pair if set, else the square n, else def.
func hw(pair [2]int, n, def int) [2]int {
	switch {
	case pair != [2]int{}:
		return pair
	case n != 0:
		return [2]int{n, n}
	}
	return [2]int{def, def}
}

// Conv2d is nn.Conv2d over x[N, In, H, W].
type Conv2d struct {
	In, Out, KernelSize int
	Options             Conv2dOptions
	Weight              *frontend.Tensor // "weight" [Out, In/Groups, KH, KW], U(±1/√fan_in), fan_in = In/Groups·KH·KW
	Bias                *frontend.Tensor // "bias" [Out], U(±1/√fan_in); nil with NoBias
}

// NewConv2d declares the parameters of nn.Conv2d(in, out, kernelSize, ...) in b's scope under
// name: "name.weight" and "name.bias".
func NewConv2d(b *frontend.Builder, name string, in, out, kernelSize int, opts ...Conv2dOptions) *Conv2d {
	o := one(b, opts)
	g := max(o.Groups, 1)
	if in%g != 0 || out%g != 0 {
		b.Fail("conv2d %s: groups %d must divide in channels %d and out channels %d", b.Prefix()+name, g, in, out)
	}
	k := hw(o.KernelHW, kernelSize, 0)
	if o.KernelHW != [2]int{} && kernelSize != 0 || k[0] < 1 || k[1] < 1 {
		b.Fail("conv2d %s: give a positive kernelSize or KernelHW, not both: %d, %v", b.Prefix()+name, kernelSize, o.KernelHW)
	}
	if o.Same && (o.Stride > 1 || o.StrideHW[0] > 1 || o.StrideHW[1] > 1) {
		b.Fail("conv2d %s: padding='same' is not supported for strided convolutions", b.Prefix()+name)
	}
	s := b.Sub(name)
	fanIn := in / g * k[0] * k[1]
	m := &Conv2d{In: in, Out: out, KernelSize: kernelSize, Options: o}
	m.Weight = s.Param("weight", ir.T(ir.F32, out, in/g, k[0], k[1]), frontend.DefaultUniform(fanIn))
	if !o.NoBias {
		m.Bias = s.Param("bias", ir.T(ir.F32, out), frontend.DefaultUniform(fanIn))
	}
	return m
}

// Forward applies the convolution.
func (m *Conv2d) Forward(x *frontend.Tensor) *frontend.Tensor {
	p := m.Options
	if p.Same {
		return frontend.Conv2dSame(x, m.Weight, m.Bias, hw(p.DilationHW, p.Dilation, 1), p.Groups)
	}
	o := frontend.Conv2dOptions{Stride: hw(p.StrideHW, p.Stride, 1), Padding: hw(p.PaddingHW, p.Padding, 0),
		Dilation: hw(p.DilationHW, p.Dilation, 1), Groups: p.Groups}
	return frontend.Conv2d(x, m.Weight, m.Bias, o)
}

// Embedding is nn.Embedding: a lookup table of Num vectors of size Dim.
type Embedding struct {
	Num, Dim int
	Weight   *frontend.Tensor // "weight" [Num, Dim], N(0, 1)
}

// NewEmbedding declares the parameter of nn.Embedding(num, dim) in b's scope: "name.weight".
func NewEmbedding(b *frontend.Builder, name string, num, dim int) *Embedding {
	w := b.Sub(name).Param("weight", ir.T(ir.F32, num, dim), frontend.Normal(0, 1))
	return &Embedding{Num: num, Dim: dim, Weight: w}
}

// Forward looks up the integer indices: [...] → [..., Dim].
func (m *Embedding) Forward(indices *frontend.Tensor) *frontend.Tensor {
	return frontend.Embedding(indices, m.Weight)
}

// LayerNormOptions are the optional arguments of NewLayerNorm.
type LayerNormOptions struct {
	Eps      float64 // default 1e-5
	NoAffine bool    // PyTorch's elementwise_affine=False
	NoBias   bool    // PyTorch's bias=False: a weight but no bias
}

// LayerNorm is nn.LayerNorm over the last dim.
type LayerNorm struct {
	Size   int
	Eps    float64
	Weight *frontend.Tensor // "weight" [Size], ones; nil with NoAffine
	Bias   *frontend.Tensor // "bias" [Size], zeros; nil with NoAffine or NoBias
}

// NewLayerNorm declares the parameters of nn.LayerNorm(size) in b's scope: "name.weight" and
// "name.bias".
func NewLayerNorm(b *frontend.Builder, name string, size int, opts ...LayerNormOptions) *LayerNorm {
	o := one(b, opts)
	m := &LayerNorm{Size: size, Eps: o.Eps}
	if m.Eps == 0 {
		m.Eps = 1e-5
	}
	if !o.NoAffine {
		s := b.Sub(name)
		m.Weight = s.Param("weight", ir.T(ir.F32, size), frontend.Ones())
		if !o.NoBias {
			m.Bias = s.Param("bias", ir.T(ir.F32, size), frontend.Zeros())
		}
	}
	return m
}

// Forward normalizes x over its last dim.
func (m *LayerNorm) Forward(x *frontend.Tensor) *frontend.Tensor {
	return frontend.LayerNorm(x, []int{m.Size}, m.Weight, m.Bias, m.Eps)
}

// one returns the single optional options value, or its zero value.
func one[T any](b *frontend.Builder, opts []T) T {
	var o T
	switch len(opts) {
	case 0:
	case 1:
		o = opts[0]
	default:
		b.Fail("pass at most one options value, have %d", len(opts))
	}
	return o
}
