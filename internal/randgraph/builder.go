package randgraph

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// builder holds a graph under construction for the targeted kinds (kinds.go). Unlike the mixed
// generator, which tries ops and drops what inference refuses, the kinds build only what
// docs/ir.md and docs/ops.md allow, so op panics when inference refuses: that is the op table
// disagreeing with its documentation, a defect the generator should report rather than hide.
type builder struct {
	r     *rand.Rand
	g     *ir.Graph
	names int
	outs  int
	// empty lets views of non-empty values pad empty operands; the kinds that are not about
	// zero-size values mostly leave it off, so that the other defects they look for show.
	empty bool
}

func newBuilder(r *rand.Rand, kind string) *builder {
	return &builder{r: r, g: ir.NewGraph(kind)}
}

// op adds op(args...) {attrs} with the type inference gives it.
func (b *builder) op(op string, attrs ir.Attrs, args ...*ir.Value) *ir.Value {
	ts := make([]ir.Type, len(args))
	for i, a := range args {
		ts[i] = a.Type
	}
	t, err := ops.Infer(op, ts, attrs)
	if err != nil {
		panic(fmt.Sprintf("randgraph: %s%v %v, which docs/ops.md allows, is refused: %v", op, ts, attrs, err))
	}
	return b.g.Add(op, t, attrs, args...)
}

func (b *builder) name(prefix string) string {
	b.names++
	return fmt.Sprintf("%s%d", prefix, b.names)
}

// output names v as a graph result.
func (b *builder) output(v *ir.Value) {
	b.g.SetOutput(fmt.Sprintf("out%d", b.outs), v)
	b.outs++
}

// input declares an input of type t. Integer inputs get a range: usually small, at times the
// dtype's extremes (extremes draws those on purpose).
func (b *builder) input(t ir.Type) *ir.Value {
	var attrs ir.Attrs
	if t.DType.IsInt() && b.r.IntN(2) == 0 {
		lo, hi := b.smallRange(t.DType)
		attrs = ir.Attrs{"range": []int{lo, hi}}
	}
	return b.g.Input(b.name("x"), t, attrs)
}

// rangedInput declares an integer input drawing from [lo, hi).
func (b *builder) rangedInput(t ir.Type, lo, hi int) *ir.Value {
	return b.g.Input(b.name("x"), t, ir.Attrs{"range": []int{lo, hi}})
}

// smallRange is a range of a few values around zero that the dtype holds.
func (b *builder) smallRange(d ir.DType) (int, int) {
	lo := -b.r.IntN(6)
	if d == ir.U8 {
		lo = b.r.IntN(3)
	}
	return lo, lo + 1 + b.r.IntN(9)
}

// param declares a parameter with a random initializer (so weights are not all zeros).
func (b *builder) param(t ir.Type) *ir.Value {
	attrs := ir.Attrs{"init": "normal", "mean": 0.0, "std": 1.0}
	switch {
	case t.DType == ir.Bool:
		attrs = ir.Attrs{"init": "ones"}
	case t.DType.IsInt():
		attrs = ir.Attrs{"init": "uniform", "low": -4.0, "high": 4.0}
		if t.DType == ir.U8 {
			attrs["low"] = 0.0
		}
	}
	return b.g.Param(b.name("p"), t, attrs)
}

// constant is a splat or a literal of small values the dtype holds exactly.
func (b *builder) constant(t ir.Type) *ir.Value {
	vals := []float64{0, 1, 2, 3}
	switch {
	case t.DType == ir.Bool:
		vals = []float64{0, 1}
	case t.DType.IsFloat():
		vals = append(vals, -1, math.Copysign(0, -1), 0.5, -2.75)
	case t.DType != ir.U8:
		vals = append(vals, -1, -3)
	}
	value := []float64{vals[b.r.IntN(len(vals))]}
	if n := t.Shape.NumElements(); n > 1 && n <= 8 && b.r.IntN(2) == 0 {
		value = value[:0]
		for range n {
			value = append(value, vals[b.r.IntN(len(vals))])
		}
	}
	return b.op("constant", ir.Attrs{"shape": []int(t.Shape.Clone()), "dtype": t.DType, "value": value})
}

// leaf is a value of type t that reads no other value: an input, a parameter, a constant or an
// iota (the index along one dim, the epilogue operand that exposes wrong coordinates).
func (b *builder) leaf(t ir.Type) *ir.Value {
	switch k := b.r.IntN(8); {
	case k == 0:
		return b.constant(t)
	case k == 1 && t.Shape.Rank() > 0 && t.DType != ir.Bool:
		return b.op("iota", ir.Attrs{"shape": []int(t.Shape.Clone()), "dim": b.r.IntN(t.Shape.Rank()), "dtype": t.DType})
	case k < 4:
		return b.param(t)
	}
	return b.input(t)
}

// view returns a value of type t made by up to depth views (broadcast_in_dim, reshape,
// transpose, slice, pad) and elementwise ops from smaller or differently shaped values: the
// operands whose strides, repeats and padding the code generator must get right.
func (b *builder) view(t ir.Type, depth int) *ir.Value {
	if depth <= 0 || b.r.IntN(5) == 0 {
		return b.leaf(t)
	}
	s := t.Shape
	n := s.Rank()
	switch b.r.IntN(6) {
	case 0: // broadcast_in_dim: each result dim is new, repeated from size 1, or the operand's
		var dims, src []int
		for i, d := range s {
			switch b.r.IntN(3) {
			case 0:
			case 1:
				dims, src = append(dims, i), append(src, 1)
			default:
				dims, src = append(dims, i), append(src, d)
			}
		}
		if b.r.IntN(3) == 0 { // operand dims in another order: dims need not increase
			p := b.r.Perm(len(dims))
			dims, src = permute(dims, p), permute(src, p)
		}
		x := b.view(ir.T(t.DType, src...), depth-1)
		return b.op("broadcast_in_dim", ir.Attrs{"dims": dims, "shape": []int(s.Clone())}, x)
	case 1: // reshape from another shape with the same elements
		x := b.view(ir.T(t.DType, b.refactor(s)...), depth-1)
		return b.op("reshape", ir.Attrs{"shape": []int(s.Clone())}, x)
	case 2: // transpose: result dim i is operand dim perm[i]
		perm := b.r.Perm(n)
		src := make([]int, n)
		for i, p := range perm {
			src[p] = s[i]
		}
		return b.op("transpose", ir.Attrs{"perm": perm}, b.view(ir.T(t.DType, src...), depth-1))
	case 3: // slice with starts and strides; a zero dim slices nothing out of a bigger one
		start, limit, stride, src := make([]int, n), make([]int, n), make([]int, n), make([]int, n)
		for i, d := range s {
			start[i], stride[i] = b.r.IntN(3), 1+b.r.IntN(3)
			if elements(src[:i])*d*stride[i]*elements(s[i+1:]) > maxOperand {
				start[i], stride[i] = 0, 1 // strides multiply the operand: keep it small
			}
			limit[i] = start[i]
			if d > 0 {
				limit[i] = start[i] + (d-1)*stride[i] + 1
			}
			src[i] = limit[i] + b.r.IntN(3)
		}
		if elements(src) > maxOperand {
			return b.leaf(t)
		}
		attrs := ir.Attrs{"start": start, "limit": limit, "stride": stride}
		return b.op("slice", attrs, b.view(ir.T(t.DType, src...), depth-1))
	case 4: // pad: low and high around a smaller (possibly empty) operand
		low, high, src := make([]int, n), make([]int, n), make([]int, n)
		for i, d := range s {
			room := d // elements low and high may take
			if !b.empty && d > 0 {
				room--
			}
			low[i] = b.r.IntN(min(room, 2) + 1)
			high[i] = b.r.IntN(min(room-low[i], 2) + 1)
			src[i] = d - low[i] - high[i]
		}
		value := []float64{0, 1.5, -2, 1}[b.r.IntN(4)]
		if t.DType == ir.U8 && value < 0 {
			value = 7
		}
		x := b.view(ir.T(t.DType, src...), depth-1)
		return b.op("pad", ir.Attrs{"low": low, "high": high, "value": value}, x)
	}
	// An elementwise op between views, so that views chain through computed values.
	x := b.view(t, depth-1)
	if t.DType == ir.Bool {
		return b.op("not", nil, x)
	}
	if b.r.IntN(2) == 0 {
		return b.op(b.unary(t.DType), nil, x)
	}
	return b.op(b.binary(t.DType), nil, x, b.view(t, depth-1))
}

// refactor returns another shape with the element count of s: flattened, reversed, a dim split
// or two merged, or size-1 dims inserted; an empty shape stays empty.
func (b *builder) refactor(s ir.Shape) []int {
	d := []int(s.Clone())
	switch b.r.IntN(4) {
	case 0:
		if s.NumElements() == 0 {
			return []int{0, 1 + b.r.IntN(3)}
		}
		return []int{s.NumElements()}
	case 1:
		slices.Reverse(d)
		return d
	case 2:
		for i, x := range d {
			for f := 2; f < x; f++ {
				if x%f == 0 {
					return slices.Insert(slices.Replace(d, i, i+1, x/f), i+1, f)
				}
			}
		}
		if len(d) >= 2 {
			return slices.Replace(d, 0, 2, d[0]*d[1])
		}
	}
	return slices.Insert(d, b.r.IntN(len(d)+1), 1)
}

func permute[T any](xs []T, perm []int) []T {
	out := make([]T, len(xs))
	for i, p := range perm {
		out[i] = xs[p]
	}
	return out
}

// unary is an elementwise op of one operand defined on dtype d (not bool).
func (b *builder) unary(d ir.DType) string {
	if d.IsFloat() {
		return []string{"neg", "exp", "tanh", "relu", "abs", "sigmoid", "sqrt", "floor", "sin"}[b.r.IntN(9)]
	}
	return []string{"neg", "abs", "not"}[b.r.IntN(3)]
}

// binary is an elementwise op of two operands defined on dtype d (not bool).
func (b *builder) binary(d ir.DType) string {
	if d.IsFloat() {
		return []string{"add", "sub", "mul", "max", "min", "div"}[b.r.IntN(6)]
	}
	return []string{"add", "sub", "mul", "max", "min", "div", "and", "or"}[b.r.IntN(8)]
}

// dtypes is every dtype of docs/ir.md; floats and numeric are the subsets ops restrict to.
var (
	dtypes  = []ir.DType{ir.F32, ir.F16, ir.BF16, ir.F64, ir.I32, ir.I64, ir.I8, ir.U8, ir.Bool}
	floats  = []ir.DType{ir.F32, ir.F32, ir.F16, ir.BF16, ir.F64}
	numeric = []ir.DType{ir.F32, ir.F32, ir.F16, ir.BF16, ir.F64, ir.I32, ir.I64, ir.I8, ir.U8}
	ints    = []ir.DType{ir.I32, ir.I64, ir.I8, ir.U8}
)

func (b *builder) pick(ds []ir.DType) ir.DType { return ds[b.r.IntN(len(ds))] }

// maxOperand bounds the elements of the operands views read, so that strided slices of slices
// stay small (the reference interpreter and the simulator run every graph).
const maxOperand = 4096

// elements is the number of elements of a shape.
func elements(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// shape is rank dims of 1 to max elements each.
func (b *builder) shape(rank, max int) []int {
	s := make([]int, rank)
	for i := range s {
		s[i] = 1 + b.r.IntN(max)
	}
	return s
}

// castTarget is a dtype to cast a computed value of dtype d to. Integers and bools are exact, so
// anything goes; a computed float is within its own dtype's tolerance of the reference only, so
// it goes to a float no more precise (the check holds an output to its own dtype's tolerance)
// and never to an integer, where a last-bit difference can change the truncated value.
func (b *builder) castTarget(d ir.DType) ir.DType {
	switch d {
	case ir.F64:
		return b.pick(floats)
	case ir.F32:
		return b.pick([]ir.DType{ir.F32, ir.F16, ir.BF16})
	case ir.F16, ir.BF16:
		return b.pick([]ir.DType{ir.F16, ir.BF16})
	}
	return b.pick(dtypes)
}
