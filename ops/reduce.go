package ops

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// forEach visits the elements of shape in row-major order with their flat index k and their
// offset in view v.
func forEach(shape []int, v view, f func(k, off int)) {
	n := ir.Shape(shape).NumElements()
	idx := make([]int, len(shape))
	off := v.off
	for k := 0; k < n; k++ {
		f(k, off)
		for i := len(shape) - 1; i >= 0; i-- {
			idx[i]++
			off += v.strides[i]
			if idx[i] < shape[i] {
				break
			}
			off -= idx[i] * v.strides[i]
			idx[i] = 0
		}
	}
}

// evalReduce is the driver of the reductions: each output starts at the identity fid (±inf
// standing for an integer dtype's max and min) and folds in its elements in row-major order.
// Visiting the operand in row-major order visits each output's elements in that order.
func evalReduce(f func(a, b float64) float64, i func(a, b int64) int64, fid float64) func([]*tensor.Tensor, ir.Attrs, ir.Type) (*tensor.Tensor, error) {
	return func(args []*tensor.Tensor, a ir.Attrs, out ir.Type) (*tensor.Tensor, error) {
		x, r, d := args[0], tensor.New(out), out.DType
		shape, axes := x.Type.Shape, a.Ints("axes")
		to := dense(reducedShape(shape, axes, true))
		for _, ax := range axes {
			to.strides[ax] = 0
		}
		if r.F != nil {
			for j := range r.F {
				r.F[j] = fid
			}
			forEach(shape, to, func(k, o int) { r.F[o] = f(r.F[o], x.F[k]) })
			for j, v := range r.F {
				r.F[j] = tensor.RoundFloat(d, v)
			}
			return r, nil
		}
		id := floatToInt(d, fid) // saturation maps ±inf to the dtype's max and min
		for j := range r.I {
			r.I[j] = id
		}
		forEach(shape, to, func(k, o int) { r.I[o] = i(r.I[o], x.I[k]) })
		for j, v := range r.I {
			r.I[j] = wrap(d, v)
		}
		return r, nil
	}
}
