package onnx

import (
	"fmt"
	"math"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

func init() {
	for name, r := range map[string]reduction{
		"ReduceSum":       {op: "reduce_sum"},
		"ReduceMean":      {op: "reduce_sum", mean: true},
		"ReduceMax":       {op: "reduce_max"},
		"ReduceMin":       {op: "reduce_min"},
		"ReduceProd":      {op: "reduce_prod"},
		"ReduceL1":        {op: "reduce_sum", pre: "abs"},
		"ReduceL2":        {op: "reduce_sum", pre: "square", post: "sqrt"},
		"ReduceSumSquare": {op: "reduce_sum", pre: "square"},
		"ReduceLogSum":    {op: "reduce_sum", post: "log"},
		"ReduceLogSumExp": {op: "reduce_sum", pre: "exp", post: "log"},
	} {
		converters[name] = r.convert
	}
	converters["Softmax"] = softmaxConv(false)
	converters["LogSoftmax"] = softmaxConv(true)
	converters["MatMul"] = convMatMul
	converters["Gemm"] = convGemm
	converters["Conv"] = convConv
	converters["MaxPool"] = poolConv(true)
	converters["AveragePool"] = poolConv(false)
	converters["GlobalAveragePool"] = globalPool("reduce_sum")
	converters["GlobalMaxPool"] = globalPool("reduce_max")
	converters["BatchNormalization"] = convBatchNorm
	converters["InstanceNormalization"] = convInstanceNorm
	converters["LayerNormalization"] = convLayerNorm
	converters["MeanVarianceNormalization"] = convMVN
}

type reduction struct {
	op        string
	mean      bool
	pre, post string
}

func (r reduction) convert(n *node) ([]*val, error) {
	if err := n.inputs(1, 2); err != nil {
		return nil, err
	}
	x := n.in[0]
	rank := len(x.t.Shape)
	var axes []int
	var given bool
	var err error
	if axesFromInput(n.p.GetOpType(), n.opset) {
		if n.arg(1) != nil {
			if axes, err = n.knownInts(1, "axes"); err != nil {
				return nil, err
			}
			given = true
		}
	} else {
		axes, given = n.attrInts("axes")
	}
	if len(axes) == 0 {
		if n.attrInt("noop_with_empty_axes", 0) != 0 {
			given = false
			return []*val{x}, nil
		}
		axes = allAxes(rank)
	}
	_ = given
	if axes, err = axesOf(axes, rank); err != nil {
		return nil, err
	}
	keep := n.attrInt("keepdims", 1) != 0
	if x.t.DType == ir.Bool {
		return nil, unsupportedf("%s of bool is not supported", n.p.GetOpType())
	}
	if (r.mean || r.pre != "" && r.pre != "abs" || r.post != "") && !x.t.DType.IsFloat() {
		return nil, unsupportedf("%s of %s is not supported (floats only)", n.p.GetOpType(), x.t.DType)
	}
	switch r.pre {
	case "abs", "exp":
		x = n.unary(r.pre, x)
	case "square":
		x = n.bin("mul", x, x)
	}
	if len(axes) == 0 { // a scalar: nothing to reduce
		return []*val{x}, nil
	}
	y := n.reduce(r.op, x, axes, keep)
	if r.mean {
		y = n.bin("div", y, n.splat(y, float64(numElements(x.t.Shape, axes))))
	}
	if r.post != "" {
		y = n.unary(r.post, y)
	}
	return []*val{y}, nil
}

func softmaxConv(logSoftmax bool) converter {
	return func(n *node) ([]*val, error) {
		if err := n.inputs(1, 1); err != nil {
			return nil, err
		}
		x := n.in[0]
		if !x.t.DType.IsFloat() {
			return nil, fmt.Errorf("%s needs floats, has %s", n.p.GetOpType(), x.t.DType)
		}
		r := len(x.t.Shape)
		def := -1
		if n.opset < 13 {
			def = 1
		}
		a, err := axis(n.attrInt("axis", def), max(r, 1))
		if err != nil {
			return nil, err
		}
		if r == 0 {
			return nil, fmt.Errorf("%s of a scalar", n.p.GetOpType())
		}
		in := x
		if n.opset < 13 {
			// Before opset 13 the input is coerced to 2-D at axis and normalized over the second dim.
			lead := numElements(x.t.Shape, allAxes(a))
			in = n.reshape(x, ir.Shape{lead, x.t.Shape.NumElements() / max(lead, 1)})
			a = 1
		}
		z := n.bin("sub", in, n.reduce("reduce_max", in, []int{a}, true))
		var y *val
		if logSoftmax {
			y = n.bin("sub", z, n.unary("log", n.reduce("reduce_sum", n.unary("exp", z), []int{a}, true)))
		} else {
			e := n.unary("exp", z)
			y = n.bin("div", e, n.reduce("reduce_sum", e, []int{a}, true))
		}
		return []*val{n.reshape(y, x.t.Shape)}, nil
	}
}

// matmul is numpy's matmul: batch dims broadcast, 1-D operands are a row (a) or column (b).
func (n *node) matmul(a, b *val) (*val, error) {
	if a.t.DType != b.t.DType || a.t.DType == ir.Bool {
		return nil, fmt.Errorf("MatMul operands are %s and %s", a.t, b.t)
	}
	ra, rb := len(a.t.Shape), len(b.t.Shape)
	if ra == 0 || rb == 0 {
		return nil, fmt.Errorf("MatMul of a scalar")
	}
	as, bs := a.t.Shape.Clone(), b.t.Shape.Clone()
	if ra == 1 {
		as = ir.Shape{1, as[0]}
	}
	if rb == 1 {
		bs = ir.Shape{bs[0], 1}
	}
	batch, err := broadcastShape(as[:len(as)-2], bs[:len(bs)-2])
	if err != nil {
		return nil, err
	}
	m, k, k2, nn := as[len(as)-2], as[len(as)-1], bs[len(bs)-2], bs[len(bs)-1]
	if k != k2 {
		return nil, fmt.Errorf("MatMul of %s and %s: inner dims differ", a.t, b.t)
	}
	nb := len(batch)
	a2, err := n.broadcastTo(n.reshape(a, as), append(batch.Clone(), m, k))
	if err != nil {
		return nil, err
	}
	b2, err := n.broadcastTo(n.reshape(b, bs), append(batch.Clone(), k, nn))
	if err != nil {
		return nil, err
	}
	bd := allAxes(nb)
	y, err := n.op("dot_general", ir.Attrs{"lhs_batch": bd, "rhs_batch": bd, "lhs_contract": []int{nb + 1}, "rhs_contract": []int{nb}}, a2, b2)
	if err != nil {
		return nil, err
	}
	out := batch.Clone()
	if ra > 1 {
		out = append(out, m)
	}
	if rb > 1 {
		out = append(out, nn)
	}
	return n.reshape(y, out), nil
}

func convMatMul(n *node) ([]*val, error) {
	if err := n.inputs(2, 2); err != nil {
		return nil, err
	}
	return one(n.matmul(n.in[0], n.in[1]))
}

func convGemm(n *node) ([]*val, error) {
	if err := n.inputs(2, 3); err != nil {
		return nil, err
	}
	a, b, c := n.in[0], n.in[1], n.arg(2)
	if len(a.t.Shape) != 2 || len(b.t.Shape) != 2 {
		return nil, fmt.Errorf("Gemm needs 2-D A and B, has %s and %s", a.t, b.t)
	}
	lc, rc := 1, 0
	if n.attrInt("transA", 0) != 0 {
		lc = 0
	}
	if n.attrInt("transB", 0) != 0 {
		rc = 1
	}
	y, err := n.op("dot_general", ir.Attrs{"lhs_contract": []int{lc}, "rhs_contract": []int{rc}}, a, b)
	if err != nil {
		return nil, err
	}
	if alpha := n.attrFloat("alpha", 1); alpha != 1 {
		y = n.bin("mul", y, n.splat(y, alpha))
	}
	if c != nil {
		if beta := n.attrFloat("beta", 1); beta != 1 {
			c = n.bin("mul", c, n.splat(c, beta))
		}
		cb, err := n.broadcastLike(c, y.t)
		if err != nil {
			return nil, err
		}
		y = n.bin("add", y, cb)
	}
	return []*val{y}, nil
}

// window2d is the geometry of a convolution or pooling over one or two spatial dims, with 1-D
// lifted to 2-D (H = 1).
type window2d struct {
	lifted         bool // a 1-D op, run as 2-D
	kernel, stride [2]int
	dil            [2]int
	lo, hi         [2]int
	in             [2]int
}

func (n *node) window(x *val, kernel []int) (window2d, *val, error) {
	var w window2d
	sp := len(x.t.Shape) - 2
	if sp < 1 || sp > 2 {
		return w, nil, unsupportedf("%d spatial dims are not supported (supported: 1, 2)", max(sp, 0))
	}
	if len(kernel) != sp {
		return w, nil, fmt.Errorf("kernel_shape %v for %d spatial dims", kernel, sp)
	}
	strides, err := n.spatialInts("strides", 1, sp)
	if err != nil {
		return w, nil, err
	}
	dil, err := n.spatialInts("dilations", 1, sp)
	if err != nil {
		return w, nil, err
	}
	pads, err := n.spatialInts("pads", 0, 2*sp)
	if err != nil {
		return w, nil, err
	}
	autoPad, err := n.attrChoice("auto_pad", "NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")
	if err != nil {
		return w, nil, err
	}
	off := 0
	if sp == 1 {
		w.lifted = true
		s := x.t.Shape
		x = n.reshape(x, ir.Shape{s[0], s[1], 1, s[2]})
		off = 1
		w.kernel, w.stride, w.dil, w.in = [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}
	}
	for i := 0; i < sp; i++ {
		j := i + off
		w.kernel[j], w.stride[j], w.dil[j] = kernel[i], strides[i], dil[i]
		w.in[j] = x.t.Shape[2+j]
		if kernel[i] < 1 || strides[i] < 1 || dil[i] < 1 {
			return w, nil, fmt.Errorf("kernel %v, strides %v, dilations %v must be positive", kernel, strides, dil)
		}
		switch autoPad {
		case "NOTSET":
			w.lo[j], w.hi[j] = pads[i], pads[sp+i]
			if w.lo[j] < 0 || w.hi[j] < 0 {
				return w, nil, fmt.Errorf("negative pads %v", pads)
			}
		case "SAME_UPPER", "SAME_LOWER":
			span := (kernel[i]-1)*dil[i] + 1
			out := (w.in[j] + strides[i] - 1) / strides[i]
			total := max(0, (out-1)*strides[i]+span-w.in[j])
			small := total / 2
			if autoPad == "SAME_UPPER" {
				w.lo[j], w.hi[j] = small, total-small
			} else {
				w.lo[j], w.hi[j] = total-small, small
			}
		}
	}
	return w, x, nil
}

// spatialInts reads a per-spatial-dim list attribute (count values), def for each if absent.
func (n *node) spatialInts(name string, def, count int) ([]int, error) {
	v, ok := n.attrInts(name)
	if !ok {
		v = make([]int, count)
		for i := range v {
			v[i] = def
		}
	}
	if len(v) != count {
		return nil, fmt.Errorf("%s has %d values, want %d", name, len(v), count)
	}
	return v, nil
}

func (w window2d) symmetric() bool { return w.lo == w.hi }

// unlift drops the H = 1 dim of a lifted 1-D result.
func (n *node) unlift(w window2d, y *val) *val {
	if !w.lifted {
		return y
	}
	s := y.t.Shape
	return n.reshape(y, ir.Shape{s[0], s[1], s[3]})
}

func convConv(n *node) ([]*val, error) {
	if err := n.inputs(2, 3); err != nil {
		return nil, err
	}
	return one(n.conv(n.in[0], n.in[1], n.arg(2)))
}

func (n *node) conv(x, wt, bias *val) (*val, error) {
	if len(wt.t.Shape) != len(x.t.Shape) || len(x.t.Shape) < 3 {
		return nil, fmt.Errorf("Conv of %s with weight %s", x.t, wt.t)
	}
	kernel, ok := n.attrInts("kernel_shape")
	if !ok {
		kernel = []int(wt.t.Shape[2:].Clone())
	}
	w, x, err := n.window(x, kernel)
	if err != nil {
		return nil, err
	}
	if w.lifted {
		s := wt.t.Shape
		wt = n.reshape(wt, ir.Shape{s[0], s[1], 1, s[2]})
	}
	attrs := ir.Attrs{"stride": w.stride[:], "dilation": w.dil[:], "groups": n.attrInt("group", 1)}
	if w.symmetric() {
		attrs["padding"] = w.lo[:]
	} else {
		x = n.padConst(x, []int{0, 0, w.lo[0], w.lo[1]}, []int{0, 0, w.hi[0], w.hi[1]}, 0)
	}
	y, err := n.op("conv2d", attrs, x, wt)
	if err != nil {
		return nil, err
	}
	if bias != nil {
		b, err := n.opWant("broadcast_in_dim", ir.Attrs{"shape": []int(y.t.Shape.Clone()), "dims": []int{1}}, y.t.Sym, bias)
		if err != nil {
			return nil, err
		}
		y = n.bin("add", y, b)
	}
	return n.unlift(w, y), nil
}

func poolConv(isMax bool) converter {
	return func(n *node) ([]*val, error) {
		if err := n.inputs(1, 1); err != nil {
			return nil, err
		}
		withIndices := len(n.p.GetOutput()) > 1 && n.p.GetOutput()[1] != ""
		x := n.in[0]
		kernel, ok := n.attrInts("kernel_shape")
		if !ok {
			return nil, fmt.Errorf("kernel_shape is required")
		}
		w, x, err := n.window(x, kernel)
		if err != nil {
			return nil, err
		}
		dilated := w.dil != [2]int{1, 1}
		if dilated && !isMax {
			return nil, unsupportedf("AveragePool dilations %v are not supported (supported: 1)", w.dil)
		}
		d := x.t.DType
		if !d.IsFloat() {
			if !isMax {
				return nil, unsupportedf("AveragePool of %s is not supported", d)
			}
			x = n.cast(x, ir.F64) // max is exact in f64 for every integer type gcomp has but i64
			if d == ir.I64 {
				return nil, unsupportedf("MaxPool of int64 is not supported")
			}
		}
		// Output size: floor, or ceil with ceil_mode; the ceil's extra windows are padding on the
		// high side.
		var out, extra [2]int
		for i := 0; i < 2; i++ {
			span := (w.kernel[i]-1)*w.dil[i] + 1
			num := w.in[i] + w.lo[i] + w.hi[i] - span
			if num < 0 {
				return nil, fmt.Errorf("kernel %v is larger than the padded input", kernel)
			}
			out[i] = num/w.stride[i] + 1
			if n.attrInt("ceil_mode", 0) != 0 {
				out[i] = (num+w.stride[i]-1)/w.stride[i] + 1
			}
			extra[i] = max(0, (out[i]-1)*w.stride[i]+span-(w.in[i]+w.lo[i]+w.hi[i]))
		}
		pv := math.Inf(-1)
		if !isMax {
			pv = 0
		}
		xp := n.padConst(x, []int{0, 0, w.lo[0], w.lo[1]}, []int{0, 0, w.hi[0] + extra[0], w.hi[1] + extra[1]}, pv)
		if dilated || withIndices {
			// The max over the window's taps, each a strided slice of the padded input; with
			// Indices, the flat input index of the first tap holding it.
			var y, best, idx *val
			for i := 0; i < w.kernel[0]; i++ {
				for j := 0; j < w.kernel[1]; j++ {
					t := n.sliceAxis(xp, 2, i*w.dil[0], i*w.dil[0]+(out[0]-1)*w.stride[0]+1, w.stride[0])
					t = n.sliceAxis(t, 3, j*w.dil[1], j*w.dil[1]+(out[1]-1)*w.stride[1]+1, w.stride[1])
					if y == nil {
						y, best = t, t
						if withIndices {
							if idx, err = n.tapIndex(x.t.Shape, w, out, i, j); err != nil {
								return nil, err
							}
						}
						continue
					}
					y = n.bin("max", y, t)
					if withIndices {
						k, err := n.tapIndex(x.t.Shape, w, out, i, j)
						if err != nil {
							return nil, err
						}
						gt := n.bin("gt", t, best)
						best = must(n.selectOp(gt, t, best))
						idx = must(n.selectOp(gt, k, idx))
					}
				}
			}
			if withIndices {
				return []*val{n.unlift(w, n.cast(y, d)), n.unlift(w, idx)}, nil
			}
			return []*val{n.unlift(w, n.cast(y, d))}, nil
		}
		attrs := ir.Attrs{"kernel": w.kernel[:], "stride": w.stride[:]}
		op := "max_pool2d"
		if !isMax {
			op = "avg_pool2d"
		}
		y, err := n.op(op, attrs, xp)
		if err != nil {
			return nil, err
		}
		if !isMax {
			// y is the window's sum over KH·KW; ONNX divides by the count of input elements in
			// the window (count_include_pad=0) or of input and declared padding (=1).
			incl := n.attrInt("count_include_pad", 0) != 0
			if err := checkFold(out[0]*out[1], "AveragePool's divisors"); err != nil {
				return nil, err
			}
			counts := tensor.New(ir.T(y.t.DType, out[0], out[1]))
			full := true
			k := w.kernel[0] * w.kernel[1]
			for i := 0; i < out[0]; i++ {
				for j := 0; j < out[1]; j++ {
					c := 1
					for ax, p := range [2]int{i, j} {
						lo, hi := 0, w.in[ax]
						if incl {
							lo, hi = -w.lo[ax], w.in[ax]+w.hi[ax]
						}
						s := p*w.stride[ax] - w.lo[ax]
						c *= max(0, min(s+w.kernel[ax], hi)-max(s, lo))
					}
					counts.F[i*out[1]+j] = float64(k) / float64(c)
					full = full && c == k
				}
			}
			if !full {
				y = n.bin("mul", y, constant(counts))
			}
		}
		if y.t.DType != d {
			y = n.cast(y, d)
		}
		return []*val{n.unlift(w, y)}, nil
	}
}

// tapIndex is, for every output of a pooling, the flat index into the unpadded input x of tap
// (i, j) of its window: row-major, or with storage_order 1 the spatial dims column-major.
func (n *node) tapIndex(x ir.Shape, w window2d, out [2]int, i, j int) (*val, error) {
	N, C := x[0], x[1]
	if err := checkFold(N*C*out[0]*out[1], "MaxPool's Indices"); err != nil {
		return nil, err
	}
	c := tensor.New(ir.T(ir.I64, N, C, out[0], out[1]))
	k := 0
	for nc := 0; nc < N*C; nc++ {
		for oh := 0; oh < out[0]; oh++ {
			h := oh*w.stride[0] + i*w.dil[0] - w.lo[0]
			for ow := 0; ow < out[1]; ow++ {
				wi := ow*w.stride[1] + j*w.dil[1] - w.lo[1]
				if n.attrInt("storage_order", 0) != 0 {
					c.I[k] = int64((nc*w.in[1]+wi)*w.in[0] + h)
				} else {
					c.I[k] = int64((nc*w.in[0]+h)*w.in[1] + wi)
				}
				k++
			}
		}
	}
	return constant(c), nil
}

func globalPool(op string) converter {
	return func(n *node) ([]*val, error) {
		if err := n.inputs(1, 1); err != nil {
			return nil, err
		}
		x := n.in[0]
		if len(x.t.Shape) < 3 || !x.t.DType.IsFloat() {
			return nil, fmt.Errorf("%s needs a float N×C×spatial input, has %s", n.p.GetOpType(), x.t)
		}
		axes := allAxes(len(x.t.Shape))[2:]
		y := n.reduce(op, x, axes, true)
		if op == "reduce_sum" {
			y = n.bin("div", y, n.splat(y, float64(numElements(x.t.Shape, axes))))
		}
		return []*val{y}, nil
	}
}

// channel broadcasts a per-channel vector c over x's dim 1.
func (n *node) channel(c *val, x *val) (*val, error) {
	if len(c.t.Shape) != 1 || len(x.t.Shape) < 2 || c.t.Shape[0] != x.t.Shape[1] {
		return nil, fmt.Errorf("per-channel %s does not fit %s", c.t, x.t)
	}
	return n.opWant("broadcast_in_dim", ir.Attrs{"shape": []int(x.t.Shape.Clone()), "dims": []int{1}}, x.t.Sym, c)
}

func convBatchNorm(n *node) ([]*val, error) {
	if err := n.inputs(5, 5); err != nil {
		return nil, err
	}
	if n.attrInt("training_mode", 0) != 0 {
		return n.batchNormTraining()
	}
	if n.opset < 9 && n.attrInt("spatial", 1) == 0 {
		return nil, unsupportedf("spatial=0 is not supported")
	}
	x := n.in[0]
	if !x.t.DType.IsFloat() {
		return nil, fmt.Errorf("needs floats, has %s", x.t)
	}
	eps := n.attrFloat("epsilon", 1e-5)
	var cs [4]*val
	for i := range cs {
		c, err := n.channel(n.cast(n.in[i+1], x.t.DType), x)
		if err != nil {
			return nil, err
		}
		cs[i] = c
	}
	scale, bias, mean, variance := cs[0], cs[1], cs[2], cs[3]
	// ONNX: (x - mean) / sqrt(var + eps) * scale + B.
	den := n.unary("sqrt", n.bin("add", variance, n.splat(variance, eps)))
	y := n.bin("add", n.bin("mul", n.bin("div", n.bin("sub", x, mean), den), scale), bias)
	return []*val{y}, nil
}

// normalize returns (x - mean) / sqrt(var + eps), the mean and 1/sqrt(var + eps), over axes.
func (n *node) normalize(x *val, axes []int, eps float64) (y, mean, inv *val) {
	cnt := n.splat(x, float64(numElements(x.t.Shape, axes)))
	mean = n.bin("div", n.reduce("reduce_sum", x, axes, true), cnt)
	xc := n.bin("sub", x, mean)
	variance := n.bin("div", n.reduce("reduce_sum", n.bin("mul", xc, xc), axes, true), cnt)
	inv = n.unary("rsqrt", n.bin("add", variance, n.splat(x, eps)))
	return n.bin("mul", xc, inv), mean, inv
}

func convInstanceNorm(n *node) ([]*val, error) {
	if err := n.inputs(3, 3); err != nil {
		return nil, err
	}
	x := n.in[0]
	if len(x.t.Shape) < 3 || !x.t.DType.IsFloat() {
		return nil, fmt.Errorf("needs a float N×C×spatial input, has %s", x.t)
	}
	y, _, _ := n.normalize(x, allAxes(len(x.t.Shape))[2:], n.attrFloat("epsilon", 1e-5))
	scale, err := n.channel(n.in[1], x)
	if err != nil {
		return nil, err
	}
	bias, err := n.channel(n.in[2], x)
	if err != nil {
		return nil, err
	}
	return []*val{n.bin("add", n.bin("mul", y, scale), bias)}, nil
}

func convLayerNorm(n *node) ([]*val, error) {
	if err := n.inputs(2, 3); err != nil {
		return nil, err
	}
	x := n.in[0]
	if !x.t.DType.IsFloat() {
		return nil, fmt.Errorf("needs floats, has %s", x.t)
	}
	r := len(x.t.Shape)
	a, err := axis(n.attrInt("axis", -1), r)
	if err != nil {
		return nil, err
	}
	y, mean, inv := n.normalize(x, allAxes(r)[a:], n.attrFloat("epsilon", 1e-5))
	scale, err := n.broadcastLike(n.in[1], x.t)
	if err != nil {
		return nil, err
	}
	y = n.bin("mul", y, scale)
	if b := n.arg(2); b != nil {
		bb, err := n.broadcastLike(b, x.t)
		if err != nil {
			return nil, err
		}
		y = n.bin("add", y, bb)
	}
	return []*val{y, mean, inv}, nil
}

func convMVN(n *node) ([]*val, error) {
	if err := n.inputs(1, 1); err != nil {
		return nil, err
	}
	x := n.in[0]
	if !x.t.DType.IsFloat() {
		return nil, fmt.Errorf("needs floats, has %s", x.t)
	}
	axes, ok := n.attrInts("axes")
	if !ok {
		axes = []int{0, 2, 3}
	}
	as, err := axesOf(axes, len(x.t.Shape))
	if err != nil {
		return nil, err
	}
	// ONNX's function: (x - E[x]) / (sqrt(E[x²] - E[x]²) + 1e-9).
	cnt := n.splat(x, float64(numElements(x.t.Shape, as)))
	mean := n.bin("div", n.reduce("reduce_sum", x, as, true), cnt)
	sq := n.bin("div", n.reduce("reduce_sum", n.bin("mul", x, x), as, true), cnt)
	std := n.unary("sqrt", n.bin("sub", sq, n.bin("mul", mean, mean)))
	return []*val{n.bin("div", n.bin("sub", x, mean), n.bin("add", std, n.splat(x, 1e-9)))}, nil
}
