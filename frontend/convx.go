package frontend

import (
	"slices"

	"github.com/gcomp/gcomp/ir"
)

// This file holds the convolutions built on conv2d: F.conv1d, padding="same", and the
// transposed convolution, which is a stride-1 conv2d over the input dilated by the stride
// (zeros between its elements, made by reshape and pad) with the kernel flipped and its in and
// out channels swapped. It runs on conv2d's implicit-GEMM path; nothing scatters.

// SamePadding returns the low and high padding of PyTorch's padding="same" for one dim: the
// total dilation·(kernel−1), with the odd element on the high side. It needs stride 1.
func SamePadding(kernel, dilation int) (low, high int) {
	total := max(dilation, 1) * (kernel - 1)
	return total / 2, total - total/2
}

// Conv2dSame is F.conv2d(x, w, b, padding="same", dilation=dilation, groups=groups): stride 1,
// the output as large as the input. Odd total padding puts the extra row or column at the
// bottom or right, as PyTorch does, by an explicit pad before a symmetric conv2d.
func Conv2dSame(x, w, b *Tensor, dilation [2]int, groups int) *Tensor {
	s := x.state()
	if w.Rank() != 4 || x.Rank() != 4 {
		s.failf("conv2d: want a 4-D input [N,C,H,W] and weight [O,C/groups,KH,KW]: %s, %s", x.describe("x"), w.describe("weight"))
	}
	d := dilation
	if d == [2]int{} {
		d = [2]int{1, 1}
	}
	lh, hh := SamePadding(w.Dim(2), d[0])
	lw, hw := SamePadding(w.Dim(3), d[1])
	sym := [2]int{min(lh, hh), min(lw, hw)}
	if hh != lh || hw != lw {
		x = x.Pad([]int{0, 0, 0, 0}, []int{0, 0, hh - lh, hw - lw}, 0)
	}
	return Conv2d(x, w, b, Conv2dOptions{Padding: sym, Dilation: d, Groups: groups})
}

// Conv1dOptions are the optional arguments of Conv1d; zero values mean PyTorch's defaults
// (stride 1, padding 0, dilation 1, groups 1). Same is padding="same".
type Conv1dOptions struct {
	Stride, Padding, Dilation, Groups int
	Same                              bool
}

// Conv1d is F.conv1d: x[N,C,L] convolved with w[O,C/groups,K], plus b[O] if not nil, as a
// conv2d over a height of 1.
func Conv1d(x, w, b *Tensor, o Conv1dOptions) *Tensor {
	s := x.state()
	s.own(w, "conv1d")
	if x.Rank() != 3 || w.Rank() != 3 {
		s.failf("conv1d: want a 3-D input [N,C,L] and weight [O,C/groups,K]: %s, %s", x.describe("x"), w.describe("weight"))
	}
	x4 := x.Unsqueeze(2)
	w4 := w.Unsqueeze(2)
	var y *Tensor
	if o.Same {
		if o.Stride > 1 {
			s.failf("conv1d: padding='same' is not supported for strided convolutions")
		}
		y = Conv2dSame(x4, w4, b, [2]int{1, max(o.Dilation, 1)}, o.Groups)
	} else {
		y = Conv2d(x4, w4, b, Conv2dOptions{
			Stride: [2]int{1, max(o.Stride, 1)}, Padding: [2]int{0, o.Padding},
			Dilation: [2]int{1, max(o.Dilation, 1)}, Groups: o.Groups,
		})
	}
	return y.Squeeze(2)
}

// ConvTranspose2dOptions are the optional arguments of ConvTranspose2d; zero values mean
// PyTorch's defaults (stride 1, padding 0, output_padding 0, dilation 1, groups 1).
type ConvTranspose2dOptions struct {
	Stride, Padding, OutputPadding, Dilation [2]int
	Groups                                   int
}

// ConvTranspose2d is F.conv_transpose2d: x[N,Cin,H,W] with w[Cin,Cout/groups,KH,KW], plus b[Cout]
// if not nil, giving OH = (H−1)·stride − 2·padding + dilation·(KH−1) + output_padding + 1.
func ConvTranspose2d(x, w, b *Tensor, o ConvTranspose2dOptions) *Tensor {
	s := x.state()
	s.own(w, "conv_transpose2d")
	g := max(o.Groups, 1)
	if x.Rank() != 4 || w.Rank() != 4 || x.Dim(1) != w.Dim(0) || w.Dim(0)%g != 0 {
		s.failf("conv_transpose2d: want x[N,Cin,H,W] and weight[Cin,Cout/groups,KH,KW] with groups %d dividing Cin: %s, %s",
			g, x.describe("x"), w.describe("weight"))
	}
	one := func(p [2]int) [2]int {
		if p == [2]int{} {
			return [2]int{1, 1}
		}
		return p
	}
	stride, dil := one(o.Stride), one(o.Dilation)
	k := [2]int{w.Dim(2), w.Dim(3)}
	for i := range 2 {
		if stride[i] < 1 || dil[i] < 1 || o.Padding[i] < 0 || o.OutputPadding[i] < 0 {
			s.failf("conv_transpose2d: bad stride %v, padding %v, output_padding %v or dilation %v", stride, o.Padding, o.OutputPadding, dil)
		}
		if o.OutputPadding[i] >= max(stride[i], dil[i]) {
			s.failf("conv_transpose2d: output_padding %v must be smaller than either stride %v or dilation %v", o.OutputPadding, stride, dil)
		}
	}
	n, cin, h, wd := x.Dim(0), x.Dim(1), x.Dim(2), x.Dim(3)
	if stride == k && dil == [2]int{1, 1} && g == 1 {
		return convTransposeTiles(x, w, b, o.Padding, o.OutputPadding)
	}
	// Zeros between the input's elements: [N,C,H,1,W,1] padded to [N,C,H,sh,W,sw], then the
	// trailing zeros cut off.
	if stride != [2]int{1, 1} {
		x = x.Reshape(n, cin, h, 1, wd, 1).Pad([]int{0, 0, 0, 0, 0, 0}, []int{0, 0, 0, stride[0] - 1, 0, stride[1] - 1}, 0).
			Reshape(n, cin, h*stride[0], wd*stride[1]).Slice(2, 0, (h-1)*stride[0]+1).Slice(3, 0, (wd-1)*stride[1]+1)
	}
	// Border: dilation·(K−1) − padding on each side, output_padding more at the end; a negative
	// border cuts.
	lo, hi := make([]int, 4), make([]int, 4)
	for i := range 2 {
		e := dil[i] * (k[i] - 1)
		lo[2+i], hi[2+i] = e-o.Padding[i], e-o.Padding[i]+o.OutputPadding[i]
	}
	x = x.padOrCut(lo, hi)
	if x.Dim(2) < dil[0]*(k[0]-1)+1 || x.Dim(3) < dil[1]*(k[1]-1)+1 {
		s.failf("conv_transpose2d: padding %v leaves no output for %s", o.Padding, x.describe("x"))
	}
	// The kernel: [Cin, Cout/g, KH, KW] → [g, Cin/g, Cout/g, ...] → [Cout, Cin/g, KH, KW], flipped.
	cg := w.Dim(1)
	wk := w.Reshape(g, cin/g, cg, k[0], k[1]).Permute(0, 2, 1, 3, 4).Reshape(g*cg, cin/g, k[0], k[1]).Flip(2, 3)
	return Conv2d(x, wk, b, Conv2dOptions{Dilation: dil, Groups: g})
}

// convTransposeTiles is the transposed convolution whose stride equals its kernel (U-Net's
// 2×2, stride 2): the output tiles do not overlap, so it is one contraction over the input
// channels, y[n, o, h·KH+i, w·KW+j] = Σ_c x[n, c, h, w]·w[c, o, i, j], with no zeros
// multiplied; padding crops the border and output_padding adds zeros (then the bias).
func convTransposeTiles(x, w, b *Tensor, pad, outPad [2]int) *Tensor {
	n, h, wd := x.Dim(0), x.Dim(2), x.Dim(3)
	o, kh, kw := w.Dim(1), w.Dim(2), w.Dim(3)
	// [O, KH, KW, N, H, W] → [N, O, H, KH, W, KW] → [N, O, H·KH, W·KW]: the contraction's
	// result has W innermost, so the reads of the interleaving permutation are runs along W.
	y := dotGeneral(w, x, nil, nil, []int{0}, []int{1}).Permute(3, 0, 4, 1, 5, 2).Reshape(n, o, h*kh, wd*kw)
	y = y.padOrCut([]int{0, 0, -pad[0], -pad[1]}, []int{0, 0, outPad[0] - pad[0], outPad[1] - pad[1]})
	if y.Dim(2) < 1 || y.Dim(3) < 1 {
		y.s.failf("conv_transpose2d: padding %v leaves no output for %s", pad, x.describe("x"))
	}
	if b == nil {
		return y
	}
	y.s.own(b, "conv_transpose2d")
	if !b.Type().Equal(ir.T(w.DType(), o)) {
		y.s.failf("conv_transpose2d: bias does not match the weight: %s, %s", b.describe("bias"), w.describe("weight"))
	}
	return y.Add(y.s.broadcastChannels(b, y))
}

// padOrCut pads dim i by lo[i] before and hi[i] after; negative entries cut that many instead.
func (t *Tensor) padOrCut(lo, hi []int) *Tensor {
	plo, phi := make([]int, len(lo)), make([]int, len(hi))
	for i := range lo {
		plo[i], phi[i] = max(lo[i], 0), max(hi[i], 0)
	}
	if slices.ContainsFunc(plo, func(v int) bool { return v > 0 }) || slices.ContainsFunc(phi, func(v int) bool { return v > 0 }) {
		t = t.Pad(plo, phi, 0)
	}
	for i := range lo {
		if lo[i] < 0 || hi[i] < 0 {
			n := t.Dim(i)
			t = t.narrow(i, max(-lo[i], 0), n-max(-lo[i], 0)-max(-hi[i], 0))
		}
	}
	return t
}

// Flip reverses the order of the elements along dims (torch.flip), by a gather of the reversed
// indices along each dim.
func (t *Tensor) Flip(dims ...int) *Tensor {
	s := t.state()
	for _, d := range t.axes("flip", dims) {
		n := t.Dim(d)
		if n <= 1 {
			continue
		}
		rev := make([]float64, n)
		for i := range rev {
			rev[i] = float64(n - 1 - i)
		}
		idx := s.op("constant", ir.Attrs{"shape": []int{n}, "dtype": ir.I32, "value": rev})
		perm := make([]int, t.Rank())
		perm[0] = d
		for i, j := 0, 1; i < t.Rank(); i++ {
			if i != d {
				perm[j] = i
				j++
			}
		}
		inv := make([]int, len(perm))
		for i, p := range perm {
			inv[p] = i
		}
		front := t.Permute(perm...)
		t = s.op("gather", nil, front, idx).Permute(inv...)
	}
	return t
}
