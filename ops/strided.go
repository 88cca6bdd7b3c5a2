package ops

import "github.com/gcomp/gcomp/ir"

// StridedView describes v, a chain of views (reshape, transpose, broadcast_in_dim, slice) over
// the first value below them that is not a view (base, read as a contiguous row-major buffer), as
// one strided access: element (i0, i1, ...) of v is element offset + Σ i_d·strides[d] of base. ok
// is false when some reshape merges dims that are not contiguous in base, which no strides
// express. A value that is no view is its own base with row-major strides.
func StridedView(v *ir.Value) (base *ir.Value, offset int, strides []int, ok bool) {
	switch v.Op {
	case "reshape", "transpose", "broadcast_in_dim", "slice":
	default:
		return v, 0, v.Type.Shape.Strides(), true
	}
	base, offset, st, ok := StridedView(v.Args[0])
	if !ok {
		return nil, 0, nil, false
	}
	in := v.Args[0].Type.Shape
	out := v.Type.Shape
	switch v.Op {
	case "transpose":
		perm := v.Attrs.Ints("perm")
		strides = make([]int, len(perm))
		for i, p := range perm {
			strides[i] = st[p]
		}
	case "broadcast_in_dim":
		strides = make([]int, len(out)) // new dims repeat: stride 0
		for i, d := range v.Attrs.Ints("dims") {
			if in[i] == out[d] {
				strides[d] = st[i]
			}
		}
	case "slice":
		start, step := v.Attrs.Ints("start"), v.Attrs.Ints("stride")
		strides = make([]int, len(st))
		for i := range st {
			offset += start[i] * st[i]
			s := 1
			if step != nil {
				s = step[i]
			}
			strides[i] = st[i] * s
		}
	case "reshape":
		if strides, ok = reshapeStrides(in, st, out); !ok {
			return nil, 0, nil, false
		}
	}
	return base, offset, strides, true
}

// reshapeStrides gives the strides of a reshape of a strided tensor, as NumPy's no-copy reshape:
// groups of input dims and output dims with equal products map onto each other, and a group of
// input dims must be contiguous (each stride its inner neighbour's times its size) to be split.
// Dims of size 1 take any stride.
func reshapeStrides(in ir.Shape, st []int, out ir.Shape) ([]int, bool) {
	var id, is []int // the input without size-1 dims
	for i, n := range in {
		if n != 1 {
			id, is = append(id, n), append(is, st[i])
		}
	}
	strides := make([]int, len(out))
	i, o := 0, 0
	for o < len(out) {
		if out[o] == 1 {
			strides[o] = 0
			o++
			continue
		}
		if i >= len(id) {
			return nil, false
		}
		// Extend the groups [i, i2) and [o, o2) until their products agree.
		i2, o2 := i+1, o+1
		pi, po := id[i], out[o]
		for pi != po {
			if pi < po {
				if i2 >= len(id) {
					return nil, false
				}
				pi *= id[i2]
				i2++
			} else {
				if o2 >= len(out) {
					return nil, false
				}
				po *= out[o2]
				o2++
			}
		}
		for k := i; k < i2-1; k++ {
			if is[k] != id[k+1]*is[k+1] {
				return nil, false
			}
		}
		s := is[i2-1]
		for k := o2 - 1; k >= o; k-- {
			strides[k] = s
			s *= out[k]
		}
		i, o = i2, o2
	}
	return strides, i == len(id)
}
