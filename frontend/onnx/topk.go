package onnx

import (
	"fmt"
	"math"

	"github.com/gcomp/gcomp/ir"
)

// TopK, GatherND, BatchNormalization in training mode and 3-D pooling without padding, composed
// of existing ops.

func init() {
	converters["TopK"] = convTopK
	converters["GatherND"] = convGatherND
	delete(refused, "TopK")
	delete(refused, "GatherND")
	pool2d := map[string]converter{"MaxPool": converters["MaxPool"], "AveragePool": converters["AveragePool"]}
	for name, conv := range pool2d {
		isMax := name == "MaxPool"
		converters[name] = func(n *node) ([]*val, error) {
			if len(n.in) == 1 && len(n.in[0].t.Shape) == 5 {
				return n.pool3d(isMax)
			}
			return conv(n)
		}
	}
}

// convTopK selects the k extremes one at a time: the extreme among the elements not yet taken,
// at its first position (ONNX's order for ties), then marks it taken.
func convTopK(n *node) ([]*val, error) {
	x := n.in[0]
	var k int
	if n.opset < 10 {
		if err := n.inputs(1, 1); err != nil {
			return nil, err
		}
		k = n.attrInt("k", 0)
	} else {
		if err := n.inputs(2, 2); err != nil {
			return nil, err
		}
		ks, err := n.knownInts(1, "k")
		if err != nil {
			return nil, err
		}
		if len(ks) != 1 {
			return nil, fmt.Errorf("k must have one element")
		}
		k = ks[0]
	}
	if x.t.DType == ir.Bool {
		return nil, unsupportedf("TopK of bool is not supported")
	}
	a, err := axis(n.attrInt("axis", -1), len(x.t.Shape))
	if err != nil {
		return nil, err
	}
	d := x.t.Shape[a]
	if k < 1 || k > d {
		return nil, unsupportedf("k = %d is not supported (supported: 1 to the axis size %d)", k, d)
	}
	if err := checkFold(k*x.t.Shape.NumElements(), "TopK's unrolled selection"); err != nil {
		return nil, err
	}
	extreme, fill := "reduce_max", math.Inf(-1)
	if n.attrInt("largest", 1) == 0 {
		extreme, fill = "reduce_min", math.Inf(1)
	}
	if !x.t.DType.IsFloat() {
		lo, hi := intRange(x.t.DType)
		fill = lo
		if extreme == "reduce_min" {
			fill = hi
		}
	}
	pos := must(n.op("iota", ir.Attrs{"shape": []int(x.t.Shape.Clone()), "dim": a, "dtype": ir.I32}))
	taken := n.splatOf(ir.Type{DType: ir.Bool, Shape: x.t.Shape}, 0)
	var vals, idxs []*val
	for j := 0; j < k; j++ {
		free := n.unary("not", taken)
		m := must(n.broadcastTo(n.reduce(extreme, must(n.selectOp(taken, n.splat(x, fill), x)), []int{a}, true), x.t.Shape))
		hit := n.bin("eq", x, m)
		if x.t.DType.IsFloat() {
			hit = n.bin("or", hit, n.bin("ne", x, x))
		}
		hit = n.bin("and", hit, free)
		// i32 indices: see argIndex.
		i := n.reduce("reduce_min", must(n.selectOp(hit, pos, scalar(ir.I32, float64(d)))), []int{a}, true)
		v, err := n.pick(x, i, a, false)
		if err != nil {
			return nil, err
		}
		vals = append(vals, n.reshape(v, i.t.Shape))
		idxs = append(idxs, n.cast(i, ir.I64))
		taken = n.bin("or", taken, n.bin("eq", pos, must(n.broadcastLike(i, x.t))))
	}
	cat := func(vs []*val) *val {
		if len(vs) == 1 {
			return vs[0]
		}
		return must(n.op("concat", ir.Attrs{"axis": a}, vs...))
	}
	return []*val{cat(vals), cat(idxs)}, nil
}

// intRange is an integer dtype's range, as floats.
func intRange(d ir.DType) (lo, hi float64) {
	switch d {
	case ir.I8:
		return -128, 127
	case ir.U8:
		return 0, 255
	case ir.I32:
		return math.MinInt32, math.MaxInt32
	}
	return -(1 << 62), 1 << 62 // i64: within float64's exact range, far beyond any index or count
}

// convGatherND flattens the indexed leading dims of data and gathers rows by a linear index.
func convGatherND(n *node) ([]*val, error) {
	if err := n.inputs(2, 2); err != nil {
		return nil, err
	}
	x, idx := n.in[0], n.in[1]
	b := n.attrInt("batch_dims", 0)
	ri := len(idx.t.Shape)
	if ri < 1 || !idx.t.DType.IsInt() {
		return nil, fmt.Errorf("indices %s", idx.t)
	}
	q := idx.t.Shape[ri-1]
	if b < 0 || b >= ri || b+q > len(x.t.Shape) {
		return nil, fmt.Errorf("batch_dims %d and index depth %d do not fit data %s", b, q, x.t)
	}
	for i := 0; i < b; i++ {
		if idx.t.Shape[i] != x.t.Shape[i] {
			return nil, fmt.Errorf("batch dims of data %s and indices %s differ", x.t, idx.t)
		}
	}
	// linear = Σ_k idx[..., k]·stride_k over data dims b..b+q-1, plus the batch offset.
	ix := n.cast(idx, ir.I64)
	lead := idx.t.Shape[:ri-1]
	rows := 1
	var lin *val
	for k := q - 1; k >= -b; k-- {
		var comp *val
		dim := 0
		if k >= 0 {
			dim = x.t.Shape[b+k]
			c := n.reshape(n.sliceAxis(ix, ri-1, k, k+1, 1), lead)
			comp = must(n.selectOp(n.bin("lt", c, n.splat(c, 0)), n.bin("add", c, n.splat(c, float64(dim))), c))
		} else { // batch dim b+k: its index is the position itself
			dim = x.t.Shape[b+k]
			comp = must(n.op("iota", ir.Attrs{"shape": []int(lead.Clone()), "dim": b + k, "dtype": ir.I64}))
		}
		term := n.bin("mul", comp, n.splat(comp, float64(rows)))
		if lin == nil {
			lin = term
		} else {
			lin = n.bin("add", lin, term)
		}
		rows *= dim
	}
	rest := x.t.Shape[b+q:]
	table := n.reshape(x, append(ir.Shape{rows}, rest...))
	return one(must(n.op("gather", nil, table, lin)), nil)
}

// batchNormTraining normalizes with the batch's statistics and updates the running ones.
func (n *node) batchNormTraining() ([]*val, error) {
	x := n.in[0]
	if !x.t.DType.IsFloat() || len(x.t.Shape) < 2 {
		return nil, fmt.Errorf("needs a float N×C×... input, has %s", x.t)
	}
	axes := append([]int{0}, allAxes(len(x.t.Shape))[2:]...)
	cnt := n.splat(x, float64(numElements(x.t.Shape, axes)))
	mean := n.bin("div", n.reduce("reduce_sum", x, axes, false), cnt)
	mb, err := n.channel(mean, x)
	if err != nil {
		return nil, err
	}
	xc := n.bin("sub", x, mb)
	variance := n.bin("div", n.reduce("reduce_sum", n.bin("mul", xc, xc), axes, false), cnt)
	vb, _ := n.channel(variance, x)
	eps := n.attrFloat("epsilon", 1e-5)
	scale, err := n.channel(n.in[1], x)
	if err != nil {
		return nil, err
	}
	bias, err := n.channel(n.in[2], x)
	if err != nil {
		return nil, err
	}
	y := n.bin("add", n.bin("mul", n.bin("div", xc, n.unary("sqrt", n.bin("add", vb, n.splat(vb, eps)))), scale), bias)
	mom := n.attrFloat("momentum", 0.9)
	run := func(old, cur *val) *val {
		return n.bin("add", n.bin("mul", old, n.splat(old, mom)), n.bin("mul", cur, n.splat(cur, 1-mom)))
	}
	return []*val{y, run(n.in[3], mean), run(n.in[4], variance)}, nil
}

// pool3d pools [N,C,D,H,W] without padding as a 2-D pool over (H, W) and a second over D:
// max is separable exactly, and the average of averages over equal windows is the average.
func (n *node) pool3d(isMax bool) ([]*val, error) {
	x := n.in[0]
	kernel, ok := n.attrInts("kernel_shape")
	if !ok || len(kernel) != 3 {
		return nil, fmt.Errorf("kernel_shape %v for 3 spatial dims", kernel)
	}
	strides, err := n.spatialInts("strides", 1, 3)
	if err != nil {
		return nil, err
	}
	pads, err := n.spatialInts("pads", 0, 6)
	if err != nil {
		return nil, err
	}
	for _, p := range pads {
		if p != 0 {
			return nil, unsupportedf("3-D pooling with pads is not supported")
		}
	}
	if n.attrString("auto_pad", "NOTSET") != "NOTSET" || n.attrInt("ceil_mode", 0) != 0 || n.has("dilations") || len(n.p.GetOutput()) > 1 {
		return nil, unsupportedf("3-D pooling with auto_pad, ceil_mode, dilations or indices is not supported")
	}
	if !x.t.DType.IsFloat() {
		return nil, unsupportedf("3-D pooling of %s is not supported", x.t.DType)
	}
	op := "max_pool2d"
	if !isMax {
		op = "avg_pool2d"
	}
	s := x.t.Shape
	N, C, D, H, W := s[0], s[1], s[2], s[3], s[4]
	y, err := n.op(op, ir.Attrs{"kernel": kernel[1:], "stride": strides[1:]}, n.reshape(x, ir.Shape{N, C * D, H, W}))
	if err != nil {
		return nil, err
	}
	h, w := y.t.Shape[2], y.t.Shape[3]
	z, err := n.op(op, ir.Attrs{"kernel": []int{kernel[0], 1}, "stride": []int{strides[0], 1}}, n.reshape(y, ir.Shape{N, C, D, h * w}))
	if err != nil {
		return nil, err
	}
	return []*val{n.reshape(z, ir.Shape{N, C, z.t.Shape[2], h, w})}, nil
}
