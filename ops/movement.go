package ops

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// Every movement op is one strided copy: a view names the elements of a flat buffer, element
// (i0, ..., ik) being at off + Σ ij·strides[j]. A stride of 0 repeats (broadcast).
type view struct {
	off     int
	strides []int
}

func dense(s ir.Shape) view { return view{0, s.Strides()} }

// copyView copies the elements of shape from src's view to dst's view.
func copyView[E float64 | int64](dst []E, dv view, src []E, sv view, shape []int) {
	if ir.Shape(shape).NumElements() == 0 {
		return
	}
	if len(shape) == 0 {
		dst[dv.off] = src[sv.off]
		return
	}
	k := len(shape) - 1
	n, ds, ss := shape[k], dv.strides[k], sv.strides[k]
	idx := make([]int, k)
	for d, s := dv.off, sv.off; ; {
		for j := 0; j < n; j++ {
			dst[d+j*ds] = src[s+j*ss]
		}
		// Advance the odometer over the outer dims.
		i := k - 1
		for ; i >= 0; i-- {
			idx[i]++
			d += dv.strides[i]
			s += sv.strides[i]
			if idx[i] < shape[i] {
				break
			}
			d -= idx[i] * dv.strides[i]
			s -= idx[i] * sv.strides[i]
			idx[i] = 0
		}
		if i < 0 {
			return
		}
	}
}

// copyTensor copies shape's elements between views of two tensors of one kind, in parallel over
// the outermost dimension.
func copyTensor(dst *tensor.Tensor, dv view, src *tensor.Tensor, sv view, shape []int) {
	if len(shape) == 0 || ir.Shape(shape).NumElements() < 2*grain {
		copyKind(dst, dv, src, sv, shape)
		return
	}
	parallel(shape[0], func(i int) {
		d := view{dv.off + i*dv.strides[0], dv.strides[1:]}
		s := view{sv.off + i*sv.strides[0], sv.strides[1:]}
		copyKind(dst, d, src, s, shape[1:])
	})
}

func copyKind(dst *tensor.Tensor, dv view, src *tensor.Tensor, sv view, shape []int) {
	if dst.F != nil {
		copyView(dst.F, dv, src.F, sv, shape)
	} else {
		copyView(dst.I, dv, src.I, sv, shape)
	}
}

// gatherView returns the result of copying x's view with the result's shape.
func gatherView(x *tensor.Tensor, sv view, out ir.Type) *tensor.Tensor {
	r := tensor.Empty(out)
	copyTensor(r, dense(out.Shape), x, sv, out.Shape)
	return r
}

func evalReshape(args []*tensor.Tensor, _ ir.Attrs, out ir.Type) (*tensor.Tensor, error) {
	r := args[0].Clone()
	r.Type = ir.Type{DType: out.DType, Shape: out.Shape.Clone()}
	return r, nil
}

func evalTranspose(args []*tensor.Tensor, a ir.Attrs, out ir.Type) (*tensor.Tensor, error) {
	x := args[0]
	in := x.Type.Shape.Strides()
	st := make([]int, len(out.Shape))
	for i, p := range a.Ints("perm") {
		st[i] = in[p]
	}
	return gatherView(x, view{0, st}, out), nil
}

func evalBroadcast(args []*tensor.Tensor, a ir.Attrs, out ir.Type) (*tensor.Tensor, error) {
	x := args[0]
	in := x.Type.Shape.Strides()
	st := make([]int, len(out.Shape))
	for i, d := range a.Ints("dims") {
		if x.Type.Shape[i] != 1 {
			st[d] = in[i]
		}
	}
	return gatherView(x, view{0, st}, out), nil
}

func evalSlice(args []*tensor.Tensor, a ir.Attrs, out ir.Type) (*tensor.Tensor, error) {
	x := args[0]
	v := dense(x.Type.Shape)
	step := sliceStride(a, len(out.Shape))
	for i, s := range a.Ints("start") {
		v.off += s * v.strides[i]
		v.strides[i] *= step[i]
	}
	return gatherView(x, v, out), nil
}

func evalConcat(args []*tensor.Tensor, a ir.Attrs, out ir.Type) (*tensor.Tensor, error) {
	r, axis := tensor.New(out), a.Int("axis", 0)
	dv := dense(out.Shape)
	for _, x := range args {
		copyTensor(r, dv, x, dense(x.Type.Shape), x.Type.Shape)
		dv.off += x.Type.Shape[axis] * dv.strides[axis]
	}
	return r, nil
}

func evalPad(args []*tensor.Tensor, a ir.Attrs, out ir.Type) (*tensor.Tensor, error) {
	x, r := args[0], tensor.New(out)
	fill(r, a.Float("value", 0))
	dv := dense(out.Shape)
	for i, l := range a.Ints("low") {
		dv.off += l * dv.strides[i]
	}
	copyTensor(r, dv, x, dense(x.Type.Shape), x.Type.Shape)
	return r, nil
}

// fill sets every element of r to v converted as cast converts a float.
func fill(r *tensor.Tensor, v float64) {
	if r.F != nil {
		f := tensor.RoundFloat(r.Type.DType, v)
		for j := range r.F {
			r.F[j] = f
		}
		return
	}
	n := floatToInt(r.Type.DType, v)
	for j := range r.I {
		r.I[j] = n
	}
}

func evalGather(args []*tensor.Tensor, _ ir.Attrs, out ir.Type) (*tensor.Tensor, error) {
	table, idx := args[0], args[1]
	rows := table.Type.Shape[0]
	row := 1
	for _, d := range table.Type.Shape[1:] {
		row *= d
	}
	r := tensor.New(out)
	for j, k := range idx.I {
		if k < 0 || k >= int64(rows) {
			return nil, fmt.Errorf("index %d (element %d of the indices) is out of range [0, %d) for table %s", k, j, rows, table.Type)
		}
		copyKind(r, view{j * row, []int{1}}, table, view{int(k) * row, []int{1}}, []int{row})
	}
	return r, nil
}

func evalIota(_ []*tensor.Tensor, a ir.Attrs, out ir.Type) (*tensor.Tensor, error) {
	r, dim := tensor.New(out), a.Int("dim", 0)
	stride, size := out.Shape.Strides()[dim], out.Shape[dim]
	for j := 0; j < r.Len(); j++ {
		k := int64(j / stride % size)
		if r.F != nil {
			r.F[j] = intToFloat(out.DType, k)
		} else {
			r.I[j] = wrap(out.DType, k)
		}
	}
	return r, nil
}

func evalConstant(_ []*tensor.Tensor, a ir.Attrs, out ir.Type) (*tensor.Tensor, error) {
	r := tensor.Empty(out)
	ivals, isInts := a["value"].([]int)
	fvals := a.Floats("value")
	n := r.Len()
	if len(fvals) == 1 && n > 0 { // a splat: convert element 0, then copy it
		n = 1
	}
	for j := range n {
		k := j
		if len(fvals) == 1 {
			k = 0
		}
		switch {
		case isInts && r.F != nil:
			r.F[j] = intToFloat(out.DType, int64(ivals[k]))
		case isInts:
			r.I[j] = int64(ivals[k])
		case r.F != nil:
			r.F[j] = tensor.RoundFloat(out.DType, fvals[k])
		default:
			r.I[j] = int64(fvals[k])
		}
	}
	if n == 1 {
		splat(r)
	}
	return r, nil
}

// splat copies element 0 of r to every element.
func splat(r *tensor.Tensor) {
	if r.F != nil {
		for j := range r.F {
			r.F[j] = r.F[0]
		}
		return
	}
	for j := range r.I {
		r.I[j] = r.I[0]
	}
}
