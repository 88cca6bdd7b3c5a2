package autodiff

import (
	"math"
	"slices"
	"sort"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// rule is the gradient of one op. grad receives the node, the gradient dy of its result and which
// arguments need a gradient, and returns one gradient per argument (nil where not needed).
// nondiff lists the arguments that have no gradient; differentiating through one is an error
// explained by why.
type rule struct {
	grad    func(e *Emitter, v *ir.Value, dy *ir.Value, need []bool) []*ir.Value
	nondiff []int
	why     string
}

// rules holds a row for every op of the op table (TestEveryOpHasARule checks it).
var rules = map[string]rule{}

func unary(f func(e *Emitter, x, y, dy *ir.Value) *ir.Value) rule {
	return rule{grad: func(e *Emitter, v, dy *ir.Value, need []bool) []*ir.Value {
		return []*ir.Value{f(e, v.Args[0], v, dy)}
	}}
}

func binary(f func(e *Emitter, a, b, y, dy *ir.Value, need []bool) (da, db *ir.Value)) rule {
	return rule{grad: func(e *Emitter, v, dy *ir.Value, need []bool) []*ir.Value {
		da, db := f(e, v.Args[0], v.Args[1], v, dy, need)
		return []*ir.Value{da, db}
	}}
}

func none(why string, args ...int) rule { return rule{nondiff: args, why: why} }

func init() {
	const boolResult = "its result is bool or integer and carries no gradient"
	const stepwise = "its derivative is zero almost everywhere; compute the input without parameters, or leave it out of the loss"
	for _, op := range []string{"eq", "ne", "lt", "le", "gt", "ge", "and", "or"} {
		rules[op] = none(boolResult, 0, 1)
	}
	rules["not"] = none(boolResult, 0)
	rules["floor"] = none(stepwise, 0)
	rules["ceil"] = none(stepwise, 0)
	rules["iota"] = none("it has no operands")
	rules["constant"] = none("it has no operands")

	rules["neg"] = unary(func(e *Emitter, x, y, dy *ir.Value) *ir.Value { return e.Neg(dy) })
	rules["abs"] = unary(func(e *Emitter, x, y, dy *ir.Value) *ir.Value {
		// sign(x)·dy, with sign(0) = 0 as in PyTorch.
		zero := e.Scalar(0, x)
		return e.Select(e.Op("gt", nil, x, zero), dy, e.Select(e.Op("lt", nil, x, zero), e.Neg(dy), zero))
	})
	rules["exp"] = unary(func(e *Emitter, x, y, dy *ir.Value) *ir.Value { return e.Mul(dy, y) })
	rules["log"] = unary(func(e *Emitter, x, y, dy *ir.Value) *ir.Value { return e.Div(dy, x) })
	rules["sqrt"] = unary(func(e *Emitter, x, y, dy *ir.Value) *ir.Value {
		return e.Div(dy, e.MulScalar(y, 2))
	})
	rules["rsqrt"] = unary(func(e *Emitter, x, y, dy *ir.Value) *ir.Value {
		return e.Mul(dy, e.MulScalar(e.Mul(e.Mul(y, y), y), -0.5))
	})
	rules["tanh"] = unary(func(e *Emitter, x, y, dy *ir.Value) *ir.Value {
		return e.Mul(dy, e.Sub(e.Scalar(1, y), e.Mul(y, y)))
	})
	rules["sigmoid"] = unary(func(e *Emitter, x, y, dy *ir.Value) *ir.Value {
		return e.Mul(dy, e.Mul(y, e.Sub(e.Scalar(1, y), y)))
	})
	rules["relu"] = unary(func(e *Emitter, x, y, dy *ir.Value) *ir.Value {
		zero := e.Scalar(0, y)
		return e.Select(e.Op("gt", nil, y, zero), dy, zero)
	})
	rules["erf"] = unary(func(e *Emitter, x, y, dy *ir.Value) *ir.Value {
		return e.Mul(dy, e.MulScalar(e.Op("exp", nil, e.Neg(e.Mul(x, x))), 2/math.Sqrt(math.Pi)))
	})
	rules["sin"] = unary(func(e *Emitter, x, y, dy *ir.Value) *ir.Value { return e.Mul(dy, e.Op("cos", nil, x)) })
	rules["cos"] = unary(func(e *Emitter, x, y, dy *ir.Value) *ir.Value {
		return e.Neg(e.Mul(dy, e.Op("sin", nil, x)))
	})
	rules["cast"] = unary(func(e *Emitter, x, y, dy *ir.Value) *ir.Value { return e.Cast(dy, x.Type.DType) })

	rules["add"] = binary(func(e *Emitter, a, b, y, dy *ir.Value, need []bool) (*ir.Value, *ir.Value) { return dy, dy })
	rules["sub"] = binary(func(e *Emitter, a, b, y, dy *ir.Value, need []bool) (*ir.Value, *ir.Value) {
		return dy, lazy(need[1], func() *ir.Value { return e.Neg(dy) })
	})
	rules["mul"] = binary(func(e *Emitter, a, b, y, dy *ir.Value, need []bool) (*ir.Value, *ir.Value) {
		return lazy(need[0], func() *ir.Value { return e.Mul(dy, b) }), lazy(need[1], func() *ir.Value { return e.Mul(dy, a) })
	})
	rules["div"] = binary(func(e *Emitter, a, b, y, dy *ir.Value, need []bool) (*ir.Value, *ir.Value) {
		return lazy(need[0], func() *ir.Value { return e.Div(dy, b) }),
			lazy(need[1], func() *ir.Value { return e.Neg(e.Div(e.Mul(dy, y), b)) })
	})
	rules["pow"] = binary(func(e *Emitter, a, b, y, dy *ir.Value, need []bool) (*ir.Value, *ir.Value) {
		da := lazy(need[0], func() *ir.Value {
			return e.Mul(dy, e.Mul(b, e.Op("pow", nil, a, e.Sub(b, e.Scalar(1, b)))))
		})
		db := lazy(need[1], func() *ir.Value {
			// dy·y·log(a), zero where a = 0 and b ≥ 0 (PyTorch's convention).
			zero := e.Scalar(0, a)
			g := e.Mul(dy, e.Mul(y, e.Op("log", nil, a)))
			mask := e.Op("and", nil, e.Op("eq", nil, a, zero), e.Op("ge", nil, b, zero))
			return e.Select(mask, zero, g)
		})
		return da, db
	})
	minmax := func(cmp string) rule {
		// The winner gets dy; a tie splits it in halves (PyTorch's maximum/minimum).
		return binary(func(e *Emitter, a, b, y, dy *ir.Value, need []bool) (*ir.Value, *ir.Value) {
			zero, half := e.Scalar(0, dy), e.MulScalar(dy, 0.5)
			tie := e.Op("eq", nil, a, b)
			return lazy(need[0], func() *ir.Value { return e.Select(e.Op(cmp, nil, a, b), dy, e.Select(tie, half, zero)) }),
				lazy(need[1], func() *ir.Value { return e.Select(e.Op(cmp, nil, b, a), dy, e.Select(tie, half, zero)) })
		})
	}
	rules["max"] = minmax("gt")
	rules["min"] = minmax("lt")
	rules["select"] = rule{nondiff: []int{0}, why: "the predicate is bool",
		grad: func(e *Emitter, v, dy *ir.Value, need []bool) []*ir.Value {
			zero := e.Scalar(0, dy)
			p := v.Args[0]
			return []*ir.Value{nil,
				lazy(need[1], func() *ir.Value { return e.Select(p, dy, zero) }),
				lazy(need[2], func() *ir.Value { return e.Select(p, zero, dy) })}
		}}

	// Reductions: the gradient of a sum is a broadcast.
	rules["reduce_sum"] = unary(func(e *Emitter, x, y, dy *ir.Value) *ir.Value { return unreduce(e, dy, y, x) })
	rules["reduce_prod"] = unary(func(e *Emitter, x, y, dy *ir.Value) *ir.Value {
		// dy·y/x: exact where no element is zero (documented limitation).
		return e.Div(e.Mul(unreduce(e, dy, y, x), unreduce(e, y, y, x)), x)
	})
	extreme := unary(func(e *Emitter, x, y, dy *ir.Value) *ir.Value {
		// dy shared evenly among the elements equal to the extreme (PyTorch's amax/amin).
		mask := e.Cast(e.Op("eq", nil, x, unreduce(e, y, y, x)), x.Type.DType)
		count := e.Op("reduce_sum", y.Attrs.Clone(), mask)
		return e.Div(e.Mul(unreduce(e, dy, y, x), mask), unreduce(e, count, y, x))
	})
	rules["reduce_max"] = extreme
	rules["reduce_min"] = extreme

	// Movement: the gradient moves dy back.
	rules["reshape"] = unary(func(e *Emitter, x, y, dy *ir.Value) *ir.Value { return e.Reshape(dy, x.Type.Shape) })
	rules["transpose"] = unary(func(e *Emitter, x, y, dy *ir.Value) *ir.Value {
		perm := y.Attrs.Ints("perm")
		inv := make([]int, len(perm))
		for i, p := range perm {
			inv[p] = i
		}
		return e.Transpose(dy, inv)
	})
	rules["broadcast_in_dim"] = unary(gradBroadcast)
	rules["slice"] = unary(func(e *Emitter, x, y, dy *ir.Value) *ir.Value {
		start, stride := y.Attrs.Ints("start"), y.Attrs.Ints("stride")
		r := x.Type.Shape.Rank()
		g := dy
		high := make([]int, r)
		for d := range r {
			s := 1
			if stride != nil {
				s = stride[d]
			}
			g = e.Dilate(g, d, s)
			high[d] = x.Type.Shape[d] - start[d] - g.Type.Shape[d]
		}
		return e.Pad(g, start, high, 0)
	})
	rules["pad"] = unary(func(e *Emitter, x, y, dy *ir.Value) *ir.Value {
		low := y.Attrs.Ints("low")
		limit := make([]int, len(low))
		for d := range low {
			limit[d] = low[d] + x.Type.Shape[d]
		}
		return e.Slice(dy, low, limit, nil)
	})
	rules["concat"] = rule{grad: func(e *Emitter, v, dy *ir.Value, need []bool) []*ir.Value {
		axis := v.Attrs.Int("axis", 0)
		out := make([]*ir.Value, len(v.Args))
		off := 0
		for j, a := range v.Args {
			n := a.Type.Shape[axis]
			if need[j] {
				start, limit := make([]int, dy.Type.Shape.Rank()), slices.Clone([]int(dy.Type.Shape))
				start[axis], limit[axis] = off, off+n
				out[j] = e.Slice(dy, start, limit, nil)
			}
			off += n
		}
		return out
	}}
	rules["gather"] = rule{nondiff: []int{1}, why: "the indices are integers",
		grad: func(e *Emitter, v, dy *ir.Value, need []bool) []*ir.Value {
			// d table[r, j...] = Σ_i onehot(indices)[i, r]·dy[i, j...]: a contraction over the
			// index dims, which also sums repeated indices.
			table, idx := v.Args[0], v.Args[1]
			rows := table.Type.Shape[0]
			ir0 := idx.Type.Shape.Rank()
			shape := append(slices.Clone([]int(idx.Type.Shape)), rows)
			var ids, at *ir.Value
			if idx.Type.Sym == nil {
				ids = e.Op("iota", ir.Attrs{"shape": slices.Clone(shape), "dim": ir0, "dtype": idx.Type.DType})
				at = e.Broadcast(idx, shape, iota0(ir0))
			} else {
				// Symbolic indices (a batch of tokens): an iota has static sizes, so the rows' indices
				// are one iota broadcast to the indices' symbolic type.
				t := ir.Type{DType: idx.Type.DType, Shape: shape, Sym: append(slices.Clone(idx.Type.Sym), sym.Const(int64(rows)))}
				ids = e.BroadcastTo(e.Op("iota", ir.Attrs{"shape": []int{rows}, "dim": 0, "dtype": idx.Type.DType}), t, []int{ir0})
				at = e.BroadcastTo(idx, t, iota0(ir0))
			}
			onehot := e.Cast(e.Op("eq", nil, at, ids), dy.Type.DType)
			return []*ir.Value{dot(e, onehot, dy, nil, nil, iota0(ir0), iota0(ir0)), nil}
		}}

	rules["dot_general"] = rule{grad: gradDot}
	rules["conv2d"] = rule{grad: gradConv}
	rules["max_pool2d"] = rule{grad: gradMaxPool}
	rules["avg_pool2d"] = rule{grad: gradAvgPool}
}

// lazy builds a gradient only if it is needed.
func lazy(need bool, f func() *ir.Value) *ir.Value {
	if !need {
		return nil
	}
	return f()
}

// unreduce broadcasts t (shaped like the reduction y) back to the shape of the reduced x.
func unreduce(e *Emitter, t, y, x *ir.Value) *ir.Value {
	shape := []int(x.Type.Shape)
	if y.Attrs.Bool("keepdims", false) {
		return e.Broadcast(t, shape, iota0(len(shape)))
	}
	axes := y.Attrs.Ints("axes")
	var dims []int
	for d := range shape {
		if !slices.Contains(axes, d) {
			dims = append(dims, d)
		}
	}
	if dims == nil {
		dims = []int{}
	}
	return e.Broadcast(t, shape, dims)
}

// gradBroadcast sums dy over the dims the broadcast created or repeated: a reduce_sum, then a
// reshape (and a transpose if the broadcast permuted dims) back to the operand.
func gradBroadcast(e *Emitter, x, y, dy *ir.Value) *ir.Value {
	dims := y.Attrs.Ints("dims")
	var axes []int
	for d := range y.Type.Shape {
		i := slices.Index(dims, d)
		if i < 0 || x.Type.Shape[i] != y.Type.Shape[d] {
			axes = append(axes, d)
		}
	}
	g := dy
	if len(axes) > 0 {
		g = e.Op("reduce_sum", ir.Attrs{"axes": axes}, dy)
	}
	// The operand dims in result order (sorted dims), then the permutation back.
	order := slices.Clone(dims)
	sort.Ints(order)
	sorted := make([]int, len(order))
	for k, d := range order {
		sorted[k] = x.Type.Shape[slices.Index(dims, d)]
	}
	g = e.Reshape(g, sorted)
	perm := make([]int, len(dims))
	for i, d := range dims {
		perm[i] = slices.Index(order, d)
	}
	return e.Transpose(g, perm)
}

// dot adds a dot_general, leaving empty dim lists out of the attributes.
func dot(e *Emitter, a, b *ir.Value, lb, rb, lc, rc []int) *ir.Value {
	attrs := ir.Attrs{}
	for k, v := range map[string][]int{"lhs_batch": lb, "rhs_batch": rb, "lhs_contract": lc, "rhs_contract": rc} {
		if len(v) > 0 {
			attrs[k] = slices.Clone(v)
		}
	}
	return e.Op("dot_general", attrs, a, b)
}

// free lists the dims of a rank-r operand that are neither batch nor contracting, ascending.
func free(r int, batch, contract []int) []int {
	var f []int
	for d := range r {
		if !slices.Contains(batch, d) && !slices.Contains(contract, d) {
			f = append(f, d)
		}
	}
	return f
}

// gradDot: each operand's gradient is a dot_general of dy with the other operand, contracting
// dy's dims that belong to the other operand's free dims, then a transpose into the operand's
// layout if the result's dim order differs.
func gradDot(e *Emitter, v, dy *ir.Value, need []bool) []*ir.Value {
	lhs, rhs := v.Args[0], v.Args[1]
	lb, rb := v.Attrs.Ints("lhs_batch"), v.Attrs.Ints("rhs_batch")
	lc, rc := v.Attrs.Ints("lhs_contract"), v.Attrs.Ints("rhs_contract")
	lf, rf := free(lhs.Type.Shape.Rank(), lb, lc), free(rhs.Type.Shape.Rank(), rb, rc)
	nb := len(lb)
	dyBatch := iota0(nb)
	dyL := make([]int, len(lf)) // dy's dims holding lhs free dims
	for i := range lf {
		dyL[i] = nb + i
	}
	dyR := make([]int, len(rf))
	for i := range rf {
		dyR[i] = nb + len(lf) + i
	}
	// one computes the gradient of an operand whose batch/free/contract dims are (ob, of, oc),
	// from dy and the other operand (with dims pb, pf, pc): contract dy's dims dyOther with pf.
	one := func(other *ir.Value, ob, of, oc, pb, pf, pc, dyOther []int, rank int) *ir.Value {
		r := dot(e, dy, other, dyBatch, pb, dyOther, pf)
		// Result dims: batch, dy's own free dims, then other's remaining (contracting) dims in
		// ascending order, which pair with the operand's contracting dims.
		resDims := slices.Concat(ob, of)
		rest := slices.Clone(pc)
		sort.Ints(rest)
		for _, d := range rest {
			resDims = append(resDims, oc[slices.Index(pc, d)])
		}
		perm := make([]int, rank)
		for j, d := range resDims {
			perm[d] = j
		}
		return e.Transpose(r, perm)
	}
	var dl, dr *ir.Value
	if need[0] {
		dl = one(rhs, lb, lf, lc, rb, rf, rc, dyR, lhs.Type.Shape.Rank())
	}
	if need[1] {
		dr = one(lhs, rb, rf, rc, lb, lf, lc, dyL, rhs.Type.Shape.Rank())
	}
	return []*ir.Value{dl, dr}
}
