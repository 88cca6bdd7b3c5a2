package randgraph

import (
	"slices"

	"github.com/gcomp/gcomp/ir"
)

// contractionGraph is one dot_general whose operands are chains of views and whose result runs
// through an epilogue of elementwise ops with view operands (iotas, broadcast biases, pads).
// Half the contractions have a vector side: one operand without free dims, the other with two or
// more, the shapes whose epilogue coordinates the templates have to recover.
func contractionGraph(b *builder) {
	b.empty = b.r.IntN(4) == 0
	d := b.contraction(b.pick(numeric), 0)
	b.output(b.epilogue(d, b.r.IntN(4)))
}

// contraction adds a dot_general of dtype dt: batch, contracting and free dims in a random
// order in each operand, sizes up to 9 (odd ones too), and when zeros > 0 some of them 0.
func (b *builder) contraction(dt ir.DType, zeros int) *ir.Value {
	size := func() int {
		if zeros > 0 && b.r.IntN(4) == 0 {
			return 0
		}
		return 1 + b.r.IntN(9)
	}
	nb, nc := b.r.IntN(2), 1+b.r.IntN(2)
	if b.r.IntN(8) == 0 {
		nc = 0 // an outer product
	}
	lf, rf := b.r.IntN(3), b.r.IntN(3)
	switch b.r.IntN(4) { // a vector side
	case 0:
		lf, rf = 0, 2+b.r.IntN(2)
	case 1:
		lf, rf = 2+b.r.IntN(2), 0
	}
	// Sizes: batch, contracting, lhs free and rhs free dims, shrunk until each operand and the
	// result have at most maxOperand elements.
	sizes := make([]int, nb+nc+lf+rf)
	for i := range sizes {
		if i < nb {
			sizes[i] = 1 + b.r.IntN(3)
		} else {
			sizes[i] = size()
		}
	}
	for elements(sizes[:nb+nc+lf]) > maxOperand || elements(sizes[:nb+nc])*elements(sizes[nb+nc+lf:]) > maxOperand ||
		elements(sizes[:nb])*elements(sizes[nb+nc:]) > maxOperand {
		i := slices.Index(sizes, slices.Max(sizes))
		sizes[i] = (sizes[i] + 1) / 2
	}
	type dim struct{ kind, pair, size int } // kind 0 batch, 1 contract, 2 free
	var lhs, rhs []dim
	for i := range nb {
		lhs, rhs = append(lhs, dim{0, i, sizes[i]}), append(rhs, dim{0, i, sizes[i]})
	}
	for i := range nc {
		lhs, rhs = append(lhs, dim{1, i, sizes[nb+i]}), append(rhs, dim{1, i, sizes[nb+i]})
	}
	for i := range lf {
		lhs = append(lhs, dim{2, 0, sizes[nb+nc+i]})
	}
	for i := range rf {
		rhs = append(rhs, dim{2, 0, sizes[nb+nc+lf+i]})
	}
	side := func(ds []dim) (ir.Type, []int, []int) {
		ds = permute(ds, b.r.Perm(len(ds)))
		shape, batch, contract := make([]int, len(ds)), make([]int, nb), make([]int, nc)
		for i, x := range ds {
			shape[i] = x.size
			switch x.kind {
			case 0:
				batch[x.pair] = i
			case 1:
				contract[x.pair] = i
			}
		}
		return ir.T(dt, shape...), batch, contract
	}
	lt, lb, lc := side(lhs)
	rt, rb, rc := side(rhs)
	attrs := ir.Attrs{}
	for i, k := range []string{"lhs_batch", "rhs_batch", "lhs_contract", "rhs_contract"} {
		if v := [][]int{lb, rb, lc, rc}[i]; len(v) > 0 || b.r.IntN(4) == 0 { // absent lists are empty; say so at times
			attrs[k] = v
		}
	}
	return b.op("dot_general", attrs, b.view(lt, 1+b.r.IntN(3)), b.view(rt, 1+b.r.IntN(3)))
}

// epilogue applies n elementwise ops to x, the other operands views of x's type, and at times a
// cast or a row reduction at the end.
func (b *builder) epilogue(x *ir.Value, n int) *ir.Value {
	for range n {
		if x.Type.DType == ir.Bool {
			x = b.op("not", nil, x)
			continue
		}
		switch b.r.IntN(4) {
		case 0:
			x = b.op(b.unary(x.Type.DType), nil, x)
		case 1:
			y := b.view(x.Type, 2)
			x = b.op("select", nil, b.op("gt", nil, x, y), x, y)
		default:
			x = b.op(b.binary(x.Type.DType), nil, x, b.view(x.Type, 2))
		}
	}
	if r := x.Type.Shape.Rank(); r > 0 && b.r.IntN(4) == 0 {
		op := []string{"reduce_sum", "reduce_max", "reduce_min"}[b.r.IntN(3)]
		x = b.op(op, ir.Attrs{"axes": []int{r - 1}, "keepdims": b.r.IntN(2) == 0}, x)
	}
	if b.r.IntN(5) == 0 {
		x = b.op("cast", ir.Attrs{"to": b.castTarget(x.Type.DType)}, x)
	}
	return x
}
