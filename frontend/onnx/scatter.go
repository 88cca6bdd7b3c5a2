package onnx

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// The scatters, as sums (products for reduction "mul") of the updates selected by a comparison
// of their target index with iota: a target no update names keeps data's value. ONNX leaves
// duplicate targets undefined without a reduction; here they add.

func init() {
	converters["ScatterElements"] = convScatterElements
	converters["Scatter"] = convScatterElements // opset 9 and 10: ScatterElements's older name
	converters["ScatterND"] = convScatterND
	converters["MaxUnpool"] = convMaxUnpool
	for _, op := range []string{"ScatterElements", "Scatter", "ScatterND", "MaxUnpool"} {
		delete(refused, op)
	}
}

// gathered folds the updates each target selects (hitE) over axis a: their product for
// reduction "mul", else their sum.
func (n *node) gathered(hitE, ub *val, a int) (*val, error) {
	red, err := n.attrChoice("reduction", "none", "none", "add", "mul")
	if err != nil {
		return nil, err
	}
	if red == "mul" {
		return n.reduce("reduce_prod", must(n.selectOp(hitE, ub, n.splat(ub, 1))), []int{a}, false), nil
	}
	return n.reduce("reduce_sum", must(n.selectOp(hitE, ub, n.splat(ub, 0))), []int{a}, false), nil
}

// combine merges data with the folded updates and the per-target count of updates hit.
func (n *node) combine(data, folded, hit *val) (*val, error) {
	any := n.bin("gt", hit, n.splat(hit, 0))
	switch n.attrString("reduction", "none") {
	case "add":
		return n.selectOp(any, n.bin("add", data, folded), data)
	case "mul":
		return n.selectOp(any, n.bin("mul", data, folded), data)
	}
	return n.selectOp(any, folded, data)
}

func convScatterElements(n *node) ([]*val, error) {
	if err := n.inputs(3, 3); err != nil {
		return nil, err
	}
	x, idx, upd := n.in[0], n.in[1], n.in[2]
	r := len(x.t.Shape)
	a, err := axis(n.attrInt("axis", 0), r)
	if err != nil {
		return nil, err
	}
	if x.t.DType == ir.Bool || upd.t.DType != x.t.DType || !idx.t.DType.IsInt() || !idx.t.Shape.Equal(upd.t.Shape) || len(idx.t.Shape) != r {
		return nil, fmt.Errorf("data %s, indices %s and updates %s do not fit", x.t, idx.t, upd.t)
	}
	if err := n.checkKnownIndices(idx, x.t, func(int) (int, string) { return a, "axis" }); err != nil {
		return nil, err
	}
	return n.scatterElements(x, idx, upd, a)
}

// scatterElements is ScatterElements along axis a, its operands checked.
func (n *node) scatterElements(x, idx, upd *val, a int) ([]*val, error) {
	r := len(x.t.Shape)
	d := x.t.Shape[a]
	s := upd.t.Shape
	for i := range s {
		if i != a && s[i] > x.t.Shape[i] {
			return nil, fmt.Errorf("updates %s do not fit data %s", upd.t, x.t)
		}
	}
	// E = s[:a+1] + [d] + s[a+1:]: the update's position j along a, then the target p.
	e := append(append(s[:a+1:a+1], d), s[a+1:]...)
	if err := checkFold(e.NumElements(), "the scatter's comparison"); err != nil {
		return nil, err
	}
	ix := n.cast(idx, ir.I64)
	ix = must(n.selectOp(n.bin("lt", ix, n.splat(ix, 0)), n.bin("add", ix, n.splat(ix, float64(d))), ix))
	ix = n.checkedIndex(ix, d)
	dims := insertDim(r, a+1)
	ib := must(n.op("broadcast_in_dim", ir.Attrs{"shape": []int(e.Clone()), "dims": dims}, ix))
	ub := must(n.op("broadcast_in_dim", ir.Attrs{"shape": []int(e.Clone()), "dims": dims}, upd))
	pos := must(n.op("iota", ir.Attrs{"shape": []int(e.Clone()), "dim": a + 1, "dtype": ir.I64}))
	hitE := n.bin("eq", ib, pos)
	sum, err := n.gathered(hitE, ub, a)
	if err != nil {
		return nil, err
	}
	cnt := n.reduce("reduce_sum", must(n.selectOp(hitE, scalar(ir.I32, 1), scalar(ir.I32, 0))), []int{a}, false)
	// sum and cnt have s's shape with d along a; pad the other dims up to data's.
	lo, hi := make([]int, r), make([]int, r)
	for i := range hi {
		hi[i] = x.t.Shape[i] - sum.t.Shape[i]
	}
	return one(n.combine(x, n.padConst(sum, lo, hi, 0), n.padConst(cnt, lo, hi, 0)))
}

func convScatterND(n *node) ([]*val, error) {
	if err := n.inputs(3, 3); err != nil {
		return nil, err
	}
	x, idx, upd := n.in[0], n.in[1], n.in[2]
	ri := len(idx.t.Shape)
	if ri < 1 || !idx.t.DType.IsInt() || x.t.DType == ir.Bool || upd.t.DType != x.t.DType {
		return nil, fmt.Errorf("data %s, indices %s and updates %s do not fit", x.t, idx.t, upd.t)
	}
	q := idx.t.Shape[ri-1]
	if q > len(x.t.Shape) {
		return nil, fmt.Errorf("index depth %d exceeds data %s", q, x.t)
	}
	lead, rest := idx.t.Shape[:ri-1], x.t.Shape[q:]
	if !upd.t.Shape.Equal(append(lead.Clone(), rest...)) {
		return nil, fmt.Errorf("updates %s, want %v", upd.t, append(lead.Clone(), rest...))
	}
	if err := n.checkKnownIndices(idx, x.t, func(j int) (int, string) { return j % q, "dim" }); err != nil {
		return nil, err
	}
	// Linear target row of each update, over data's first q dims.
	ix := n.cast(idx, ir.I64)
	rows := 1
	var lin *val
	for k := q - 1; k >= 0; k-- {
		dim := x.t.Shape[k]
		c := n.reshape(n.sliceAxis(ix, ri-1, k, k+1, 1), lead)
		c = must(n.selectOp(n.bin("lt", c, n.splat(c, 0)), n.bin("add", c, n.splat(c, float64(dim))), c))
		c = n.checkedIndex(c, dim)
		term := n.bin("mul", c, n.splat(c, float64(rows)))
		if lin == nil {
			lin = term
		} else {
			lin = n.bin("add", lin, term)
		}
		rows *= dim
	}
	if lin == nil {
		return nil, unsupportedf("ScatterND with an index depth of 0 is not supported")
	}
	m := lead.NumElements()
	restN := rest.NumElements()
	if err := checkFold(m*rows*max(restN, 1), "the scatter's comparison"); err != nil {
		return nil, err
	}
	// E = [m, rows, rest]: update u, target row p.
	l := n.reshape(lin, ir.Shape{m})
	u := n.reshape(upd, ir.Shape{m, restN})
	e := ir.Shape{m, rows, restN}
	lb := must(n.op("broadcast_in_dim", ir.Attrs{"shape": []int(e.Clone()), "dims": []int{0}}, l))
	ub := must(n.op("broadcast_in_dim", ir.Attrs{"shape": []int(e.Clone()), "dims": []int{0, 2}}, u))
	pos := must(n.op("iota", ir.Attrs{"shape": []int(e.Clone()), "dim": 1, "dtype": ir.I64}))
	hitE := n.bin("eq", lb, pos)
	sum, err := n.gathered(hitE, ub, 0)
	if err != nil {
		return nil, err
	}
	sum = n.reshape(sum, x.t.Shape)
	cnt := n.reshape(n.reduce("reduce_sum", must(n.selectOp(hitE, scalar(ir.I32, 1), scalar(ir.I32, 0))), []int{0}, false), x.t.Shape)
	return one(n.combine(x, sum, cnt))
}

func init() {
	converters["ReverseSequence"] = convReverseSequence
	delete(refused, "ReverseSequence")
}

// convReverseSequence picks, along the time axis, position len[b]-1-t for t < len[b] and t
// otherwise (a per-element gather by an index computed from sequence_lens).
func convReverseSequence(n *node) ([]*val, error) {
	if err := n.inputs(2, 2); err != nil {
		return nil, err
	}
	x, lens := n.in[0], n.in[1]
	r := len(x.t.Shape)
	if r < 2 || x.t.DType == ir.Bool {
		return nil, fmt.Errorf("ReverseSequence of %s", x.t)
	}
	ta, ba := n.attrInt("time_axis", 0), n.attrInt("batch_axis", 1)
	if ta < 0 || ta > 1 || ba < 0 || ba > 1 || ta == ba {
		return nil, fmt.Errorf("time_axis %d and batch_axis %d must be 0 and 1", ta, ba)
	}
	if len(lens.t.Shape) != 1 || lens.t.Shape[0] != x.t.Shape[ba] || !lens.t.DType.IsInt() {
		return nil, fmt.Errorf("sequence_lens %s does not fit %s", lens.t, x.t)
	}
	l := must(n.opWant("broadcast_in_dim", ir.Attrs{"shape": []int(x.t.Shape.Clone()), "dims": []int{ba}}, x.t.Sym, n.cast(lens, ir.I64)))
	t := must(n.op("iota", ir.Attrs{"shape": []int(x.t.Shape.Clone()), "dim": ta, "dtype": ir.I64}))
	rev := n.bin("sub", n.bin("sub", l, n.splat(l, 1)), t)
	idx := must(n.selectOp(n.bin("lt", t, l), rev, t))
	return one(n.pick(x, idx, ta, false))
}

// convMaxUnpool scatters x to the flat positions idx names (MaxPool's Indices: over the whole
// output, of the shape the pooling's inverse gives) in zeros of that shape; an output_shape
// input larger than it pads the result at the high end, as ONNX's tests have it.
func convMaxUnpool(n *node) ([]*val, error) {
	if err := n.inputs(2, 3); err != nil {
		return nil, err
	}
	x, idx := n.in[0], n.in[1]
	sp := len(x.t.Shape) - 2
	if sp < 1 || !idx.t.DType.IsInt() || !idx.t.Shape.Equal(x.t.Shape) || x.t.DType == ir.Bool {
		return nil, fmt.Errorf("MaxUnpool wants N×C×spatial data and indices of its shape, has %s and %s", x.t, idx.t)
	}
	kernel, ok := n.attrInts("kernel_shape")
	if !ok || len(kernel) != sp {
		return nil, fmt.Errorf("kernel_shape %v for %d spatial dims", kernel, sp)
	}
	strides, err := n.spatialInts("strides", 1, sp)
	if err != nil {
		return nil, err
	}
	pads, err := n.spatialInts("pads", 0, 2*sp)
	if err != nil {
		return nil, err
	}
	shape := x.t.Shape[:2].Clone()
	for i := 0; i < sp; i++ {
		d := (x.t.Shape[2+i]-1)*strides[i] + kernel[i] - pads[i] - pads[sp+i]
		if d < 1 {
			return nil, fmt.Errorf("the output's spatial dim %d would be %d", i, d)
		}
		shape = append(shape, d)
	}
	if _, err := shapeOf(int64s(shape)); err != nil {
		return nil, err
	}
	total, m := shape.NumElements(), x.t.Shape.NumElements()
	flat := func(v *val) *val { return n.reshape(v, ir.Shape{1, m}) }
	outs, err := n.scatterElements(n.splatOf(ir.Type{DType: x.t.DType, Shape: ir.Shape{1, total}}, 0), flat(idx), flat(x), 1)
	if err != nil {
		return nil, err
	}
	y := n.reshape(outs[0], shape)
	if n.arg(2) == nil {
		return []*val{y}, nil
	}
	want, err := n.knownInts(2, "output_shape")
	if err != nil {
		return nil, err
	}
	if len(want) != len(shape) {
		return nil, fmt.Errorf("output_shape %v has rank %d, the output %d", want, len(want), len(shape))
	}
	lo, hi := make([]int, len(shape)), make([]int, len(shape))
	for i := range shape {
		if hi[i] = want[i] - shape[i]; hi[i] < 0 || (i < 2 && hi[i] != 0) {
			return nil, unsupportedf("output_shape %v smaller than the unpooled %v is not supported", want, []int(shape))
		}
	}
	return []*val{n.padConst(y, lo, hi, 0)}, nil
}

// checkKnownIndices checks a scatter's indices where import knows them (a constant or an
// initializer): element j indexes dim target(j) of data, and must lie in [-size, size).
func (n *node) checkKnownIndices(idx *val, data ir.Type, target func(j int) (int, string)) error {
	var k *tensor.Tensor
	switch {
	case idx.sizes != nil:
		return sizesRefused(idx, "an index")
	case idx.c != nil:
		k = idx.c
	case idx.w != nil:
		var err error
		if k, err = n.src.value(idx.w); err != nil {
			return err
		}
	}
	if k == nil {
		return nil
	}
	for j, v := range k.I {
		a, what := target(j)
		if dim := int64(data.Shape[a]); v < -dim || v >= dim {
			return fmt.Errorf("index %d (element %d of the indices) is out of range [%d, %d) for %s %d of data %s", v, j, -dim, dim, what, a, data)
		}
	}
	return nil
}

// checkedIndex is the i64 index c (negative ones already wrapped) passed through a gather from
// iota(dim): the same values, but one outside [0, dim) is an error as Gather's is (at import when
// c is known, when the model runs otherwise) instead of a target no comparison matches, an
// update silently dropped.
func (n *node) checkedIndex(c *val, dim int) *val {
	table := must(n.op("iota", ir.Attrs{"shape": []int{dim}, "dim": 0, "dtype": ir.I64}))
	return must(n.op("gather", nil, table, c))
}
