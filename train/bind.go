package train

import (
	"fmt"
	"math"
	"slices"

	"github.com/gcomp/gcomp/data"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// scanRows is how many rows bind reads at a time while it checks a dataset's targets.
const scanRows = 4096

// bind checks d against the model, reading every row once, and returns the dataset Fit reads:
// d itself when its rows are what the model takes, else a view converting each batch (dtype,
// and the shape of a row when the element count matches). flatten says the loader must give
// the inputs as [B, K] (images f32[B,1,H,W] for a model taking f32[B,H*W]).
func (m *Model) bind(d data.Dataset) (out data.Dataset, flatten bool, err error) {
	name := data.Name(d)
	n := d.Len()
	if n <= 0 {
		return nil, false, fmt.Errorf("%s: no rows", name)
	}
	x0, y0, err := data.ReadRows(d, []int{0})
	if err != nil {
		return nil, false, err
	}
	in, tt := m.inType, m.targetType
	conv := &converted{Dataset: d, x: x0.Type.DType, y: y0.Type.DType, xrow: in.Shape[1:], yrow: tt.Shape[1:]}
	xrow, yrow := x0.Type.Shape[1:], y0.Type.Shape[1:]
	reshape := false // a row's input takes the model's shape (one element per row: [N] for [B,1])
	switch {
	case slices.Equal(xrow, in.Shape[1:]):
	case in.Shape.Rank() == 2 && xrow.NumElements() == in.Shape[1] && xrow.Rank() > 1:
		flatten = true // the loader's Flatten, as for images
	case in.Shape.Rank() == 2 && xrow.NumElements() == in.Shape[1]:
		reshape = true
	default:
		return nil, false, fmt.Errorf("%s: a row's input is %s%v; the model's input %s is %s, which wants %v per row",
			name, x0.Type.DType, []int(xrow), m.Input, in, []int(in.Shape[1:]))
	}
	if x0.Type.DType != in.DType {
		if !in.DType.IsFloat() && x0.Type.DType.IsFloat() {
			return nil, false, fmt.Errorf("%s: the inputs are %s, the model's input %s is %s", name, x0.Type.DType, m.Input, in)
		}
		conv.x = in.DType
	}
	if yrow.NumElements() != tt.Shape[1:].NumElements() {
		what := "prediction " + m.Output + " " + m.predType.String()
		if m.Loss.Class() {
			what = "class index per row"
		}
		return nil, false, fmt.Errorf("%s: a row's target is %s%v, %s wants one %s", name, y0.Type.DType, []int(yrow), m.Loss.Name, what)
	}
	if y0.Type.DType != tt.DType {
		conv.y = tt.DType
	}
	// Every target, checked once, so that a bad row is named before training starts.
	classes := 0
	if m.Loss.Class() {
		classes = m.predType.Shape[1]
	}
	all := make([]int, 0, scanRows)
	for lo := 0; lo < n; lo += scanRows {
		all = all[:0]
		for i := lo; i < min(lo+scanRows, n); i++ {
			all = append(all, i)
		}
		y, err := data.ReadTargets(d, all)
		if err != nil {
			return nil, false, err
		}
		if y.Type.Shape.Rank() == 0 || y.Type.Shape[0] != len(all) || y.Len() != len(all)*yrow.NumElements() {
			return nil, false, fmt.Errorf("%s: asked for the targets of %d rows, returned %s", name, len(all), y.Type)
		}
		per := yrow.NumElements()
		for k := range len(all) * per {
			v := y.At(k)
			row := func() string { return data.RowName(d, lo+k/max(per, 1)) } // only for a message
			switch {
			case math.IsNaN(v):
				return nil, false, fmt.Errorf("%s: target is NaN; %s cannot take NaN targets", row(), m.Loss.Name)
			case classes > 0 && (v != math.Trunc(v) || math.IsInf(v, 0)):
				return nil, false, fmt.Errorf("%s: label %v is not a class index", row(), v)
			case classes > 0 && (v < 0 || v >= float64(classes)) && (m.Loss.IgnoreIndex == nil || v != float64(*m.Loss.IgnoreIndex)):
				return nil, false, fmt.Errorf("%s: label %v, the model's logits have %d classes", row(), v, classes) // %v: int64(1e30) would wrap
			}
		}
	}
	if !reshape && conv.x == x0.Type.DType && conv.y == y0.Type.DType && slices.Equal(yrow, tt.Shape[1:]) {
		return d, flatten, nil
	}
	if flatten {
		conv.xrow = xrow // the loader flattens
	}
	return conv, flatten, nil
}

// converted is a dataset whose batches are converted to the model's dtypes and row shapes.
type converted struct {
	data.Dataset
	x, y       ir.DType
	xrow, yrow ir.Shape
}

func (c *converted) String() string { return data.Name(c.Dataset) }

func (c *converted) RowName(i int) string { return data.RowName(c.Dataset, i) }

func (c *converted) Rows(rs []int) (x, y *tensor.Tensor, err error) {
	if x, y, err = data.ReadRows(c.Dataset, rs); err != nil {
		return nil, nil, err
	}
	return convert(x, c.x, c.xrow), convert(y, c.y, c.yrow), nil
}

// convert returns t as dtype d with rows of shape row (of the same element count).
func convert(t *tensor.Tensor, d ir.DType, row ir.Shape) *tensor.Tensor {
	shape := append(ir.Shape{t.Type.Shape[0]}, row...)
	if t.Type.DType == d {
		c := *t
		c.Type = ir.Type{DType: d, Shape: shape}
		return &c
	}
	out := tensor.New(ir.Type{DType: d, Shape: shape})
	for i := range t.Len() {
		if out.F != nil {
			out.F[i] = tensor.RoundFloat(d, t.At(i))
		} else {
			out.I[i] = tensor.WrapInt(d, int64(t.At(i)))
		}
	}
	return out
}
