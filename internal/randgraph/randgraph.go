package randgraph

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// FromBytes returns a generator seeded from data (a fuzz target's input) and the seed, which
// callers can reuse for the graph's input values.
func FromBytes(data []byte) (*rand.Rand, uint64) {
	h := fnv.New64a()
	h.Write(data)
	seed := h.Sum64()
	return rand.New(rand.NewPCG(seed, uint64(len(data)))), seed
}

// Graph generates a valid graph from r (ops.Verify accepts it) of one of the kinds below, named
// after it: the mixed graph (40%) or one of the targeted kinds (kinds.go). The same generator
// state gives the same graph.
func Graph(r *rand.Rand) *ir.Graph {
	total := 0
	for _, k := range kinds {
		total += k.weight
	}
	n := r.IntN(total)
	for _, k := range kinds {
		if n -= k.weight; n < 0 {
			return k.build(r)
		}
	}
	panic("unreachable")
}

// mixed generates a graph of many op classes together: elementwise chains, broadcasts,
// reductions (with keepdims and without, spread back over their rows as softmax and layer norm
// do), views, matmuls, convolutions, pooling, gathers, casts, selects, masks from iotas and
// concats over small shapes, with constants chosen to trip algebraic rewrites (0, -0, 1) and one
// to three outputs. Inputs and parameters are f32 or of any dtype, some of them scalars.
func mixed(r *rand.Rand) *ir.Graph {
	g := ir.NewGraph("mixed")
	dims := func() []int {
		s := make([]int, 1+r.IntN(3))
		if r.IntN(8) == 0 {
			s = nil
		}
		for i := range s {
			s[i] = 1 + r.IntN(4)
		}
		return s
	}
	var pool []*ir.Value
	for i := range 1 + r.IntN(3) {
		d := ir.F32
		switch r.IntN(6) {
		case 0:
			d = ir.I32
		case 1:
			d = dtypes[r.IntN(len(dtypes))]
		}
		t := ir.T(d, dims()...)
		if i%2 == 0 {
			pool = append(pool, g.Input(fmt.Sprintf("x%d", i), t, nil))
		} else {
			// Never all zeros (the harnesses refuse them: a kernel could do anything with them
			// and pass): half the time around zero, half positive; integers draw 1 to 3, as
			// they truncate toward zero.
			init := ir.Attrs{"init": "uniform", "low": -2.0, "high": 3.0}
			if r.IntN(2) != 0 || !d.IsFloat() {
				init = ir.Attrs{"init": "uniform", "low": 1.0, "high": 4.0}
			}
			pool = append(pool, g.Param(fmt.Sprintf("p%d", i), t, init))
		}
	}
	if r.IntN(4) == 0 {
		pool = append(pool, g.Input("img", ir.T(ir.F32, 1+r.IntN(2), 2, 4, 4), nil))
	}
	leaves := len(pool) // inputs and parameters: values every executor holds exactly
	// The weights of products and gathers.
	weight := func() ir.Attrs { return ir.Attrs{"init": "normal", "mean": 0.0, "std": 1.0} }
	var idx *ir.Value
	if r.IntN(4) == 0 {
		idx = g.Input("idx", ir.T(ir.I32, 1+r.IntN(4)), ir.Attrs{"range": []int{0, 5}})
	}
	pick := func() *ir.Value {
		// Prefer recent values so that chains grow long.
		n := len(pool)
		return pool[n-1-min(n-1, int(r.ExpFloat64()*3))]
	}
	add := func(op string, attrs ir.Attrs, args ...*ir.Value) *ir.Value {
		if slices.Contains(args, nil) {
			return nil
		}
		ts := make([]ir.Type, len(args))
		for i, a := range args {
			ts[i] = a.Type
		}
		t, err := ops.Infer(op, ts, attrs)
		if err != nil {
			return nil
		}
		v := g.Add(op, t, attrs, args...)
		pool = append(pool, v)
		return v
	}
	constant := func(t ir.Type) *ir.Value {
		vals := []float64{0, 1, 2, -1}
		if t.DType.IsFloat() {
			vals = append(vals, math.Copysign(0, -1), 0.5, 3.25)
		}
		attrs := ir.Attrs{"shape": []int(t.Shape.Clone()), "dtype": t.DType, "value": []float64{vals[r.IntN(len(vals))]}}
		if r.IntN(4) == 0 && t.Shape.NumElements() <= 8 {
			var vs []float64
			for range t.Shape.NumElements() {
				vs = append(vs, vals[r.IntN(len(vals))])
			}
			attrs["value"] = vs
		}
		return add("constant", attrs)
	}
	// same returns an operand of x's type: an existing value, a broadcast of a smaller one, or a constant.
	same := func(x *ir.Value) *ir.Value {
		for _, v := range slices.Backward(pool) {
			if v != x && v.Type.Equal(x.Type) && r.IntN(2) == 0 {
				return v
			}
		}
		if r.IntN(2) == 0 {
			for _, v := range slices.Backward(pool) {
				if v.Type.DType == x.Type.DType && v.Type.Shape.Rank() < x.Type.Shape.Rank() {
					k := v.Type.Shape.Rank()
					outRank := x.Type.Shape.Rank()
					if slices.Equal(v.Type.Shape, x.Type.Shape[outRank-k:]) {
						dimsAttr := make([]int, k)
						for i := range dimsAttr {
							dimsAttr[i] = outRank - k + i
						}
						if b := add("broadcast_in_dim", ir.Attrs{"dims": dimsAttr, "shape": []int(x.Type.Shape.Clone())}, v); b != nil {
							return b
						}
					}
				}
			}
		}
		if c := constant(x.Type); c != nil && r.IntN(3) != 0 {
			return c
		}
		return x
	}
	unary := []string{"neg", "exp", "tanh", "relu", "abs", "sigmoid", "sqrt", "neg"}
	binary := []string{"add", "sub", "mul", "max", "div", "add", "mul"}
	for range 4 + r.IntN(16) {
		x := pick()
		float := x.Type.DType.IsFloat()
		switch k := r.IntN(18); {
		case k < 3:
			op := unary[r.IntN(len(unary))]
			if !float {
				op = "neg"
			}
			add(op, nil, x)
		case k < 6:
			add(binary[r.IntN(len(binary))], nil, x, same(x))
		case k == 6 && x.Type.Shape.Rank() > 0:
			axes := []int{r.IntN(x.Type.Shape.Rank())}
			red := add([]string{"reduce_sum", "reduce_max"}[r.IntN(2)], ir.Attrs{"axes": axes, "keepdims": true}, x)
			if red != nil && r.IntN(2) == 0 {
				// Spread it back and combine, as softmax and layer norm do.
				b := add("broadcast_in_dim", ir.Attrs{"dims": identity(x.Type.Shape.Rank()), "shape": []int(x.Type.Shape.Clone())}, red)
				add("sub", nil, x, b)
			}
		case k == 7:
			perm := r.Perm(x.Type.Shape.Rank())
			add("transpose", ir.Attrs{"perm": perm}, x)
		case k == 8:
			shape := []int{x.Type.Shape.NumElements()}
			if n := x.Type.Shape.Rank(); n > 1 && r.IntN(2) == 0 {
				shape = []int(x.Type.Shape.Clone())
				slices.Reverse(shape)
			}
			add("reshape", ir.Attrs{"shape": shape}, x)
		case k == 9 && x.Type.Shape.Rank() > 0:
			n := x.Type.Shape.Rank()
			start, limit := make([]int, n), []int(x.Type.Shape.Clone())
			i := r.IntN(n)
			start[i] = r.IntN(limit[i])
			add("slice", ir.Attrs{"start": start, "limit": limit}, x)
		case k == 10 && x.Type.Shape.Rank() == 2 && float:
			kdim := x.Type.Shape[1]
			w := g.Param(fmt.Sprintf("w%d", len(pool)), ir.T(x.Type.DType, 1+r.IntN(4), kdim), weight())
			add("dot_general", ir.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{1}}, x, w)
		case k == 11:
			// A chain of one to three casts through any dtype, half the time on an input or
			// parameter scaled out of the narrow types' ranges: the chain and its simplification
			// must agree on rounding, saturation (float→int), wrapping (int→int), inf and bool's
			// x != 0. Only exact values are scaled: a last-bit difference in a computed float
			// (a GPU matmul) times 3e9 would change the integer it casts to.
			if r.IntN(2) == 0 {
				x = pool[r.IntN(leaves)]
				float = x.Type.DType.IsFloat()
				scale := []float64{37, -300, 1e5, 3e9}[r.IntN(4)]
				if !float {
					scale = []float64{37, -300}[r.IntN(2)]
				}
				if m := add("mul", nil, x, add("constant", ir.Attrs{"shape": []int(x.Type.Shape.Clone()), "dtype": x.Type.DType, "value": []float64{scale}})); m != nil {
					x = m
				}
			}
			for range 1 + r.IntN(3) {
				x = add("cast", ir.Attrs{"to": castTypes[r.IntN(len(castTypes))]}, x)
			}
		case k == 12:
			y := same(x)
			if p := add("gt", nil, x, y); p != nil {
				add("select", nil, p, x, y)
			}
		case k == 13 && x.Type.Shape.Rank() > 0:
			add("concat", ir.Attrs{"axis": 0}, x, same(x))
		case k == 14 && x.Type.Shape.Rank() > 1:
			// A reduction without keepdims spread back over the kept axes, as layer norm's mean.
			n := x.Type.Shape.Rank()
			axis := r.IntN(n)
			var kept []int
			for i := range n {
				if i != axis {
					kept = append(kept, i)
				}
			}
			if red := add("reduce_sum", ir.Attrs{"axes": []int{axis}}, x); red != nil {
				if b := add("broadcast_in_dim", ir.Attrs{"dims": kept, "shape": []int(x.Type.Shape.Clone())}, add("exp", nil, red)); b != nil {
					add("mul", nil, x, b)
				}
			}
		case k == 15 && idx != nil && float && x.Type.Shape.Rank() > 0:
			d := x.Type.Shape[x.Type.Shape.Rank()-1]
			table := g.Param(fmt.Sprintf("emb%d", len(pool)), ir.T(x.Type.DType, 5, d), weight())
			if e := add("gather", nil, table, idx); e != nil && x.Type.Shape.Rank() == 2 && x.Type.Shape[0] == idx.Type.Shape[0] {
				add("add", nil, e, x)
			}
		case k == 16 && x.Type.Shape.Rank() == 2:
			// A causal-style mask from two iotas.
			s := []int(x.Type.Shape.Clone())
			i0 := add("iota", ir.Attrs{"shape": s, "dim": 0, "dtype": ir.I32})
			i1 := add("iota", ir.Attrs{"shape": s, "dim": 1, "dtype": ir.I32})
			if m := add("gt", nil, i1, i0); m != nil {
				add("select", nil, m, constant(x.Type), x)
			}
		case k == 17 && x.Type.Shape.Rank() == 4 && float:
			if r.IntN(2) == 0 {
				w := g.Param(fmt.Sprintf("conv%d", len(pool)), ir.T(x.Type.DType, 2, x.Type.Shape[1], 3, 3), weight())
				add("conv2d", ir.Attrs{"padding": []int{1, 1}}, x, w)
			} else {
				add("max_pool2d", ir.Attrs{"kernel": []int{2, 2}}, x)
			}
		}
	}
	// Outputs: the last value and a few others, never an input twice.
	outs := []*ir.Value{pool[len(pool)-1]}
	for range r.IntN(3) {
		outs = append(outs, pool[r.IntN(len(pool))])
	}
	for i, v := range outs {
		g.SetOutput(fmt.Sprintf("out%d", i), v)
	}
	return g
}

// castTypes is every dtype: casts between any two are valid.
var castTypes = []ir.DType{ir.F64, ir.F32, ir.F16, ir.BF16, ir.I64, ir.I32, ir.I8, ir.U8, ir.Bool}

func identity(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}
