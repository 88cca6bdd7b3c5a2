package randgraph

import "github.com/gcomp/gcomp/ir"

// zeroSizeGraph builds values with a zero dim (ir.md allows them: a zero dimension holds no
// elements) and what turns them back into elements: pads of empty operands, reductions over an
// empty axis (the reduction's identity, docs/ops.md), concats with a non-empty operand,
// contractions with an empty free or contracting dim, gathers of empty rows chained into the
// small kernels a persistent kernel runs, and broadcasts of scalars.
func zeroSizeGraph(b *builder) {
	b.empty = true
	dt := b.pick(dtypes)
	rank := 1 + b.r.IntN(3)
	s := b.shape(rank, 4)
	zd := b.r.IntN(rank)
	s[zd] = 0
	x := b.view(ir.T(dt, s...), 2)
	for range 1 + b.r.IntN(3) {
		switch b.r.IntN(7) {
		case 0: // pad the empty dim back to elements
			low, high := make([]int, rank), make([]int, rank)
			low[zd], high[zd] = b.r.IntN(3), 1+b.r.IntN(2)
			b.output(b.op("pad", ir.Attrs{"low": low, "high": high, "value": 1.5}, x))
		case 1: // a reduction over the empty axis gives its identity
			if dt != ir.Bool {
				op := []string{"reduce_sum", "reduce_max", "reduce_min", "reduce_prod"}[b.r.IntN(4)]
				b.output(b.op(op, ir.Attrs{"axes": []int{zd}, "keepdims": b.r.IntN(2) == 0}, x))
			}
		case 2: // concat with a non-empty operand along the empty dim
			t := x.Type.Shape.Clone()
			t[zd] = 1 + b.r.IntN(3)
			b.output(b.op("concat", ir.Attrs{"axis": zd}, x, b.view(ir.T(dt, t...), 1)))
		case 3: // contractions with an empty dim
			if dt != ir.Bool {
				b.output(b.epilogue(b.contraction(dt, 1), b.r.IntN(2)))
			}
		case 4: // gathers of empty rows between small kernels
			rows, m := 1+b.r.IntN(4), 1+b.r.IntN(4)
			idx := b.rangedInput(ir.T(ir.I32, m), 0, min(rows, m)) // valid rows of the table and of each gather
			v := b.view(ir.T(dt, rows, 0), 1)
			for range 2 + b.r.IntN(2) {
				if dt != ir.Bool {
					v = b.op("neg", nil, v)
				}
				v = b.op("gather", nil, v, idx)
			}
			b.output(v)
		case 5: // a scalar broadcast into an empty shape, and a scalar computed on
			sc := b.view(ir.T(dt), 1)
			b.output(b.op("broadcast_in_dim", ir.Attrs{"dims": []int{}, "shape": []int(x.Type.Shape.Clone())}, sc))
			if dt != ir.Bool {
				b.output(b.op(b.unary(dt), nil, sc))
			}
		default: // elementwise on the empty value
			if dt == ir.Bool {
				x = b.op("not", nil, x)
			} else {
				x = b.op(b.unary(dt), nil, x)
			}
			b.output(x)
		}
	}
	if b.outs == 0 {
		b.output(x)
	}
}

// scalarGraph computes on rank-0 values: scalar inputs, full reductions, dot_generals of two
// vectors, broadcasts of scalars (dims=[]) into shapes and reshapes to and from [1].
func scalarGraph(b *builder) {
	dt := b.pick(numeric)
	x := b.view(ir.T(dt), 2)
	v := b.op("reshape", ir.Attrs{"shape": []int{}}, b.op("reduce_sum", ir.Attrs{"axes": []int{0}, "keepdims": true}, b.view(ir.T(dt, 1+b.r.IntN(9)), 1)))
	x = b.op(b.binary(dt), nil, x, v)
	k := 1 + b.r.IntN(9)
	dot := b.op("dot_general", ir.Attrs{"lhs_contract": []int{0}, "rhs_contract": []int{0}}, b.view(ir.T(dt, k), 2), b.view(ir.T(dt, k), 2))
	x = b.op(b.binary(dt), nil, x, dot)
	b.output(x)
	s := b.shape(1+b.r.IntN(2), 5)
	y := b.op("broadcast_in_dim", ir.Attrs{"dims": []int{}, "shape": s}, x)
	b.output(b.epilogue(b.op(b.binary(dt), nil, y, b.view(y.Type, 2)), b.r.IntN(3)))
	b.output(b.op("reshape", ir.Attrs{"shape": []int{1}}, b.op(b.unary(dt), nil, x)))
}
