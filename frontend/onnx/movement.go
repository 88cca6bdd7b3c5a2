package onnx

import (
	"fmt"
	"math"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/tensor"
)

func init() {
	converters["Constant"] = convConstant
	converters["Shape"] = convShape
	converters["Size"] = func(n *node) ([]*val, error) {
		if err := n.inputs(1, 1); err != nil {
			return nil, err
		}
		if t := n.in[0].t; t.Sym != nil {
			size := sym.Const(1)
			for _, e := range t.Axes() {
				size = sym.Mul(size, e)
			}
			return []*val{n.sizeVal(ir.T(ir.I64), []sym.Expr{size})}, nil
		}
		return []*val{constant(tensor.FromFloats(ir.T(ir.I64), []float64{float64(n.in[0].t.Shape.NumElements())}))}, nil
	}
	converters["Reshape"] = convReshape
	converters["Flatten"] = convFlatten
	converters["Transpose"] = convTranspose
	converters["Squeeze"] = convSqueeze
	converters["Unsqueeze"] = convUnsqueeze
	converters["Concat"] = convConcat
	converters["Split"] = convSplit
	converters["Slice"] = convSlice
	converters["Gather"] = convGather
	converters["Expand"] = convExpand
	converters["Tile"] = convTile
	converters["Pad"] = convPad
	converters["ConstantOfShape"] = convConstantOfShape
	converters["Range"] = convRange
	converters["Dropout"] = convDropout
	converters["EyeLike"] = convEyeLike
	converters["Trilu"] = convTrilu
	converters["OneHot"] = convOneHot
	converters["DepthToSpace"] = convDepthToSpace
	converters["SpaceToDepth"] = convSpaceToDepth
}

func convConstant(n *node) ([]*val, error) {
	if err := n.inputs(0, 0); err != nil {
		return nil, err
	}
	if len(n.attrs) != 1 {
		return nil, fmt.Errorf("Constant needs exactly one value attribute, has %d", len(n.attrs))
	}
	for name, a := range n.attrs {
		switch name {
		case "value":
			c, err := n.src.decode(a.GetT())
			if err != nil {
				return nil, err
			}
			return []*val{constant(c)}, nil
		case "value_float":
			return []*val{scalar(ir.F32, float64(a.GetF()))}, nil
		case "value_floats":
			f, _ := n.attrFloats(name)
			return []*val{constant(tensor.FromFloats(ir.T(ir.F32, len(f)), f))}, nil
		case "value_int":
			return []*val{scalar(ir.I64, float64(a.GetI()))}, nil
		case "value_ints":
			v, _ := n.attrInts(name)
			return []*val{constInts(v)}, nil
		case "sparse_value":
			return nil, unsupportedf("sparse constants are not supported")
		case "value_string", "value_strings":
			return nil, unsupportedf("string constants are not supported")
		}
		return nil, fmt.Errorf("unknown attribute %q", name)
	}
	return nil, nil
}

// constInts is an exact i64 vector (no float64 round trip).
func constInts(v []int) *val {
	c := tensor.New(ir.T(ir.I64, len(v)))
	for i, x := range v {
		c.I[i] = int64(x)
	}
	return constant(c)
}

func convShape(n *node) ([]*val, error) {
	if err := n.inputs(1, 1); err != nil {
		return nil, err
	}
	s := n.in[0].t.Shape
	r := len(s)
	start, end := 0, r
	if n.opset >= 15 {
		start, end = n.attrInt("start", 0), n.attrInt("end", r)
	}
	clamp := func(a int) int {
		if a < 0 {
			a += r
		}
		return min(max(a, 0), r)
	}
	start, end = clamp(start), clamp(end)
	dims := []int{}
	if start < end {
		dims = s[start:end]
		if t := n.in[0].t; t.Sym != nil {
			return []*val{n.sizeVal(ir.T(ir.I64, end-start), t.Sym[start:end])}, nil
		}
	}
	return []*val{constInts(dims)}, nil
}

func convReshape(n *node) ([]*val, error) {
	var shape []int
	var err error
	if n.opset < 5 {
		shape, _ = n.attrInts("shape")
	} else {
		if err := n.inputs(2, 2); err != nil {
			return nil, err
		}
		if n.in[1].sizes != nil && n.in[1].folded() {
			return one(n.reshapeSizes(n.in[0], n.in[1], n.attrInt("allowzero", 0) != 0))
		}
		if shape, err = n.knownInts(1, "shape"); err != nil {
			return nil, err
		}
	}
	x := n.in[0]
	allowZero := n.attrInt("allowzero", 0) != 0
	out := make(ir.Shape, len(shape))
	infer, known := -1, 1
	for i, d := range shape {
		switch {
		case d == 0 && !allowZero:
			if i >= len(x.t.Shape) {
				return nil, fmt.Errorf("shape %v copies dim %d, but the input is %s", shape, i, x.t)
			}
			out[i] = x.t.Shape[i]
		case d == -1:
			if infer >= 0 {
				return nil, fmt.Errorf("shape %v has two -1", shape)
			}
			infer = i
			continue
		case d < 0:
			return nil, fmt.Errorf("shape %v has a negative dim", shape)
		default:
			out[i] = d
		}
		known *= out[i]
	}
	total := x.t.Shape.NumElements()
	if infer >= 0 {
		if known == 0 || total%known != 0 {
			return nil, fmt.Errorf("cannot reshape %s to %v", x.t, shape)
		}
		out[infer] = total / known
	}
	if out.NumElements() != total {
		return nil, fmt.Errorf("cannot reshape %s to %v", x.t, shape)
	}
	return []*val{n.reshape(x, out)}, nil
}

func convFlatten(n *node) ([]*val, error) {
	if err := n.inputs(1, 1); err != nil {
		return nil, err
	}
	x := n.in[0]
	r := len(x.t.Shape)
	a := n.attrInt("axis", 1)
	if a < 0 {
		a += r
	}
	if a < 0 || a > r {
		return nil, fmt.Errorf("axis %d is out of range for rank %d", n.attrInt("axis", 1), r)
	}
	lead := numElements(x.t.Shape, allAxes(a))
	return []*val{n.reshape(x, ir.Shape{lead, x.t.Shape.NumElements() / max(lead, 1)})}, nil
}

func convTranspose(n *node) ([]*val, error) {
	if err := n.inputs(1, 1); err != nil {
		return nil, err
	}
	x := n.in[0]
	r := len(x.t.Shape)
	perm, ok := n.attrInts("perm")
	if !ok {
		perm = make([]int, r)
		for i := range perm {
			perm[i] = r - 1 - i
		}
	}
	return one(n.op("transpose", ir.Attrs{"perm": perm}, x))
}

// axesArg reads axes from the attribute (before opset) or from input i (from opset on).
func (n *node) axesArg(i, opset int) ([]int, bool, error) {
	if n.opset < opset {
		a, ok := n.attrInts("axes")
		return a, ok, nil
	}
	if n.arg(i) == nil {
		return nil, false, nil
	}
	a, err := n.knownInts(i, "axes")
	return a, true, err
}

func convSqueeze(n *node) ([]*val, error) {
	if err := n.inputs(1, 2); err != nil {
		return nil, err
	}
	x := n.in[0]
	axes, ok, err := n.axesArg(1, 13)
	if err != nil {
		return nil, err
	}
	r := len(x.t.Shape)
	drop := map[int]bool{}
	if !ok {
		for i, d := range x.t.Shape {
			drop[i] = d == 1
		}
	} else {
		as, err := axesOf(axes, r)
		if err != nil {
			return nil, err
		}
		for _, a := range as {
			if x.t.Shape[a] != 1 {
				return nil, fmt.Errorf("cannot squeeze dim %d of %s", a, x.t)
			}
			drop[a] = true
		}
	}
	out := ir.Shape{}
	for i, d := range x.t.Shape {
		if !drop[i] {
			out = append(out, d)
		}
	}
	return []*val{n.reshape(x, out)}, nil
}

func convUnsqueeze(n *node) ([]*val, error) {
	if err := n.inputs(1, 2); err != nil {
		return nil, err
	}
	x := n.in[0]
	axes, ok, err := n.axesArg(1, 13)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("Unsqueeze needs axes")
	}
	r := len(x.t.Shape) + len(axes)
	as, err := axesOf(axes, r)
	if err != nil {
		return nil, err
	}
	out := make(ir.Shape, 0, r)
	j := 0
	for i := 0; i < r; i++ {
		if len(as) > 0 && as[0] == i {
			out = append(out, 1)
			as = as[1:]
			continue
		}
		out = append(out, x.t.Shape[j])
		j++
	}
	return []*val{n.reshape(x, out)}, nil
}

func convConcat(n *node) ([]*val, error) {
	if err := n.inputs(1, 1<<20); err != nil {
		return nil, err
	}
	a, err := axis(n.attrInt("axis", 0), len(n.in[0].t.Shape))
	if err != nil {
		return nil, err
	}
	var parts []*val
	for _, x := range n.in {
		if x == nil {
			return nil, fmt.Errorf("an input is missing")
		}
		if len(x.t.Shape) == len(n.in[0].t.Shape) && x.t.Shape[a] == 0 {
			continue // empty parts add nothing (shape arithmetic concatenates empty lists)
		}
		parts = append(parts, x)
	}
	if len(parts) == 0 {
		return []*val{n.in[0]}, nil
	}
	if len(parts) == 1 {
		return parts, nil
	}
	return one(n.op("concat", ir.Attrs{"axis": a}, parts...))
}

func convSplit(n *node) ([]*val, error) {
	if err := n.inputs(1, 2); err != nil {
		return nil, err
	}
	x := n.in[0]
	a, err := axis(n.attrInt("axis", 0), len(x.t.Shape))
	if err != nil {
		return nil, err
	}
	var sizes []int
	if n.opset < 13 {
		sizes, _ = n.attrInts("split")
	} else if n.arg(1) != nil {
		if sizes, err = n.knownInts(1, "split"); err != nil {
			return nil, err
		}
	}
	k := len(n.p.GetOutput())
	if sizes == nil {
		if k == 0 || x.t.Shape[a]%k != 0 {
			return nil, fmt.Errorf("cannot split dim %d of %s into %d equal parts", a, x.t, k)
		}
		for i := 0; i < k; i++ {
			sizes = append(sizes, x.t.Shape[a]/k)
		}
	}
	if len(sizes) != k {
		return nil, fmt.Errorf("split has %d sizes for %d outputs", len(sizes), k)
	}
	var outs []*val
	start := 0
	for _, s := range sizes {
		if s < 0 || start+s > x.t.Shape[a] {
			return nil, fmt.Errorf("split sizes %v do not fit dim %d of %s", sizes, a, x.t)
		}
		outs = append(outs, n.sliceAxis(x, a, start, start+s, 1))
		start += s
	}
	if start != x.t.Shape[a] {
		return nil, fmt.Errorf("split sizes %v do not add up to dim %d of %s", sizes, a, x.t)
	}
	return outs, nil
}

// sliceAxis slices x[start:limit:step] along one axis (step ≥ 1).
func (n *node) sliceAxis(x *val, a, start, limit, step int) *val {
	r := len(x.t.Shape)
	st, lim, str := make([]int, r), x.t.Shape.Clone(), make([]int, r)
	for i := range str {
		str[i] = 1
	}
	st[a], lim[a], str[a] = start, limit, step
	return must(n.op("slice", ir.Attrs{"start": st, "limit": []int(lim), "stride": str}, x))
}

func convSlice(n *node) ([]*val, error) {
	x := n.in[0]
	r := len(x.t.Shape)
	var starts, ends, axes, steps []int
	var err error
	if n.opset < 10 {
		if err := n.inputs(1, 1); err != nil {
			return nil, err
		}
		starts, _ = n.attrInts("starts")
		ends, _ = n.attrInts("ends")
		axes, _ = n.attrInts("axes")
	} else {
		if err := n.inputs(3, 5); err != nil {
			return nil, err
		}
		if starts, err = n.knownInts(1, "starts"); err != nil {
			return nil, err
		}
		if ends, err = n.knownInts(2, "ends"); err != nil {
			return nil, err
		}
		if n.arg(3) != nil {
			if axes, err = n.knownInts(3, "axes"); err != nil {
				return nil, err
			}
		}
		if n.arg(4) != nil {
			if steps, err = n.knownInts(4, "steps"); err != nil {
				return nil, err
			}
		}
	}
	if axes == nil {
		axes = allAxes(len(starts))
	}
	if steps == nil {
		steps = make([]int, len(starts))
		for i := range steps {
			steps[i] = 1
		}
	}
	if len(ends) != len(starts) || len(axes) != len(starts) || len(steps) != len(starts) {
		return nil, fmt.Errorf("starts, ends, axes and steps have different lengths")
	}
	if _, err := axesOf(axes, r); err != nil {
		return nil, err
	}
	for i := range starts {
		a, _ := axis(axes[i], r)
		d, s := x.t.Shape[a], steps[i]
		if s == 0 {
			return nil, fmt.Errorf("step 0")
		}
		clamp := func(v, lo, hi int) int {
			if v < 0 {
				v += d
			}
			return min(max(v, lo), hi)
		}
		if s > 0 {
			b, e := clamp(starts[i], 0, d), clamp(ends[i], 0, d)
			e = max(e, b)
			x = n.sliceAxis(x, a, b, e, s)
			continue
		}
		// A negative step: the elements b, b+s, ... above e, picked by a gather.
		b, e := clamp(starts[i], -1, d-1), clamp(ends[i], -1, d-1)
		if err := checkFold((b-e)/(-s)+1, "Slice's index map"); err != nil {
			return nil, err
		}
		var idx []int
		for j := b; j > e; j += s {
			idx = append(idx, j)
		}
		x = n.take(x, a, constInts(idx))
	}
	return []*val{x}, nil
}

// take is ONNX's Gather along axis a: data.shape[:a] + indices.shape + data.shape[a+1:], built
// from gcomp's gather (rows of a table) between transposes.
func (n *node) take(x *val, a int, idx *val) *val {
	r := len(x.t.Shape)
	perm := append([]int{a}, allAxes(r)...)
	perm = append(perm[:a+1], perm[a+2:]...)
	table := n.transpose(x, perm)
	if len(idx.t.Shape) == 1 && idx.t.Shape[0] == 0 {
		out := x.t.Shape.Clone()
		out[a] = 0
		return constant(tensor.New(ir.Type{DType: x.t.DType, Shape: out}))
	}
	g := must(n.op("gather", nil, table, idx))
	// g is idx.shape + others; move idx's dims to position a.
	k := len(idx.t.Shape)
	back := []int{}
	for i := 0; i < a; i++ {
		back = append(back, k+i)
	}
	for i := 0; i < k; i++ {
		back = append(back, i)
	}
	for i := a; i < r-1; i++ {
		back = append(back, k+i)
	}
	return n.transpose(g, back)
}

func convGather(n *node) ([]*val, error) {
	if err := n.inputs(2, 2); err != nil {
		return nil, err
	}
	x, idx := n.in[0], n.in[1]
	a, err := axis(n.attrInt("axis", 0), len(x.t.Shape))
	if err != nil {
		return nil, err
	}
	if !idx.t.DType.IsInt() {
		return nil, fmt.Errorf("indices are %s, want integers", idx.t.DType)
	}
	d := x.t.Shape[a]
	if idx.c != nil && idx.param == "" && idx.sizes == nil {
		// Known indices: check them and make negative ones positive here.
		c := idx.c.Clone()
		for i, v := range c.I {
			if v < -int64(d) || v >= int64(d) {
				return nil, fmt.Errorf("index %d is out of range for dim %d of size %d", v, a, d)
			}
			if v < 0 {
				c.I[i] = v + int64(d)
			}
		}
		idx = constant(c)
	} else if idx.t.DType != ir.U8 {
		// Negative indices count from the end.
		neg := n.bin("lt", idx, n.splat(idx, 0))
		idx = must(n.selectOp(neg, n.bin("add", idx, n.splat(idx, float64(d))), idx))
	}
	return []*val{n.take(x, a, idx)}, nil
}

func convExpand(n *node) ([]*val, error) {
	if err := n.inputs(2, 2); err != nil {
		return nil, err
	}
	shape, err := n.knownInts(1, "shape")
	if err != nil {
		return nil, err
	}
	x := n.in[0]
	out, err := broadcastShape(x.t.Shape, ir.Shape(shape))
	if err != nil {
		return nil, err
	}
	return one(n.broadcastTo(x, out))
}

func convTile(n *node) ([]*val, error) {
	if err := n.inputs(2, 2); err != nil {
		return nil, err
	}
	reps, err := n.knownInts(1, "repeats")
	if err != nil {
		return nil, err
	}
	x := n.in[0]
	r := len(x.t.Shape)
	if len(reps) != r {
		return nil, fmt.Errorf("repeats has %d values for rank %d", len(reps), r)
	}
	// x[d0,d1,...] → broadcast to [r0,d0,r1,d1,...] → reshape to [r0·d0, r1·d1, ...].
	big, dims, out := ir.Shape{}, []int{}, ir.Shape{}
	for i, d := range x.t.Shape {
		if reps[i] < 0 {
			return nil, fmt.Errorf("negative repeat %d", reps[i])
		}
		big = append(big, reps[i], d)
		dims = append(dims, 2*i+1)
		out = append(out, reps[i]*d)
	}
	if _, err := shapeOf(int64s(big)); err != nil {
		return nil, err
	}
	b := must(n.op("broadcast_in_dim", ir.Attrs{"shape": []int(big), "dims": dims}, x))
	return []*val{n.reshape(b, out)}, nil
}

func convPad(n *node) ([]*val, error) {
	x := n.in[0]
	r := len(x.t.Shape)
	mode, err := n.attrChoice("mode", "constant", "constant", "edge", "reflect")
	if err != nil {
		return nil, err
	}
	var pads []int
	value := 0.0
	if n.opset < 11 {
		pads, _ = n.attrInts("pads")
		value = n.attrFloat("value", 0)
	} else {
		if err := n.inputs(2, 4); err != nil {
			return nil, err
		}
		if pads, err = n.knownInts(1, "pads"); err != nil {
			return nil, err
		}
		if n.arg(2) != nil {
			c, err := n.known(2, "constant_value")
			if err != nil {
				return nil, err
			}
			if c.Len() != 1 {
				return nil, fmt.Errorf("constant_value must be a scalar")
			}
			value = c.At(0)
		}
		if n.arg(3) != nil {
			axes, err := n.knownInts(3, "axes")
			if err != nil {
				return nil, err
			}
			as := make([]int, len(axes))
			for i, a := range axes {
				if as[i], err = axis(a, r); err != nil {
					return nil, err
				}
			}
			if len(pads) != 2*len(as) {
				return nil, fmt.Errorf("pads has %d values for %d axes", len(pads), len(as))
			}
			full := make([]int, 2*r)
			for i, a := range as {
				full[a], full[r+a] = pads[i], pads[len(as)+i]
			}
			pads = full
		}
	}
	if len(pads) != 2*r {
		return nil, fmt.Errorf("pads has %d values for rank %d", len(pads), r)
	}
	if mode != "constant" {
		return one(n.padIndexed(x, pads, mode))
	}
	return []*val{n.padConst(x, pads[:r], pads[r:], value)}, nil
}

// padConst pads with value; negative pads crop.
func (n *node) padConst(x *val, low, high []int, value float64) *val {
	r := len(x.t.Shape)
	lo, hi := make([]int, r), make([]int, r)
	crop := false
	for i := 0; i < r; i++ {
		lo[i], hi[i] = max(low[i], 0), max(high[i], 0)
		crop = crop || low[i] < 0 || high[i] < 0
	}
	if crop {
		for i := 0; i < r; i++ {
			b, e := max(-low[i], 0), x.t.Shape[i]-max(-high[i], 0)
			if b > e {
				panic(internalError{fmt.Errorf("pads %v %v crop more than dim %d of %s", low, high, i, x.t)})
			}
			x = n.sliceAxis(x, i, b, e, 1)
		}
	}
	pad := false
	for i := 0; i < r; i++ {
		pad = pad || lo[i] > 0 || hi[i] > 0
	}
	if !pad {
		return x
	}
	return must(n.op("pad", ir.Attrs{"low": lo, "high": hi, "value": value}, x))
}

func convConstantOfShape(n *node) ([]*val, error) {
	if err := n.inputs(1, 1); err != nil {
		return nil, err
	}
	shape, err := n.knownInts(0, "shape")
	if err != nil {
		return nil, err
	}
	s, err := shapeOf(int64s(shape))
	if err != nil {
		return nil, err
	}
	t := ir.Type{DType: ir.F32, Shape: s}
	v := 0.0
	if a, ok := n.attrs["value"]; ok {
		c, err := n.src.decode(a.GetT())
		if err != nil {
			return nil, err
		}
		if c.Len() != 1 {
			return nil, fmt.Errorf("value must have one element")
		}
		t.DType, v = c.Type.DType, c.At(0)
	}
	return []*val{n.splatOf(t, v)}, nil
}

func convRange(n *node) ([]*val, error) {
	if err := n.inputs(3, 3); err != nil {
		return nil, err
	}
	var lim [3]*tensor.Tensor
	for i, what := range []string{"start", "limit", "delta"} {
		c, err := n.known(i, what)
		if err != nil {
			return nil, err
		}
		if c.Len() != 1 {
			return nil, fmt.Errorf("%s must be a scalar", what)
		}
		lim[i] = c
	}
	d := lim[0].Type.DType
	start, limit, delta := lim[0].At(0), lim[1].At(0), lim[2].At(0)
	for i, v := range []float64{start, limit, delta} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%s is %v; Range needs finite bounds", []string{"start", "limit", "delta"}[i], v)
		}
	}
	if delta == 0 {
		return nil, fmt.Errorf("delta is 0")
	}
	cf := max(0, ceilDiv(limit-start, delta))
	if err := checkFold(int(min(cf, 1<<40)), "Range's output"); err != nil {
		return nil, err
	}
	count := int(cf)
	c := tensor.New(ir.T(d, count))
	for i := 0; i < count; i++ {
		v := start + float64(i)*delta
		if c.F != nil {
			c.F[i] = tensor.RoundFloat(d, v)
		} else {
			c.I[i] = int64(lim[0].I[0]) + int64(i)*lim[2].I[0]
		}
	}
	return []*val{constant(c)}, nil
}

func ceilDiv(a, b float64) float64 {
	q := a / b
	if q == float64(int64(q)) {
		return q
	}
	if q > 0 {
		return float64(int64(q) + 1)
	}
	return float64(int64(q))
}

func convDropout(n *node) ([]*val, error) {
	if err := n.inputs(1, 3); err != nil {
		return nil, err
	}
	x := n.in[0]
	training := false
	if n.opset >= 12 && n.arg(2) != nil {
		c, err := n.known(2, "training_mode")
		if err != nil {
			return nil, err
		}
		training = c.At(0) != 0
	} else if n.opset < 7 {
		training = n.attrInt("is_test", 0) == 0
	}
	ratio := 0.5
	if n.opset >= 12 && n.arg(1) != nil {
		c, err := n.known(1, "ratio")
		if err != nil {
			return nil, err
		}
		ratio = c.At(0)
	} else {
		ratio = n.attrFloat("ratio", 0.5)
	}
	if training && ratio != 0 {
		return nil, unsupportedf("Dropout in training mode is random")
	}
	return []*val{x, n.splatOf(ir.Type{DType: ir.Bool, Shape: x.t.Shape}, 1)}, nil
}

func convEyeLike(n *node) ([]*val, error) {
	if err := n.inputs(1, 1); err != nil {
		return nil, err
	}
	x := n.in[0]
	if len(x.t.Shape) != 2 {
		return nil, fmt.Errorf("EyeLike needs a 2-D input, has %s", x.t)
	}
	d := x.t.DType
	if n.has("dtype") {
		var err error
		if d, err = dtypeOf(int32(n.attrInt("dtype", 0))); err != nil {
			return nil, err
		}
	}
	k := n.attrInt("k", 0)
	if err := checkFold(x.t.Shape.NumElements(), "EyeLike's output"); err != nil {
		return nil, err
	}
	c := tensor.New(ir.Type{DType: d, Shape: x.t.Shape.Clone()})
	rows, cols := x.t.Shape[0], x.t.Shape[1]
	for i := 0; i < rows; i++ {
		if j := i + k; j >= 0 && j < cols {
			if c.F != nil {
				c.F[i*cols+j] = 1
			} else {
				c.I[i*cols+j] = 1
			}
		}
	}
	return []*val{constant(c)}, nil
}

func convTrilu(n *node) ([]*val, error) {
	if err := n.inputs(1, 2); err != nil {
		return nil, err
	}
	x := n.in[0]
	r := len(x.t.Shape)
	if r < 2 {
		return nil, fmt.Errorf("Trilu needs rank ≥ 2, has %s", x.t)
	}
	k := 0
	if n.arg(1) != nil {
		c, err := n.known(1, "k")
		if err != nil {
			return nil, err
		}
		k = int(c.At(0))
	}
	rows, cols := x.t.Shape[r-2], x.t.Shape[r-1]
	upper := n.attrInt("upper", 1) != 0
	if err := checkFold(rows*cols, "Trilu's mask"); err != nil {
		return nil, err
	}
	m := tensor.New(ir.T(ir.Bool, rows, cols))
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			if upper && j-i >= k || !upper && j-i <= k {
				m.I[i*cols+j] = 1
			}
		}
	}
	return one(n.selectOp(constant(m), x, n.splat(x, 0)))
}

func convOneHot(n *node) ([]*val, error) {
	if err := n.inputs(3, 3); err != nil {
		return nil, err
	}
	idx, values := n.in[0], n.in[2]
	dc, err := n.known(1, "depth")
	if err != nil {
		return nil, err
	}
	if dc.Len() != 1 || values.t.Shape.NumElements() != 2 {
		return nil, fmt.Errorf("depth must be a scalar and values have two elements")
	}
	depth := int(dc.At(0))
	if depth <= 0 {
		return nil, fmt.Errorf("depth %d", depth)
	}
	r := len(idx.t.Shape) + 1
	a, err := axis(n.attrInt("axis", -1), r)
	if err != nil {
		return nil, err
	}
	out := append(idx.t.Shape[:a:a], append(ir.Shape{depth}, idx.t.Shape[a:]...)...)
	// Negative indices count from the end; the comparison is in i64.
	ix := n.cast(idx, ir.I64)
	if !idx.t.DType.IsFloat() || true {
		ix = must(n.selectOp(n.bin("lt", ix, n.splat(ix, 0)), n.bin("add", ix, n.splat(ix, float64(depth))), ix))
	}
	dims := []int{}
	for i := 0; i < r; i++ {
		if i != a {
			dims = append(dims, i)
		}
	}
	ib := must(n.op("broadcast_in_dim", ir.Attrs{"shape": []int(out.Clone()), "dims": dims}, ix))
	io := must(n.op("iota", ir.Attrs{"shape": []int(out.Clone()), "dim": a, "dtype": ir.I64}))
	vals := n.reshape(values, ir.Shape{2})
	off, on := n.reshape(n.sliceAxis(vals, 0, 0, 1, 1), ir.Shape{}), n.reshape(n.sliceAxis(vals, 0, 1, 2, 1), ir.Shape{})
	return one(n.selectOp(n.bin("eq", ib, io), on, off))
}

func convDepthToSpace(n *node) ([]*val, error) {
	if err := n.inputs(1, 1); err != nil {
		return nil, err
	}
	x := n.in[0]
	if len(x.t.Shape) != 4 {
		return nil, fmt.Errorf("needs a 4-D input, has %s", x.t)
	}
	bs := n.attrInt("blocksize", 0)
	N, C, H, W := x.t.Shape[0], x.t.Shape[1], x.t.Shape[2], x.t.Shape[3]
	if bs <= 0 || C%(bs*bs) != 0 {
		return nil, fmt.Errorf("blocksize %d does not divide %d channels", bs, C)
	}
	mode, err := n.attrChoice("mode", "DCR", "DCR", "CRD")
	if err != nil {
		return nil, err
	}
	c := C / (bs * bs)
	var t *val
	if mode == "DCR" {
		t = n.transpose(n.reshape(x, ir.Shape{N, bs, bs, c, H, W}), []int{0, 3, 4, 1, 5, 2})
	} else {
		t = n.transpose(n.reshape(x, ir.Shape{N, c, bs, bs, H, W}), []int{0, 1, 4, 2, 5, 3})
	}
	return []*val{n.reshape(t, ir.Shape{N, c, H * bs, W * bs})}, nil
}

func convSpaceToDepth(n *node) ([]*val, error) {
	if err := n.inputs(1, 1); err != nil {
		return nil, err
	}
	x := n.in[0]
	if len(x.t.Shape) != 4 {
		return nil, fmt.Errorf("needs a 4-D input, has %s", x.t)
	}
	bs := n.attrInt("blocksize", 0)
	N, C, H, W := x.t.Shape[0], x.t.Shape[1], x.t.Shape[2], x.t.Shape[3]
	if bs <= 0 || H%bs != 0 || W%bs != 0 {
		return nil, fmt.Errorf("blocksize %d does not divide %dx%d", bs, H, W)
	}
	t := n.transpose(n.reshape(x, ir.Shape{N, C, H / bs, bs, W / bs, bs}), []int{0, 3, 5, 1, 2, 4})
	return []*val{n.reshape(t, ir.Shape{N, C * bs * bs, H / bs, W / bs})}, nil
}
