package frontend

import (
	"slices"
	"strconv"

	"github.com/gcomp/gcomp/ir"
)

// Reshape returns t's elements, in row-major order, with a new shape. One dim may be -1: it is
// inferred from the element count, as in PyTorch.
func (t *Tensor) Reshape(dims ...int) *Tensor { return t.reshape("reshape", dims) }

// View is Reshape under PyTorch's other name (x.view(-1, 32*7*7)).
func (t *Tensor) View(dims ...int) *Tensor { return t.reshape("view", dims) }

func (t *Tensor) reshape(what string, dims []int) *Tensor {
	s := t.state()
	if s.hasHandle(dims) {
		return t.reshapeSym(what, dims) // symbolic.go
	}
	shape := slices.Clone(dims)
	n, infer := 1, -1
	for i, d := range shape {
		switch {
		case d == -1 && infer < 0:
			infer = i
		case d == -1:
			s.failf("%s: only one dim can be -1, have %v", what, dims)
		case d < 0:
			s.failf("%s: bad size %d in %v", what, d, dims)
		default:
			n *= d
		}
	}
	total := t.v.Type.Shape.NumElements()
	if infer >= 0 {
		if n == 0 || total%n != 0 {
			s.failf("%s: shape %v is invalid for %s (%d elements)", what, dims, named(t, "input"), total)
		}
		shape[infer] = total / n
	} else if n != total {
		s.failf("%s: shape %v is invalid for %s (%d elements)", what, dims, named(t, "input"), total)
	}
	if t.v.Type.Shape.Equal(shape) {
		return t
	}
	return s.op("reshape", ir.Attrs{"shape": shape}, t)
}

// Flatten merges dims start..end (inclusive; negative counts from the end) into one, like
// torch.flatten(x, start, end). x.Flatten(1, -1) flattens all but the batch dim.
func (t *Tensor) Flatten(start, end int) *Tensor {
	if t.Rank() == 0 {
		return t.Reshape(1)
	}
	start, end = t.axis("flatten", start), t.axis("flatten", end)
	if start > end {
		t.s.failf("flatten: start dim %d comes after end dim %d", start, end)
	}
	sh := t.v.Type.Shape
	dims := append(slices.Clone(sh[:start]), ir.Shape(sh[start:end+1]).NumElements())
	return t.Reshape(append(dims, sh[end+1:]...)...)
}

// Unsqueeze inserts a dim of size 1 at position d (-1 appends one at the end).
func (t *Tensor) Unsqueeze(d int) *Tensor {
	s := t.state()
	r := t.Rank()
	if d < -r-1 || d > r {
		s.failf("unsqueeze: dim %d out of range for %s (want %d..%d)", d, named(t, "input"), -r-1, r)
	}
	if d < 0 {
		d += r + 1
	}
	return t.Reshape(slices.Insert(t.Shape(), d, 1)...)
}

// Squeeze removes dim d, which must have size 1. (PyTorch leaves other sizes alone; with static
// shapes that is almost always a mistake, so here it is an error.)
func (t *Tensor) Squeeze(d int) *Tensor {
	d = t.axis("squeeze", d)
	if t.v.Type.Shape[d] != 1 {
		t.s.failf("squeeze: dim %d of %s has size %d, not 1", d, named(t, "input"), t.v.Type.Shape[d])
	}
	return t.Reshape(slices.Delete(t.Shape(), d, d+1)...)
}

// Permute reorders the dims: result dim i is t's dim dims[i] (torch's permute).
func (t *Tensor) Permute(dims ...int) *Tensor {
	s := t.state()
	if len(dims) != t.Rank() {
		s.failf("permute: %v does not list the %d dims of %s", dims, t.Rank(), named(t, "input"))
	}
	perm := make([]int, len(dims))
	seen := make([]bool, len(dims))
	for i, d := range dims {
		perm[i] = t.axis("permute", d)
		if seen[perm[i]] {
			s.failf("permute: dim %d repeated in %v", perm[i], dims)
		}
		seen[perm[i]] = true
	}
	identity := true
	for i, p := range perm {
		identity = identity && p == i
	}
	if identity {
		return t
	}
	return s.op("transpose", ir.Attrs{"perm": perm}, t)
}

// Transpose swaps dims d0 and d1 (torch's transpose).
func (t *Tensor) Transpose(d0, d1 int) *Tensor {
	d0, d1 = t.axis("transpose", d0), t.axis("transpose", d1)
	perm := make([]int, t.Rank())
	for i := range perm {
		perm[i] = i
	}
	perm[d0], perm[d1] = perm[d1], perm[d0]
	return t.Permute(perm...)
}

// T returns the transpose of a matrix (x.T); it reverses the dims of any tensor.
func (t *Tensor) T() *Tensor {
	perm := make([]int, t.Rank())
	for i := range perm {
		perm[i] = len(perm) - 1 - i
	}
	return t.Permute(perm...)
}

// Slice returns the elements start ≤ i < end along dim, like x[..., start:end]: negative indices
// count from the end and out-of-range bounds are clamped, as in Python.
func (t *Tensor) Slice(dim, start, end int) *Tensor {
	dim = t.axis("slice", dim)
	n := t.v.Type.Shape[dim]
	clamp := func(i int) int {
		if i < 0 {
			i += n
		}
		return min(max(i, 0), n)
	}
	start, end = clamp(start), clamp(end)
	return t.narrow(dim, start, max(end-start, 0))
}

// Narrow returns length elements from start along dim (torch's narrow); the range must lie in
// the dim.
func (t *Tensor) Narrow(dim, start, length int) *Tensor {
	dim = t.axis("narrow", dim)
	n := t.v.Type.Shape[dim]
	if start < 0 {
		start += n
	}
	if start < 0 || length < 0 || start+length > n {
		t.s.failf("narrow: range [%d, %d) is outside dim %d of %s", start, start+length, dim, named(t, "input"))
	}
	return t.narrow(dim, start, length)
}

func (t *Tensor) narrow(dim, start, length int) *Tensor {
	sh := t.v.Type.Shape
	if start == 0 && length == sh[dim] {
		return t
	}
	lo := make([]int, len(sh))
	hi := slices.Clone(sh)
	lo[dim], hi[dim] = start, start+length
	return t.s.op("slice", ir.Attrs{"start": lo, "limit": []int(hi)}, t)
}

// Index returns the slice at index i of dim, without that dim, like x[:, i] (torch's select).
func (t *Tensor) Index(dim, i int) *Tensor {
	dim = t.axis("index", dim)
	n := t.v.Type.Shape[dim]
	if i < -n || i >= n {
		t.s.failf("index: index %d is out of range for dim %d of %s", i, dim, named(t, "input"))
	}
	if i < 0 {
		i += n
	}
	return t.narrow(dim, i, 1).Reshape(slices.Delete(t.Shape(), dim, dim+1)...)
}

// Chunk splits t into n pieces along dim, as torch.chunk does: each of size ⌈size/n⌉ except the
// last, which may be smaller (and fewer pieces when the size does not allow n).
func (t *Tensor) Chunk(n, dim int) []*Tensor {
	dim = t.axis("chunk", dim)
	if n < 1 {
		t.s.failf("chunk: need at least one chunk, have %d", n)
	}
	size := t.v.Type.Shape[dim]
	step := max((size+n-1)/n, 1)
	var out []*Tensor
	for start := 0; start < size; start += step {
		out = append(out, t.narrow(dim, start, min(step, size-start)))
	}
	return out
}

// Split splits t along dim into pieces of the given sizes, which must add up to the dim's size
// (torch.split with a list of sizes).
func (t *Tensor) Split(dim int, sizes ...int) []*Tensor {
	dim = t.axis("split", dim)
	total := 0
	for _, n := range sizes {
		if n < 0 {
			t.s.failf("split: negative size in %v", sizes)
		}
		total += n
	}
	if total != t.v.Type.Shape[dim] {
		t.s.failf("split: sizes %v add up to %d, but dim %d of %s has %d", sizes, total, dim, named(t, "input"), t.v.Type.Shape[dim])
	}
	out := make([]*Tensor, len(sizes))
	start := 0
	for i, n := range sizes {
		out[i] = t.narrow(dim, start, n)
		start += n
	}
	return out
}

// Cat joins tensors along dim (torch.cat): they have one dtype and equal sizes in the other dims.
func Cat(dim int, ts ...*Tensor) *Tensor {
	if len(ts) == 0 {
		panic(&Error{Pos: CallerPosition(), Msg: "cat: no tensors"})
	}
	s := ts[0].state()
	first := ts[0]
	dim = first.axis("cat", dim)
	for i, t := range ts[1:] {
		s.own(t, "cat")
		ok := t.v.Type.DType == first.v.Type.DType && t.Rank() == first.Rank()
		for d := 0; ok && d < t.Rank(); d++ {
			ok = d == dim || t.v.Type.Shape[d] == first.v.Type.Shape[d]
		}
		if !ok {
			s.failf("cat: tensor %d does not fit along dim %d: %s, %s", i+1, dim,
				first.describe("tensor 0"), t.describe("tensor "+strconv.Itoa(i+1)))
		}
	}
	if len(ts) == 1 {
		return first
	}
	return s.op("concat", ir.Attrs{"axis": dim}, ts...)
}

// Stack joins tensors of one shape along a new dim (torch.stack).
func Stack(dim int, ts ...*Tensor) *Tensor {
	if len(ts) == 0 {
		panic(&Error{Pos: CallerPosition(), Msg: "stack: no tensors"})
	}
	r := ts[0].Rank()
	if dim < -r-1 || dim > r {
		ts[0].s.failf("stack: dim %d out of range for tensors of rank %d", dim, r)
	}
	if dim < 0 {
		dim += r + 1
	}
	for i, t := range ts {
		if !t.Type().Equal(ts[0].v.Type) {
			ts[0].s.failf("stack: tensors differ: %s, %s", ts[0].describe("tensor 0"), t.describe("tensor "+strconv.Itoa(i)))
		}
	}
	us := make([]*Tensor, len(ts))
	for i, t := range ts {
		us[i] = t.Unsqueeze(dim)
	}
	return Cat(dim, us...)
}

// Pad pads every dim i with low[i] elements before and high[i] after, all equal to value
// (F.pad with mode "constant", but with one entry per dim in dim order).
func (t *Tensor) Pad(low, high []int, value float64) *Tensor {
	s := t.state()
	if len(low) != t.Rank() || len(high) != t.Rank() {
		s.failf("pad: want %d low and high sizes for %s, have %v and %v", t.Rank(), named(t, "input"), low, high)
	}
	return s.op("pad", ir.Attrs{"low": slices.Clone(low), "high": slices.Clone(high), "value": value}, t)
}
