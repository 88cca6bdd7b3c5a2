package randgraph

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
)

// Refusals are the ops Symbolic adds that the compiler refuses in a graph with dims
// (docs/dynamic.md, "What is refused"), each over the rows of a symbolic value: a pad of the
// symbolic dim (one more row). A transpose putting it after a static dim and a concat along it
// (twice the rows) are no longer ones: they run as copies.
func Refusals() []string { return []string{"pad"} }

// Symbolic generates a graph with bounded dims (docs/dynamic.md) of the class the compiler
// builds once for every size in range: values f32[R, d] whose rows R lead, one dim n, the
// product n·m of an input f32[n, m, d] reshaped, or s·n of an input f32[s, n, d] whose static s
// comes before the symbolic dim (reshaped back to f32[s, n, d'] as its output), and ops that keep rows independent (elementwise
// chains, biases broadcast over the rows, row reductions spread back over their rows, products
// with a static right operand or per row, transposes, slices and pads of the trailing axes).
// With two row dims ([s, n] or [n, m]), every fourth graph or so has as an output a product
// batched over the first that contracts the second, or one whose free dims are the second
// (q·kᵀ by hand), half of those with a mask broadcast to it added (the compiler takes them). Every third graph
// or so also has, as its last output, one of Refusals, a fold of the rows into a static result
// (a column sum, Xᵀ·X) or a concat along the rows (twice the rows, the one value whose rows
// differ; a third under tanh, fused with it, a third summed over its rows, the concat a kernel
// of its own), the last two of which the compiler takes;
// refused names a refusal ("" when the graph is in the class), and the compiler must refuse such
// a graph naming it, never compile it. The same generator state gives
// the same graph; it is not one of Graph's kinds, so their seeds keep their graphs.
func Symbolic(r *rand.Rand) (g *ir.Graph, refused string) {
	b := &symBuilder{builder: newBuilder(r, "symbolic")}
	g = b.g
	hiN := 5 + r.IntN(36)
	n := g.DeclareDim("n", 1+r.IntN(3), hiN)
	b.ranges = g.Ranges()
	d := 1 + r.IntN(24)
	var x *ir.Value
	lead := 0 // the static dim before n, if any
	// split is the rows' sizes when they are two dims, [lead, n] or [n, m]: a batched product
	// over the first contracts the second (symcontract's class).
	var split []sym.Expr
	switch r.IntN(3) {
	case 0:
		x = b.g.Input(b.name("x"), b.symType(n, d), nil)
	case 1:
		lead = 2 + r.IntN(2)
		t, err := ir.SymType(ir.F32, b.ranges, sym.Const(int64(lead)), n, sym.Const(int64(d)))
		if err != nil {
			panic(err)
		}
		in := b.g.Input(b.name("x"), t, nil)
		x = b.op("reshape", ir.Attrs{"shape": []int{lead * hiN, d}}, nil, in)
		split = []sym.Expr{sym.Const(int64(lead)), n}
	default:
		hiM := 2 + r.IntN(4)
		m := g.DeclareDim("m", 1, hiM)
		b.ranges = g.Ranges()
		t, err := ir.SymType(ir.F32, b.ranges, n, m, sym.Const(int64(d)))
		if err != nil {
			panic(err)
		}
		in := b.g.Input(b.name("x"), t, nil)
		x = b.op("reshape", ir.Attrs{"shape": []int{hiN * hiM, d}}, nil, in)
		split = []sym.Expr{n, m}
	}
	b.rows = x.Type.Sym[0]
	vals := []*ir.Value{x}
	for range 2 + r.IntN(6) {
		vals = append(vals, b.rowOp(vals))
	}
	last := vals[len(vals)-1]
	if lead > 0 {
		e := last.Type.Shape[1]
		want := []sym.Expr{sym.Const(int64(lead)), n, sym.Const(int64(e))}
		last = b.op("reshape", ir.Attrs{"shape": []int{lead, hiN, e}}, want, last)
	}
	b.output(last)
	if split != nil && r.IntN(4) == 0 {
		// yᵀ·y per element of the rows' first dim, contracting the second (symcontract's class).
		y := vals[len(vals)-1]
		e := y.Type.Shape[1]
		_, hi, err := split[1].Range(b.ranges)
		if err != nil {
			panic(err)
		}
		bounds := []int{y.Type.Shape[0] / int(hi), int(hi), e}
		y3 := b.op("reshape", ir.Attrs{"shape": bounds}, []sym.Expr{split[0], split[1], sym.Const(int64(e))}, y)
		if r.IntN(2) == 0 {
			b.output(b.op("dot_general", ir.Attrs{"lhs_batch": []int{0}, "rhs_batch": []int{0}, "lhs_contract": []int{1}, "rhs_contract": []int{1}}, nil, y3, y3))
		} else {
			b.output(b.scores(y3, split))
		}
	}
	if r.IntN(3) == 0 {
		// Every value of vals reads the input, so no pass folds y into the parameters.
		y := vals[len(vals)-1]
		op := []string{"reduce_sum", "pad", "dot_general", "concat"}[r.IntN(4)]
		if slices.Contains(Refusals(), op) {
			refused = op
		}
		switch op {
		case "reduce_sum":
			b.output(b.op("reduce_sum", ir.Attrs{"axes": []int{0}}, nil, y))
		case "pad":
			b.output(b.op("pad", ir.Attrs{"low": []int{1, 0}, "high": []int{0, 0}, "value": 0.5}, nil, y))
		case "dot_general":
			b.output(b.op("dot_general", ir.Attrs{"lhs_contract": []int{0}, "rhs_contract": []int{0}}, nil, y, y))
		case "concat":
			c := b.op("concat", ir.Attrs{"axis": 0}, nil, y, y)
			switch r.IntN(3) {
			case 0:
				c = b.op("tanh", nil, nil, c) // fused with the concat in its kernel
			case 1:
				c = b.op("reduce_sum", ir.Attrs{"axes": []int{1}}, nil, c) // a row sum reading the concat's own kernel's buffer
			}
			b.output(c)
		}
	}
	if err := ops.Verify(g); err != nil {
		panic(fmt.Sprintf("randgraph: symbolic graph does not verify: %v\n%s", err, g))
	}
	return g, refused
}

// scores is y·yᵀ per element of y's first dim, [A, B, e]·[A, B, e]ᵀ → [A, B, B] (q·kᵀ by hand:
// its free dims M and N are the rows' second dim B), every other time with a mask of the run's
// sizes broadcast to it added: [B, B] over A, [B] along the rows or [A, 1, B] over them.
func (b *symBuilder) scores(y *ir.Value, split []sym.Expr) *ir.Value {
	dot := b.op("dot_general", ir.Attrs{"lhs_batch": []int{0}, "rhs_batch": []int{0}, "lhs_contract": []int{2}, "rhs_contract": []int{2}}, nil, y, y)
	if b.r.IntN(2) == 0 {
		return dot
	}
	one := sym.Const(1)
	sizes, dims := [][]sym.Expr{{split[1], split[1]}, {split[1]}, {split[0], one, split[1]}}, [][]int{{1, 2}, {2}, {0, 1, 2}}
	i := b.r.IntN(len(sizes))
	t, err := ir.SymType(ir.F32, b.ranges, sizes[i]...)
	if err != nil {
		panic(err)
	}
	m := b.g.Input(b.name("mask"), t, nil)
	mb := b.op("broadcast_in_dim", ir.Attrs{"shape": []int(dot.Type.Shape), "dims": dims[i]}, dot.Type.Sym, m)
	return b.op("add", nil, nil, dot, mb)
}

type symBuilder struct {
	*builder
	ranges sym.Ranges
	rows   sym.Expr // the row count every value leads with
}

// symType is f32[rows, d].
func (b *symBuilder) symType(rows sym.Expr, d int) ir.Type {
	t, err := ir.SymType(ir.F32, b.ranges, rows, sym.Const(int64(d)))
	if err != nil {
		panic(err)
	}
	return t
}

// op adds op(args...) {attrs} with the type symbolic inference gives it (want: the result's
// sizes, for broadcasts to a symbolic type).
func (b *symBuilder) op(op string, attrs ir.Attrs, want []sym.Expr, args ...*ir.Value) *ir.Value {
	ts := make([]ir.Type, len(args))
	for i, a := range args {
		ts[i] = a.Type
	}
	t, err := ops.InferSym(op, ts, attrs, b.ranges, want)
	if err != nil {
		panic(fmt.Sprintf("randgraph: %s%v %v, which docs/dynamic.md allows, is refused: %v", op, ts, attrs, err))
	}
	return b.g.Add(op, t, attrs, args...)
}

// like returns a value of x's type from vals, or x.
func (b *symBuilder) like(x *ir.Value, vals []*ir.Value) *ir.Value {
	var same []*ir.Value
	for _, v := range vals {
		if v.Type.Equal(x.Type) {
			same = append(same, v)
		}
	}
	if len(same) == 0 {
		return x
	}
	return same[b.r.IntN(len(same))]
}

// rowOp is one op keeping rows independent over the last value or others of its type.
func (b *symBuilder) rowOp(vals []*ir.Value) *ir.Value {
	x := vals[len(vals)-1]
	if b.r.IntN(3) == 0 {
		x = vals[b.r.IntN(len(vals))]
	}
	d := x.Type.Shape[1]
	bound := []int{x.Type.Shape[0], d}
	switch b.r.IntN(9) {
	case 0:
		u := []string{"neg", "abs", "tanh", "relu"}[b.r.IntN(4)]
		return b.op(u, nil, nil, x)
	case 1:
		op := []string{"add", "sub", "mul", "max", "min"}[b.r.IntN(5)]
		return b.op(op, nil, nil, x, b.like(x, vals))
	case 2: // a bias over the rows
		p := b.g.Param(b.name("p"), ir.T(ir.F32, d), ir.Attrs{"init": "uniform", "low": -1.0, "high": 1.0})
		bb := b.op("broadcast_in_dim", ir.Attrs{"shape": bound, "dims": []int{1}}, x.Type.Sym, p)
		return b.op([]string{"add", "mul"}[b.r.IntN(2)], nil, nil, x, bb)
	case 3: // a row reduction spread back over its row (softmax's and layer norm's shape)
		red := []string{"reduce_sum", "reduce_max"}[b.r.IntN(2)]
		s := b.op(red, ir.Attrs{"axes": []int{1}}, nil, x)
		sb := b.op("broadcast_in_dim", ir.Attrs{"shape": bound, "dims": []int{0}}, x.Type.Sym, s)
		return b.op("sub", nil, nil, x, sb)
	case 4: // a product with a static right operand: x·wᵀ
		e := 1 + b.r.IntN(24)
		w := b.g.Param(b.name("w"), ir.T(ir.F32, e, d), ir.Attrs{"init": "uniform", "low": -0.5, "high": 0.5})
		return b.op("dot_general", ir.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{1}}, nil, x, w)
	case 5: // a transpose of the trailing axes of [rows, a, d/a], back to [rows, d]
		a := divisor(b.r, d)
		v := b.op("reshape", ir.Attrs{"shape": []int{bound[0], a, d / a}}, nil, x)
		v = b.op("transpose", ir.Attrs{"perm": []int{0, 2, 1}}, nil, v)
		return b.op("reshape", ir.Attrs{"shape": bound}, nil, v)
	case 6: // a slice of the columns, padded back to d with a constant
		lo := b.r.IntN(d)
		hi := lo + 1 + b.r.IntN(d-lo)
		v := b.op("slice", ir.Attrs{"start": []int{0, lo}, "limit": []int{bound[0], hi}}, nil, x)
		return b.op("pad", ir.Attrs{"low": []int{0, lo}, "high": []int{0, d - hi}, "value": 0.25}, nil, v)
	case 7: // a product per row: [rows, 1, d] times [rows, d, 1]
		y := b.like(x, vals)
		l := b.op("reshape", ir.Attrs{"shape": []int{bound[0], 1, d}}, nil, x)
		r := b.op("reshape", ir.Attrs{"shape": []int{bound[0], d, 1}}, nil, y)
		v := b.op("dot_general", ir.Attrs{"lhs_batch": []int{0}, "rhs_batch": []int{0}, "lhs_contract": []int{2}, "rhs_contract": []int{1}}, nil, l, r)
		return b.op("reshape", ir.Attrs{"shape": []int{bound[0], 1}}, nil, v)
	default: // a scalar splat
		c := b.op("constant", ir.Attrs{"shape": []int{}, "dtype": ir.F32, "value": []float64{[]float64{0.5, -1, 2}[b.r.IntN(3)]}}, nil)
		c = b.op("broadcast_in_dim", ir.Attrs{"shape": bound, "dims": []int{}}, x.Type.Sym, c)
		return b.op([]string{"mul", "add"}[b.r.IntN(2)], nil, nil, x, c)
	}
}

// divisor is a random divisor of d.
func divisor(r *rand.Rand, d int) int {
	var ds []int
	for a := 1; a <= d; a++ {
		if d%a == 0 {
			ds = append(ds, a)
		}
	}
	return ds[r.IntN(len(ds))]
}
