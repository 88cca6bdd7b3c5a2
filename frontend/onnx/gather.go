package onnx

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
)

// Ops that pick elements by a run-time index, built exactly from comparisons with iota: gcomp's
// op table has no argmax or per-element gather, and these forms are exact (a selected element
// plus zeros, or a min over the positions that hold the maximum).

func init() {
	converters["ArgMax"] = argConv("reduce_max")
	converters["ArgMin"] = argConv("reduce_min")
	converters["Hardmax"] = convHardmax
	converters["GatherElements"] = convGatherElements
	converters["NegativeLogLikelihoodLoss"] = convNLL
	converters["SoftmaxCrossEntropyLoss"] = convSCE
	delete(refused, "ArgMax")
	delete(refused, "ArgMin")
	delete(refused, "Hardmax")
	delete(refused, "GatherElements")
	delete(refused, "NegativeLogLikelihoodLoss")
	delete(refused, "SoftmaxCrossEntropyLoss")
}

// argIndex returns the index of the first (or last) extreme of x along a, with a kept as size 1.
// NaN counts as the extreme, as numpy's argmax has it.
func (n *node) argIndex(x *val, a int, extreme string, last bool) *val {
	m, _ := n.broadcastLike(n.reduce(extreme, x, []int{a}, true), x.t)
	hit := n.bin("eq", x, m)
	if x.t.DType.IsFloat() {
		hit = n.bin("or", hit, n.bin("ne", x, x))
	}
	// The index is computed in i32 (a dim is below 2^31) and widened: the generated code's i64
	// reduce_min started from a wrong identity (see docs/onnx.md).
	idx := must(n.op("iota", ir.Attrs{"shape": []int(x.t.Shape.Clone()), "dim": a, "dtype": ir.I32}))
	if last {
		return n.cast(n.reduce("reduce_max", must(n.selectOp(hit, idx, scalar(ir.I32, -1))), []int{a}, true), ir.I64)
	}
	return n.cast(n.reduce("reduce_min", must(n.selectOp(hit, idx, scalar(ir.I32, float64(x.t.Shape[a])))), []int{a}, true), ir.I64)
}

func argConv(extreme string) converter {
	return func(n *node) ([]*val, error) {
		if err := n.inputs(1, 1); err != nil {
			return nil, err
		}
		x := n.in[0]
		if x.t.DType == ir.Bool {
			return nil, unsupportedf("%s of bool is not supported", n.p.GetOpType())
		}
		a, err := axis(n.attrInt("axis", 0), len(x.t.Shape))
		if err != nil {
			return nil, err
		}
		if x.t.Shape[a] == 0 {
			return nil, fmt.Errorf("%s over an empty axis", n.p.GetOpType())
		}
		y := n.argIndex(x, a, extreme, n.attrInt("select_last_index", 0) != 0)
		if n.attrInt("keepdims", 1) == 0 {
			s := append(x.t.Shape[:a:a], x.t.Shape[a+1:]...)
			y = n.reshape(y, s)
		}
		return []*val{y}, nil
	}
}

func convHardmax(n *node) ([]*val, error) {
	if err := n.inputs(1, 1); err != nil {
		return nil, err
	}
	x := n.in[0]
	if !x.t.DType.IsFloat() {
		return nil, fmt.Errorf("Hardmax needs floats, has %s", x.t)
	}
	r := len(x.t.Shape)
	def := -1
	if n.opset < 13 {
		def = 1
	}
	a, err := axis(n.attrInt("axis", def), r)
	if err != nil {
		return nil, err
	}
	in := x
	if n.opset < 13 {
		lead := numElements(x.t.Shape, allAxes(a))
		in = n.reshape(x, ir.Shape{lead, x.t.Shape.NumElements() / max(lead, 1)})
		a = 1
	}
	i, _ := n.broadcastLike(n.argIndex(in, a, "reduce_max", false), in.t)
	idx := must(n.op("iota", ir.Attrs{"shape": []int(in.t.Shape.Clone()), "dim": a, "dtype": ir.I64}))
	y := must(n.selectOp(n.bin("eq", i, idx), n.splat(x, 1), n.splat(x, 0)))
	return []*val{n.reshape(y, x.t.Shape)}, nil
}

// pick is GatherElements: out[..., i_a, ...] = x[..., idx[..., i_a, ...], ...] along a, with
// idx's shape (each dim at most x's). An index matching no position gives 0. With wrap, negative
// indices count from the end.
func (n *node) pick(x, idx *val, a int, wrap bool) (*val, error) {
	r := len(x.t.Shape)
	if len(idx.t.Shape) != r || !idx.t.DType.IsInt() {
		return nil, fmt.Errorf("indices %s do not fit data %s", idx.t, x.t)
	}
	s := idx.t.Shape
	d := x.t.Shape[a]
	for i := range s {
		if i != a && s[i] > x.t.Shape[i] {
			return nil, fmt.Errorf("indices %s do not fit data %s", idx.t, x.t)
		}
	}
	// Crop x to idx's shape off the axis.
	for i := range s {
		if i != a && s[i] < x.t.Shape[i] {
			x = n.sliceAxis(x, i, 0, s[i], 1)
		}
	}
	ix := n.cast(idx, ir.I64)
	if wrap {
		ix = must(n.selectOp(n.bin("lt", ix, n.splat(ix, 0)), n.bin("add", ix, n.splat(ix, float64(d))), ix))
	}
	// E = s[:a+1] + [d] + s[a+1:]: the index's position, then the candidate position.
	e := append(append(s[:a+1:a+1], d), s[a+1:]...)
	// idx's dims skip the candidate dim a+1; x's axis a becomes it.
	idims := insertDim(r, a+1)
	xdims := insertDim(r, a+1)
	xdims[a] = a + 1
	ib := must(n.op("broadcast_in_dim", ir.Attrs{"shape": []int(e.Clone()), "dims": idims}, ix))
	xb := must(n.op("broadcast_in_dim", ir.Attrs{"shape": []int(e.Clone()), "dims": xdims}, x))
	pos := must(n.op("iota", ir.Attrs{"shape": []int(e.Clone()), "dim": a + 1, "dtype": ir.I64}))
	sel := must(n.selectOp(n.bin("eq", ib, pos), xb, n.splat(x, 0)))
	return n.reduce("reduce_sum", sel, []int{a + 1}, false), nil
}

// insertDim maps the dims of a rank-r tensor into rank r+1 with a new dim at position at.
func insertDim(r, at int) []int {
	dims := make([]int, r)
	for i := range dims {
		dims[i] = i
		if i >= at {
			dims[i] = i + 1
		}
	}
	return dims
}

func convGatherElements(n *node) ([]*val, error) {
	if err := n.inputs(2, 2); err != nil {
		return nil, err
	}
	x := n.in[0]
	if x.t.DType == ir.Bool {
		return nil, unsupportedf("GatherElements of bool is not supported")
	}
	a, err := axis(n.attrInt("axis", 0), len(x.t.Shape))
	if err != nil {
		return nil, err
	}
	return one(n.pick(x, n.in[1], a, true))
}

// nll is NegativeLogLikelihoodLoss over input [N, C, d...] and target [N, d...].
func (n *node) nll(x, target, weight *val) (*val, error) {
	if !x.t.DType.IsFloat() || len(x.t.Shape) < 2 || len(target.t.Shape) != len(x.t.Shape)-1 {
		return nil, fmt.Errorf("input %s and target %s do not fit", x.t, target.t)
	}
	reduction, err := n.attrChoice("reduction", "mean", "none", "sum", "mean")
	if err != nil {
		return nil, err
	}
	ts := append(append(target.t.Shape[:1:1], 1), target.t.Shape[1:]...)
	t := n.reshape(target, ts)
	picked, err := n.pick(x, t, 1, false)
	if err != nil {
		return nil, err
	}
	var w *val
	if weight != nil {
		wb, err := n.channel(n.cast(weight, x.t.DType), x)
		if err != nil {
			return nil, err
		}
		if w, err = n.pick(wb, t, 1, false); err != nil {
			return nil, err
		}
	} else {
		w, _ = n.broadcastLike(n.splat(x, 1), picked.t)
	}
	if n.has("ignore_index") {
		keep := n.bin("ne", t, scalar(t.t.DType, float64(n.attrInt("ignore_index", 0))))
		w = must(n.selectOp(keep, w, n.splat(w, 0)))
	}
	loss := n.reshape(n.unary("neg", n.bin("mul", picked, w)), target.t.Shape)
	all := allAxes(len(loss.t.Shape))
	switch reduction {
	case "sum":
		return n.reduce("reduce_sum", loss, all, false), nil
	case "mean":
		sum := n.reduce("reduce_sum", loss, all, false)
		return n.bin("div", sum, n.reduce("reduce_sum", w, allAxes(len(w.t.Shape)), false)), nil
	}
	return loss, nil
}

func convNLL(n *node) ([]*val, error) {
	if err := n.inputs(2, 3); err != nil {
		return nil, err
	}
	return one(n.nll(n.in[0], n.in[1], n.arg(2)))
}

func convSCE(n *node) ([]*val, error) {
	if err := n.inputs(2, 3); err != nil {
		return nil, err
	}
	x := n.in[0]
	if !x.t.DType.IsFloat() || len(x.t.Shape) < 2 {
		return nil, fmt.Errorf("scores %s", x.t)
	}
	z := n.bin("sub", x, n.reduce("reduce_max", x, []int{1}, true))
	logp := n.bin("sub", z, n.unary("log", n.reduce("reduce_sum", n.unary("exp", z), []int{1}, true)))
	loss, err := n.nll(logp, n.in[1], n.arg(2))
	if err != nil {
		return nil, err
	}
	return []*val{loss, logp}, nil
}
