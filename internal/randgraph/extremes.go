package randgraph

import (
	"math"

	"github.com/gcomp/gcomp/ir"
)

// extremesGraph computes on integers at the ends of their dtype: inputs whose range (docs/ir.md:
// any lo < hi) reaches the dtype's minimum and maximum, i64 ranges as wide as [-2^62, 2^62] and
// wider, constants at the extremes, and min, max, prod and sum reductions, empty ones among them
// (whose result is the identity: the dtype's maximum for reduce_min, its minimum for reduce_max),
// then wrapping arithmetic, comparisons and casts to every dtype.
func extremesGraph(b *builder) {
	dt := b.pick(ints)
	s := b.shape(1+b.r.IntN(2), 5)
	if b.r.IntN(4) == 0 {
		s[b.r.IntN(len(s))] = 0
	}
	t := ir.T(dt, s...)
	x := b.extremeInput(t)
	y := b.extremeInput(t)
	v := b.op(b.binary(dt), nil, x, []*ir.Value{y, b.extremeConstant(t)}[b.r.IntN(2)])
	if b.r.IntN(2) == 0 {
		v = b.op([]string{"neg", "abs", "not"}[b.r.IntN(3)], nil, v)
	}
	for _, w := range []*ir.Value{x, v} {
		op := []string{"reduce_min", "reduce_max", "reduce_prod", "reduce_sum"}[b.r.IntN(4)]
		axes := []int{b.r.IntN(len(s))}
		if b.r.IntN(3) == 0 {
			axes = identity(len(s))
		}
		red := b.op(op, ir.Attrs{"axes": axes, "keepdims": b.r.IntN(2) == 0}, w)
		b.output(red)
		if b.r.IntN(3) == 0 {
			b.output(b.op("cast", ir.Attrs{"to": b.pick(dtypes)}, red))
		}
	}
	cmp := b.op([]string{"lt", "gt", "eq", "ne", "le", "ge"}[b.r.IntN(6)], nil, x, y)
	b.output(b.op("select", nil, cmp, x, v))
}

// intBounds are the least and greatest values of an integer dtype.
func intBounds(d ir.DType) (int, int) {
	switch d {
	case ir.I8:
		return math.MinInt8, math.MaxInt8
	case ir.U8:
		return 0, math.MaxUint8
	case ir.I32:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

// extremeInput is an integer input whose range reaches one or both ends of its dtype.
func (b *builder) extremeInput(t ir.Type) *ir.Value {
	lo, hi := intBounds(t.DType)
	if t.DType != ir.I64 {
		hi++ // the range's end is exclusive; i64's maximum has no number above it
	}
	switch b.r.IntN(4) {
	case 0: // the lowest few values
		hi = lo + 1 + b.r.IntN(4)
	case 1: // the highest few (hi is exclusive)
		lo = hi - 1 - b.r.IntN(4)
	case 2:
		if t.DType == ir.I64 { // wide, but not the whole dtype
			lo, hi = -1<<62, 1<<62
		}
	}
	return b.rangedInput(t, lo, hi)
}

// extremeConstant is a splat of the dtype's minimum, maximum (for i64 2^62: a constant's value
// is a float, which holds no i64 maximum), -1 or 0.
func (b *builder) extremeConstant(t ir.Type) *ir.Value {
	lo, hi := intBounds(t.DType)
	if t.DType == ir.I64 {
		hi = 1 << 62
	}
	v := []float64{float64(lo), float64(hi), -1, 0}[b.r.IntN(4)]
	if t.DType == ir.U8 && v < 0 {
		v = 1
	}
	return b.op("constant", ir.Attrs{"shape": []int(t.Shape.Clone()), "dtype": t.DType, "value": []float64{v}})
}
