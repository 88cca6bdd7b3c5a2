package frontend

import (
	"math"

	"github.com/gcomp/gcomp/ir"
)

// This file holds adaptive pooling and interpolation over x[N, C, H, W]. Both act on H and W
// separately: a window or interpolation along H, then along W. Where the output divides the input
// evenly, adaptive pooling is one pooling op; otherwise the window's sums come from a
// contraction with a 0/1 matrix (the windows overlap and differ in size) and its maxima from a
// slice and reduction per output row. Interpolation is a contraction with the interpolation
// weights, or a broadcast for nearest-neighbour upsampling by an integer factor.

// adaptiveWindow is PyTorch's window of output i of out over in elements:
// [⌊i·in/out⌋, ⌈(i+1)·in/out⌉).
func adaptiveWindow(i, in, out int) (start, end int) {
	return i * in / out, ((i+1)*in + out - 1) / out
}

func (t *Tensor) spatial(what string, size [2]int) {
	s := t.state()
	if t.Rank() != 4 {
		s.failf("%s: want a 4-D input [N,C,H,W], %s", what, t.describe("x"))
	}
	if size[0] < 1 || size[1] < 1 {
		s.failf("%s: output size %v must be positive", what, size)
	}
}

// AdaptiveAvgPool2d is F.adaptive_avg_pool2d(x, size): output (i, j) averages the window
// rows [⌊i·H/OH⌋, ⌈(i+1)·H/OH⌉) × columns likewise.
func AdaptiveAvgPool2d(x *Tensor, size [2]int) *Tensor {
	x.spatial("adaptive_avg_pool2d", size)
	h, w := x.Dim(2), x.Dim(3)
	if size == [2]int{1, 1} {
		// Global average pooling: the plane's sum as a contraction with a ones vector (exact:
		// every product is by 1, summed in order from +0 as reduce_sum does), which runs with
		// coalesced reads and stores, where a pooling window per plane or a row reduction
		// writing one float per row do not.
		n, c := x.Dim(0), x.Dim(1)
		b := &Builder{st: x.s}
		sum := dotGeneral(x.Reshape(n, c, h*w), b.Full(1, x.DType(), h*w), nil, nil, []int{2}, []int{0})
		return sum.DivScalar(float64(h*w)).Reshape(n, c, 1, 1)
	}
	if h%size[0] == 0 && w%size[1] == 0 {
		k := [2]int{h / size[0], w / size[1]}
		if k == [2]int{1, 1} {
			return x
		}
		return AvgPool2d(x, k, PoolOptions{})
	}
	// Window sums along H then W (0/1 weights: exact), divided by the window's size.
	sum := x.alongDim(2, windowMatrix(h, size[0], false)).alongDim(3, windowMatrix(w, size[1], false))
	count := make([]float64, size[0]*size[1])
	for i := range size[0] {
		a, b := adaptiveWindow(i, h, size[0])
		for j := range size[1] {
			c, d := adaptiveWindow(j, w, size[1])
			count[i*size[1]+j] = float64((b - a) * (d - c))
		}
	}
	b := &Builder{st: x.s}
	return sum.Div(b.Tensor(count, x.DType(), size[0], size[1]))
}

// windowMatrix is the [out, in] matrix with 1 where input k lies in output i's adaptive window.
func windowMatrix(in, out int, _ bool) [][]float64 {
	m := make([][]float64, out)
	for i := range m {
		m[i] = make([]float64, in)
		a, b := adaptiveWindow(i, in, out)
		for k := a; k < b; k++ {
			m[i][k] = 1
		}
	}
	return m
}

// alongDim contracts dim d of t with the constant matrix m[out][in]: result[..., i, ...] =
// Σ_k m[i][k]·t[..., k, ...].
func (t *Tensor) alongDim(d int, m [][]float64) *Tensor {
	out, in := len(m), len(m[0])
	vals := make([]float64, 0, out*in)
	for _, r := range m {
		vals = append(vals, r...)
	}
	b := &Builder{st: t.s}
	mt := b.Tensor(vals, t.DType(), out, in)
	// dot_general puts t's free dims first, then m's out dim last: move it back to d.
	y := dotGeneral(t, mt, nil, nil, []int{d}, []int{1})
	r := t.Rank()
	perm := make([]int, 0, r)
	for i := range r - 1 {
		if i == d {
			perm = append(perm, r-1)
		}
		perm = append(perm, i)
	}
	if d == r-1 {
		perm = append(perm, r-1)
	}
	return y.Permute(perm...)
}

// AdaptiveMaxPool2d is F.adaptive_max_pool2d(x, size) (values only): the maximum over each of
// AdaptiveAvgPool2d's windows, with max's rules (NaN propagates).
func AdaptiveMaxPool2d(x *Tensor, size [2]int) *Tensor {
	x.spatial("adaptive_max_pool2d", size)
	h, w := x.Dim(2), x.Dim(3)
	if h%size[0] == 0 && w%size[1] == 0 {
		k := [2]int{h / size[0], w / size[1]}
		if k == [2]int{1, 1} {
			return x
		}
		return MaxPool2d(x, k, PoolOptions{})
	}
	// Columns first, then rows: the gradient goes to the window's first maximum in row-major
	// order (the first row holding it, and that row's first), as PyTorch's index does.
	return x.windowMax(3, size[1]).windowMax(2, size[0])
}

// windowMax takes the maximum over each adaptive window of dim d: one slice and reduction per
// output element of d, joined. Each window's maximum is read at its first position only (a
// maximum over that one element), so ties do not share the gradient as reduce_max's do.
func (t *Tensor) windowMax(d, out int) *Tensor {
	in := t.Dim(d)
	if in == out {
		return t
	}
	fill := math.Inf(-1)
	if !t.DType().IsFloat() {
		fill = intBound(t.DType(), false)
	}
	parts := make([]*Tensor, out)
	for i := range parts {
		a, b := adaptiveWindow(i, in, out)
		p := t.narrow(d, a, b-a)
		pos := (&Builder{st: t.s}).Iota(ir.I32, d, p.Shape()...)
		first := pos.Eq(p.firstHit(d, p.extremeHit(d, nil, true, true)).broadcastTo(pos.v.Type.Shape))
		parts[i] = Where(first, p, p.scalar(fill)).MaxKeepDim(d)
	}
	return Cat(d, parts...)
}

// InterpolateOptions are the arguments of Interpolate: either Size or ScaleFactor (as in
// F.interpolate, a scale factor s computes the source coordinate with 1/s, not in/out), Mode
// "nearest" (the default) or "bilinear", and AlignCorners for bilinear.
type InterpolateOptions struct {
	Size         [2]int
	ScaleFactor  [2]float64
	Mode         string
	AlignCorners bool
}

// Interpolate is F.interpolate over x[N, C, H, W] in modes "nearest" and "bilinear", with
// PyTorch's source coordinates: nearest takes ⌊dst·scale⌋ (clamped to the input); bilinear with
// align_corners takes dst·(in−1)/(out−1), without it (dst+½)·scale−½ clamped below at 0, and
// mixes the two neighbours ⌊src⌋ and ⌊src⌋+1 (the last row repeats) by the fraction. scale is
// in/out, or 1/scale_factor when a scale factor is given. The weights, computed in float32 as
// PyTorch does for f32, f16 and bf16 (float64 for f64), enter one contraction per dim.
func Interpolate(x *Tensor, o InterpolateOptions) *Tensor {
	s := x.state()
	if x.Rank() != 4 || !x.DType().IsFloat() {
		s.failf("interpolate: want a 4-D float input [N,C,H,W], %s", x.describe("x"))
	}
	in := [2]int{x.Dim(2), x.Dim(3)}
	size, scale := o.Size, [2]float64{}
	switch {
	case size != [2]int{} && o.ScaleFactor != [2]float64{}:
		s.failf("interpolate: give either a size or a scale factor, not both")
	case size == [2]int{}:
		for i := range 2 {
			f := o.ScaleFactor[i]
			if !(f > 0) || math.IsInf(f, 0) {
				s.failf("interpolate: scale factor %v must be positive", o.ScaleFactor)
			}
			size[i] = int(math.Floor(float64(in[i]) * f))
			scale[i] = 1 / f
		}
	}
	x.spatial("interpolate", size)
	single := x.DType() != ir.F64
	y := x
	for i := range 2 {
		var m [][]float64
		switch o.Mode {
		case "", "nearest":
			if o.AlignCorners {
				s.failf("interpolate: align_corners only applies to bilinear")
			}
			if scale[i] == 0 && size[i]%in[i] == 0 || scale[i] != 0 && scale[i]*float64(size[i]) == float64(in[i]) && size[i]%in[i] == 0 {
				y = y.repeatEach(2+i, size[i]/in[i])
				continue
			}
			m = nearestMatrix(in[i], size[i], scale[i], single)
		case "bilinear":
			m = linearMatrix(in[i], size[i], scale[i], o.AlignCorners, single)
		default:
			s.failf(`interpolate: mode must be "nearest" or "bilinear", have %q`, o.Mode)
		}
		y = y.alongDim(2+i, m)
	}
	return y
}

// repeatEach repeats every element of dim d k times in place (nearest upsampling by an integer
// factor): a broadcast to a new dim after d, merged into d.
func (t *Tensor) repeatEach(d, k int) *Tensor {
	if k == 1 {
		return t
	}
	sh := t.Shape()
	wide := append(append(append([]int{}, sh[:d+1]...), k), sh[d+1:]...)
	dims := make([]int, len(sh))
	for i := range dims {
		dims[i] = i
		if i > d {
			dims[i] = i + 1
		}
	}
	y := t.s.op("broadcast_in_dim", ir.Attrs{"shape": wide, "dims": dims}, t)
	sh[d] *= k
	return y.Reshape(sh...)
}

// areaScale is PyTorch's area_pixel_compute_scale: the given 1/scale_factor if any, else in/out
// (align_corners: (in−1)/(out−1), 0 for one output), in float32 when single.
func areaScale(in, out int, scale float64, align, single bool) float64 {
	var r float64
	switch {
	case align && out > 1:
		r = float64(in-1) / float64(out-1)
	case align:
		r = 0
	case scale > 0:
		r = scale
	default:
		r = float64(in) / float64(out)
	}
	if single {
		r = float64(float32(r))
	}
	return r
}

func nearestMatrix(in, out int, scale float64, single bool) [][]float64 {
	sc := areaScale(in, out, scale, false, single)
	m := make([][]float64, out)
	for i := range m {
		m[i] = make([]float64, in)
		src := float64(i) * sc
		if single {
			src = float64(float32(i) * float32(sc))
		}
		m[i][min(int(math.Floor(src)), in-1)] = 1
	}
	return m
}

func linearMatrix(in, out int, scale float64, align, single bool) [][]float64 {
	sc := areaScale(in, out, scale, align, single)
	m := make([][]float64, out)
	for i := range m {
		m[i] = make([]float64, in)
		var src float64
		switch {
		case align && single:
			src = float64(float32(i) * float32(sc))
		case align:
			src = float64(i) * sc
		case single:
			src = float64(max(float32(sc)*(float32(i)+0.5)-0.5, 0))
		default:
			src = max(sc*(float64(i)+0.5)-0.5, 0)
		}
		i0 := min(int(src), in-1)
		i1 := i0
		if i0 < in-1 {
			i1 = i0 + 1
		}
		l1 := src - float64(i0)
		if single {
			l1 = float64(float32(src) - float32(i0))
		}
		l0 := 1 - l1
		if single {
			l0 = float64(1 - float32(l1))
		}
		m[i][i0] += l0
		m[i][i1] += l1
	}
	return m
}
