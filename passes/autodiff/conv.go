package autodiff

import (
	"math"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// pair reads a two-int window attribute with its default.
func pair(a ir.Attrs, name string, def int) [2]int {
	if v := a.Ints(name); len(v) == 2 {
		return [2]int{v[0], v[1]}
	}
	return [2]int{def, def}
}

func convAttrs(stride, padding, dilation [2]int, groups int) ir.Attrs {
	a := ir.Attrs{"stride": stride[:], "padding": padding[:], "dilation": dilation[:]}
	if groups != 1 {
		a["groups"] = groups
	}
	return a
}

// gradConv differentiates y = conv2d(x, w) (x[N,C,H,W], w[O,C/G,KH,KW]) with two convolutions:
//
//   - dx is a stride-1 convolution of dy dilated by the stride (zeros between rows and columns)
//     and padded by (K-1)·dilation - padding, with the weight's channel axes swapped per group and
//     its kernel flipped, keeping the forward dilation;
//   - dw is a convolution of x, with batch and channels swapped, by dy as the kernel: stride and
//     dilation trade places, and rows the forward pass never reached are sliced off.
func gradConv(e *Emitter, v, dy *ir.Value, need []bool) []*ir.Value {
	x, w := v.Args[0], v.Args[1]
	s, p, d := pair(v.Attrs, "stride", 1), pair(v.Attrs, "padding", 0), pair(v.Attrs, "dilation", 1)
	g := v.Attrs.Int("groups", 1)
	n, c, h, wd := x.Type.Shape[0], x.Type.Shape[1], x.Type.Shape[2], x.Type.Shape[3]
	o, kh, kw := w.Type.Shape[0], w.Type.Shape[2], w.Type.Shape[3]
	oh, ow := dy.Type.Shape[2], dy.Type.Shape[3]
	var dx, dw *ir.Value
	if need[0] {
		dyd := e.Dilate(e.Dilate(dy, 2, s[0]), 3, s[1])
		lh, lw := dyd.Type.Shape[2], dyd.Type.Shape[3]
		low := []int{0, 0, (kh-1)*d[0] - p[0], (kw-1)*d[1] - p[1]}
		high := []int{0, 0, h + p[0] - lh, wd + p[1] - lw}
		dyp := e.PadOrSlice(dyd, low, high)
		wt := e.Reshape(w, []int{g, o / g, c / g, kh, kw})
		wt = e.Transpose(wt, []int{0, 2, 1, 3, 4})
		wt = e.Reshape(wt, []int{c, o / g, kh, kw})
		wt = e.Reverse(e.Reverse(wt, 2), 3)
		dx = e.Op("conv2d", convAttrs([2]int{1, 1}, [2]int{0, 0}, d, g), dyp, wt)
	}
	if need[1] {
		xa, ya, g64 := x.Type.Axes(), dy.Type.Axes(), int64(g)
		xt := e.reshapeAs(x, []int{n, g, c / g, h, wd}, xa[0], sym.Const(g64), sym.Div(xa[1], g64), xa[2], xa[3])
		xt = e.Transpose(xt, []int{2, 1, 0, 3, 4})
		xt = e.reshapeAs(xt, []int{c / g, g * n, h, wd}, sym.Div(xa[1], g64), sym.Scale(xa[0], g64), xa[2], xa[3])
		dyt := e.reshapeAs(dy, []int{n, g, o / g, oh, ow}, ya[0], sym.Const(g64), sym.Div(ya[1], g64), ya[2], ya[3])
		dyt = e.Transpose(dyt, []int{1, 2, 0, 3, 4})
		dyt = e.reshapeAs(dyt, []int{o, n, oh, ow}, ya[1], ya[0], ya[2], ya[3])
		r := e.Op("conv2d", convAttrs(d, p, s, g), xt, dyt) // [C/G, O, KH', KW'], KH' ≥ KH
		r = e.Slice(r, []int{0, 0, 0, 0}, []int{c / g, o, kh, kw}, nil)
		dw = e.Transpose(r, []int{1, 0, 2, 3})
	}
	return []*ir.Value{dx, dw}
}

// reshapeAs reshapes a to shape, whose sizes over a symbolic graph are axes: a weight gradient's
// views move the batch, whose bound may equal a channel count, so the primal's types of the same
// bound shape (the Emitter's hints) would name the wrong dim.
func (e *Emitter) reshapeAs(a *ir.Value, shape []int, axes ...sym.Expr) *ir.Value {
	if a.Type.Sym == nil {
		return e.Reshape(a, shape)
	}
	saved := e.hints
	e.hints = []ir.Type{{Shape: shape, Sym: axes}}
	defer func() { e.hints = saved }()
	return e.Reshape(a, shape)
}

// poolGeom is a pooling node's window geometry.
type poolGeom struct {
	k, s, p       [2]int
	n, c, h, w    int
	oh, ow        int
	includeCounts bool
}

func poolOf(v *ir.Value) poolGeom {
	x := v.Args[0].Type.Shape
	k := pair(v.Attrs, "kernel", 1)
	s := k
	if _, ok := v.Attrs["stride"]; ok {
		s = pair(v.Attrs, "stride", 1)
	}
	return poolGeom{k: k, s: s, p: pair(v.Attrs, "padding", 0), n: x[0], c: x[1], h: x[2], w: x[3],
		oh: v.Type.Shape[2], ow: v.Type.Shape[3], includeCounts: v.Attrs.Bool("count_include_pad", true)}
}

// window returns the elements of the padded input xp that kernel offset (i, j) reads for every
// output position: a strided slice of shape [N,C,OH,OW].
func (pg poolGeom) window(e *Emitter, xp *ir.Value, i, j int) *ir.Value {
	return e.Slice(xp, []int{0, 0, i, j},
		[]int{pg.n, pg.c, i + (pg.oh-1)*pg.s[0] + 1, j + (pg.ow-1)*pg.s[1] + 1}, []int{1, 1, pg.s[0], pg.s[1]})
}

// scatter places per-output contributions of kernel offset (i, j) where that offset read them, in
// the padded input's coordinates: dilate by the stride, pad to the padded size.
func (pg poolGeom) scatter(e *Emitter, t *ir.Value, i, j int) *ir.Value {
	t = e.Dilate(e.Dilate(t, 2, pg.s[0]), 3, pg.s[1])
	hp, wp := pg.h+2*pg.p[0], pg.w+2*pg.p[1]
	return e.Pad(t, []int{0, 0, i, j}, []int{0, 0, hp - i - t.Type.Shape[2], wp - j - t.Type.Shape[3]}, 0)
}

// unpad drops the padding ring of a padded-input-shaped gradient.
func (pg poolGeom) unpad(e *Emitter, t *ir.Value) *ir.Value {
	return e.Slice(t, []int{0, 0, pg.p[0], pg.p[1]}, []int{pg.n, pg.c, pg.p[0] + pg.h, pg.p[1] + pg.w}, nil)
}

// gradMaxPool routes each output's gradient to the first element of its window (row-major) that
// equals the window's maximum, as PyTorch does: one select per kernel offset, with a mask of the
// outputs already served.
func gradMaxPool(e *Emitter, v, dy *ir.Value, need []bool) []*ir.Value {
	pg := poolOf(v)
	x := v.Args[0]
	xp := e.Pad(x, []int{0, 0, pg.p[0], pg.p[1]}, []int{0, 0, pg.p[0], pg.p[1]}, math.Inf(-1))
	zero := e.Scalar(0, dy)
	taken := e.Const(0, ir.Type{DType: ir.Bool, Shape: dy.Type.Shape, Sym: dy.Type.Sym}) // over a symbolic batch too
	var parts []*ir.Value
	for i := range pg.k[0] {
		for j := range pg.k[1] {
			hit := e.Op("eq", nil, pg.window(e, xp, i, j), v)
			hit = e.Op("and", nil, hit, e.Op("not", nil, taken))
			taken = e.Op("or", nil, taken, hit)
			parts = append(parts, pg.scatter(e, e.Select(hit, dy, zero), i, j))
		}
	}
	return []*ir.Value{pg.unpad(e, e.AddAll(parts))}
}

// gradAvgPool spreads each output's gradient, divided by its window's count, over the window.
func gradAvgPool(e *Emitter, v, dy *ir.Value, need []bool) []*ir.Value {
	pg := poolOf(v)
	var share *ir.Value
	if pg.includeCounts {
		share = e.MulScalar(dy, 1/float64(pg.k[0]*pg.k[1]))
	} else {
		counts := make([]float64, pg.oh*pg.ow)
		for i := range pg.oh {
			for j := range pg.ow {
				rows := overlap(i*pg.s[0]-pg.p[0], pg.k[0], pg.h)
				cols := overlap(j*pg.s[1]-pg.p[1], pg.k[1], pg.w)
				counts[i*pg.ow+j] = float64(rows * cols)
			}
		}
		ct := e.Op("constant", ir.Attrs{"shape": []int{pg.oh, pg.ow}, "dtype": dy.Type.DType, "value": counts})
		share = e.Div(dy, e.Broadcast(ct, dy.Type.Shape, []int{2, 3}))
	}
	var parts []*ir.Value
	for i := range pg.k[0] {
		for j := range pg.k[1] {
			parts = append(parts, pg.scatter(e, share, i, j))
		}
	}
	return []*ir.Value{pg.unpad(e, e.AddAll(parts))}
}

// overlap counts the positions of [start, start+k) inside [0, n).
func overlap(start, k, n int) int { return max(0, min(start+k, n)-max(start, 0)) }
