package randgraph

import "github.com/gcomp/gcomp/ir"

// randomGraph draws numbers with philox_uniform (Dropout's random numbers: exact integer
// arithmetic, then one exact conversion, so the simulator must give the reference's bits) and
// uses them as Dropout does. The key is an i64 input, small or as wide as [-2^62, 2^62] (its high
// word then varies), at times after wrapping integer arithmetic; the shape's sizes are mostly not
// multiples of 4 (each Philox block gives four words), a scalar at times; the stream is 0, small,
// or beyond 2^32 (the counter's fourth word). The numbers are outputs themselves, a keep mask
// (lt against the keep probability) selects inputs scaled by 1/keep or zeros, and at times a
// second draw of another stream or key, or a reduction of the numbers, joins them.
func randomGraph(b *builder) {
	var key *ir.Value
	if b.r.IntN(2) == 0 {
		key = b.extremeInput(ir.T(ir.I64))
	} else {
		key = b.rangedInput(ir.T(ir.I64), -3, 1000)
	}
	if b.r.IntN(3) == 0 {
		key = b.op([]string{"add", "sub", "mul"}[b.r.IntN(3)], nil, key, b.extremeConstant(ir.T(ir.I64)))
	}
	s := b.shape(b.r.IntN(4), 9)
	draw := func(key *ir.Value) *ir.Value {
		attrs := ir.Attrs{"shape": s}
		switch b.r.IntN(4) {
		case 0:
			attrs["stream"] = b.r.IntN(5)
		case 1:
			attrs["stream"] = 1<<32 + b.r.IntN(3) // reaches the counter's fourth word
		}
		return b.op("philox_uniform", attrs, key)
	}
	u := draw(key)
	b.output(u)
	// Dropout: keep an element when its number is below the keep probability, scaled by 1/keep.
	keep := []float64{0.5, 0.9, 0.25, 0.75}[b.r.IntN(4)]
	t := ir.T(ir.F32, s...)
	splat := func(v float64) *ir.Value {
		return b.op("constant", ir.Attrs{"shape": []int(t.Shape.Clone()), "dtype": ir.F32, "value": []float64{v}})
	}
	mask := b.op("lt", nil, u, splat(keep))
	x := b.view(t, 2)
	kept := b.op("select", nil, mask, b.op("mul", nil, x, splat(1/keep)), splat(0))
	b.output(kept)
	switch b.r.IntN(3) {
	case 0: // another stream of the same key, or another key: independent numbers
		other := key
		if b.r.IntN(2) == 0 {
			other = b.op("add", nil, key, b.op("constant", ir.Attrs{"shape": []int{}, "dtype": ir.I64, "value": []float64{1}}))
		}
		b.output(b.op("sub", nil, u, draw(other)))
	case 1:
		if len(s) > 0 {
			b.output(b.op("reduce_max", ir.Attrs{"axes": []int{b.r.IntN(len(s))}}, u))
		}
	}
}
