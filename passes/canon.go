package passes

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/tensor"
)

// rewriter walks a graph once in definition order. The visit function sees each value with its
// operands already replaced and may return a replacement (an earlier value or one it added with
// add); replaced values are dropped.
type rewriter struct {
	g    *ir.Graph
	out  []*ir.Value
	repl map[*ir.Value]*ir.Value
}

func rewrite(g *ir.Graph, visit func(rw *rewriter, v *ir.Value) *ir.Value) *ir.Graph {
	rw := &rewriter{g: g, repl: map[*ir.Value]*ir.Value{}}
	values := g.Values
	for _, v := range values {
		for i, a := range v.Args {
			v.Args[i] = rw.get(a)
		}
		if r := visit(rw, v); r != nil && r != v {
			rw.repl[v] = r
			continue
		}
		rw.out = append(rw.out, v)
	}
	g.Values = rw.out
	for i, o := range g.Outputs {
		g.Outputs[i].Value = rw.get(o.Value)
	}
	return g
}

func (rw *rewriter) get(v *ir.Value) *ir.Value {
	for rw.repl[v] != nil {
		v = rw.repl[v]
	}
	return v
}

// add appends a new value before the one being visited.
func (rw *rewriter) add(op string, t ir.Type, attrs ir.Attrs, pos string, args ...*ir.Value) *ir.Value {
	v := rw.g.Append(&ir.Value{Op: op, Type: t, Attrs: attrs, Pos: pos, Args: args})
	rw.out = append(rw.out, v)
	return v
}

// deadCode removes values that no output depends on. Inputs and parameters stay: they are the
// graph's interface.
func deadCode(g *ir.Graph) *ir.Graph {
	live := map[*ir.Value]bool{}
	var mark func(v *ir.Value)
	mark = func(v *ir.Value) {
		if live[v] {
			return
		}
		live[v] = true
		for _, a := range v.Args {
			mark(a)
		}
	}
	for _, o := range g.Outputs {
		mark(o.Value)
	}
	kept := g.Values[:0:0]
	for _, v := range g.Values {
		if live[v] || v.Op == ir.OpInput || v.Op == ir.OpParam {
			kept = append(kept, v)
		}
	}
	g.Values = kept
	return g
}

// commonSubexpressions merges values with the same op, attributes, type and operands into the
// first of them (hash-consing in definition order, so the result is deterministic).
func commonSubexpressions(g *ir.Graph) *ir.Graph {
	seen := map[string]*ir.Value{}
	return rewrite(g, func(_ *rewriter, v *ir.Value) *ir.Value {
		if v.Op == ir.OpInput || v.Op == ir.OpParam {
			return nil
		}
		key := valueKey(v)
		if first, ok := seen[key]; ok {
			return first
		}
		seen[key] = v
		return nil
	})
}

func valueKey(v *ir.Value) string {
	var sb strings.Builder
	sb.WriteString(v.Op)
	sb.WriteByte('(')
	for _, a := range v.Args {
		sb.WriteString(strconv.Itoa(a.ID))
		sb.WriteByte(',')
	}
	sb.WriteString(") ")
	for _, k := range v.Attrs.Keys() {
		sb.WriteString(k + "=" + attrKey(v.Attrs[k]) + " ")
	}
	sb.WriteString(v.Type.String())
	return sb.String()
}

// attrKey prints an attribute so that different values never print alike (floats by their bits,
// which keeps -0 and +0, and NaNs, apart).
func attrKey(a any) string {
	switch x := a.(type) {
	case float64:
		return "f" + strconv.FormatUint(math.Float64bits(x), 16)
	case []float64:
		parts := make([]string, len(x))
		for i, f := range x {
			parts[i] = strconv.FormatUint(math.Float64bits(f), 16)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	return ir.FormatAttr(a)
}

// FoldLimit bounds the number of elements constant folding evaluates and stores: larger
// results stay computed at run time unless they are splats (one repeated value).
const FoldLimit = 1024

// foldConstants replaces values whose operands are all constants by a constant holding the
// result, computed with the op table's reference semantics.
func foldConstants(g *ir.Graph) *ir.Graph {
	return rewrite(g, func(rw *rewriter, v *ir.Value) *ir.Value {
		if zeroIota(v) {
			return rw.add("constant", v.Type, constAttrs(v.Type, []float64{0}), v.Pos)
		}
		if len(v.Args) == 0 || v.Op == ir.OpInput || v.Op == ir.OpParam {
			return nil
		}
		for _, a := range v.Args {
			if a.Op != "constant" {
				return nil
			}
		}
		if sizeDependent(v) {
			return nil // symfold.go
		}
		vals, ok := foldValue(v)
		if !ok {
			return nil
		}
		return rw.add("constant", v.Type, constAttrs(v.Type, vals), v.Pos)
	})
}

// zeroIota reports whether v is an iota of one element along its dim, all zeros: a splat,
// which simplify then removes from an add (a decode step's positions, pos + iota over one
// token, are pos itself, and need no kernel of their own).
func zeroIota(v *ir.Value) bool {
	if v.Op != "iota" || v.Type.Sym != nil {
		return false
	}
	d := v.Attrs.Int("dim", -1)
	return d >= 0 && d < v.Type.Shape.Rank() && v.Type.Shape[d] == 1
}

// foldValue evaluates v on constant operands. Elementwise and movement ops of splats are
// evaluated on one element; anything else only when small.
func foldValue(v *ir.Value) ([]float64, bool) {
	class := ops.ClassOf(v.Op)
	allSplat := true
	size := v.Type.Shape.NumElements()
	for _, a := range v.Args {
		_, s := splatValue(a)
		allSplat = allSplat && s
		size += a.Type.Shape.NumElements()
	}
	scalar := allSplat && (class == ops.Elementwise || isView(v.Op))
	if !scalar && size > FoldLimit {
		return nil, false
	}
	args := make([]*tensor.Tensor, len(v.Args))
	for i, a := range v.Args {
		t, vals := a.Type, a.Attrs.Floats("value")
		if scalar {
			f, _ := splatValue(a)
			t, vals = ir.Type{DType: t.DType, Shape: ir.Shape{}}, []float64{f}
		}
		x, err := ops.Eval(&ir.Value{Op: "constant", Type: t, Attrs: constAttrs(t, vals)}, nil)
		if err != nil {
			return nil, false
		}
		args[i] = x
	}
	if scalar && isView(v.Op) {
		f, _ := splatValue(v.Args[0])
		return []float64{f}, true
	}
	ev := v
	if scalar {
		c := *v
		c.Type = ir.Type{DType: v.Type.DType, Shape: ir.Shape{}}
		ev = &c
	}
	out, err := ops.Eval(ev, args)
	if err != nil {
		return nil, false
	}
	vals := make([]float64, out.Len())
	for i := range vals {
		if out.F == nil && (out.I[i] > 1<<53 || out.I[i] < -(1<<53)) {
			return nil, false // not representable in the constant's float64 list
		}
		vals[i] = out.At(i)
	}
	if allEqual(vals) {
		vals = vals[:min(len(vals), 1)]
	}
	if len(vals) == 0 {
		vals = []float64{0}
	}
	return vals, true
}

func constAttrs(t ir.Type, vals []float64) ir.Attrs {
	return ir.Attrs{"shape": []int(t.Shape.Clone()), "dtype": t.DType, "value": vals}
}

func allEqual(vals []float64) bool {
	for _, f := range vals {
		if math.Float64bits(f) != math.Float64bits(vals[0]) {
			return false
		}
	}
	return true
}

// splatValue reports whether v is a constant whose elements all equal one value, and that value.
func splatValue(v *ir.Value) (float64, bool) {
	if v.Op != "constant" {
		return 0, false
	}
	vals := v.Attrs.Floats("value")
	if len(vals) == 0 || !allEqual(vals) {
		return 0, false
	}
	return vals[0], true
}

// isSplat reports whether v is a constant splat of exactly x (bit for bit, so -0 ≠ +0).
func isSplat(v *ir.Value, x float64) bool {
	f, ok := splatValue(v)
	return ok && math.Float64bits(f) == math.Float64bits(x)
}

// isView reports whether op only moves elements of its single operand: fusion turns it into
// index arithmetic.
func isView(op string) bool {
	switch op {
	case "reshape", "transpose", "broadcast_in_dim", "slice":
		return true
	}
	return false
}

// simplify applies exact algebraic identities: each rewrite gives bit-identical results for
// every input, including NaN, ±inf and -0.
func simplify(g *ir.Graph) *ir.Graph {
	return rewrite(g, func(rw *rewriter, v *ir.Value) *ir.Value {
		return simplifyValue(rw, v)
	})
}

func simplifyValue(rw *rewriter, v *ir.Value) *ir.Value {
	args := v.Args
	arg := func(i int) *ir.Value { return args[i] }
	d := v.Type.DType
	intLike := !d.IsFloat()
	switch v.Op {
	case "add":
		// x + (-0) = x for every float x (x + +0 turns -0 into +0, so it stays); x + 0 for ints.
		zero := math.Copysign(0, -1)
		if intLike {
			zero = 0
		}
		if isSplat(arg(1), zero) {
			return arg(0)
		}
		if isSplat(arg(0), zero) {
			return arg(1)
		}
	case "sub":
		if isSplat(arg(1), 0) { // x - (+0) = x, -0 included
			return arg(0)
		}
	case "mul":
		for i := range 2 {
			if isSplat(arg(i), 1) {
				return arg(1 - i)
			}
			if intLike && isSplat(arg(i), 0) {
				return arg(i) // x*0 = 0 only where no NaN or inf exists
			}
		}
	case "div":
		if isSplat(arg(1), 1) {
			return arg(0)
		}
	case "neg", "not":
		if arg(0).Op == v.Op {
			return arg(0).Args[0]
		}
	case "max", "min", "and", "or":
		if arg(0) == arg(1) {
			return arg(0)
		}
	case "select":
		if arg(1) == arg(2) {
			return arg(1)
		}
		if isSplat(arg(0), 1) {
			return arg(1)
		}
		if isSplat(arg(0), 0) {
			return arg(2)
		}
	case "transpose":
		perm := v.Attrs.Ints("perm")
		x := arg(0)
		if x.Op == "transpose" {
			perm, x = pick(x.Attrs.Ints("perm"), perm), x.Args[0]
		}
		if isIdentity(perm) {
			return x
		}
		if x != arg(0) {
			return rw.add("transpose", v.Type, ir.Attrs{"perm": perm}, v.Pos, x)
		}
	case "reshape":
		x := arg(0)
		if x.Op == "reshape" {
			x = x.Args[0]
		}
		if x.Type.Shape.Equal(v.Type.Shape) {
			return x
		}
		if x != arg(0) {
			return rw.add("reshape", v.Type, v.Attrs.Clone(), v.Pos, x)
		}
	case "broadcast_in_dim":
		if f, ok := splatValue(arg(0)); ok {
			return rw.add("constant", v.Type, constAttrs(v.Type, []float64{f}), v.Pos)
		}
		dims := v.Attrs.Ints("dims")
		x := arg(0)
		if x.Op == "broadcast_in_dim" {
			dims, x = pick(dims, x.Attrs.Ints("dims")), x.Args[0]
		}
		if x.Type.Shape.Equal(v.Type.Shape) && isIdentity(dims) {
			return x
		}
		if x != arg(0) {
			return rw.add("broadcast_in_dim", v.Type, ir.Attrs{"dims": dims, "shape": []int(v.Type.Shape.Clone())}, v.Pos, x)
		}
	case "cast":
		x := arg(0)
		if x.Op == "cast" && castChainExact(x.Args[0].Type.DType, x.Type.DType, d) {
			x = x.Args[0]
		}
		if x.Type.DType == d {
			return x
		}
		if x != arg(0) {
			return rw.add("cast", v.Type, ir.Attrs{"to": d}, v.Pos, x)
		}
	case "slice":
		x := arg(0)
		if slices.Equal(v.Attrs.Ints("start"), make([]int, x.Type.Shape.Rank())) && x.Type.Shape.Equal(v.Type.Shape) {
			return x // start 0 and the full size leaves no room for a stride to skip anything
		}
	case "pad":
		if x := arg(0); x.Type.Shape.Equal(v.Type.Shape) {
			return x
		}
	case "concat":
		if len(args) == 1 {
			return arg(0)
		}
	}
	return nil
}

// pick returns a[idx[0]], a[idx[1]], ...: the composition of two dimension maps.
func pick(a, idx []int) []int {
	out := make([]int, len(idx))
	for i, j := range idx {
		out[i] = a[j]
	}
	return out
}

func isIdentity(perm []int) bool {
	for i, p := range perm {
		if p != i {
			return false
		}
	}
	return true
}

// lossless reports whether every value of dtype from is exactly a value of dtype to (NaN, ±inf
// and -0 included), so that cast(x, to) keeps x's value.
func lossless(from, to ir.DType) bool {
	switch {
	case from == to || from == ir.Bool:
		return true // 0 and 1 are values of every dtype
	case to == ir.Bool:
		return false // bool keeps only x != 0
	}
	// bits of integer range each type holds exactly (floats: significand bits).
	exact := map[ir.DType]int{ir.F16: 11, ir.BF16: 8, ir.F32: 24, ir.F64: 53, ir.I8: 7, ir.U8: 8, ir.I32: 31, ir.I64: 63}
	switch {
	case from.IsFloat() && to.IsFloat():
		return to == ir.F64 || to == ir.F32 && (from == ir.F16 || from == ir.BF16)
	case from.IsFloat():
		return false
	case to.IsFloat():
		return exact[from] <= exact[to]
	case from == ir.U8:
		return to != ir.I8
	case to == ir.U8:
		return false
	}
	return exact[from] <= exact[to]
}

// castChainExact reports whether cast(cast(x, mid), to) equals cast(x, to) for every x of dtype
// from. The cast rules (docs/ops.md) depend on the source kind as well as the value: int→int
// wraps, float→int saturates, anything→bool is x != 0, and casts to floats round the exact value
// once. So keeping x's value through mid is not enough when mid changes the rule that applies.
func castChainExact(from, mid, to ir.DType) bool {
	switch {
	case mid == to:
		return true // the outer cast is the identity
	case from.IsInt() && mid.IsInt() && to.IsInt() && to.Size() <= mid.Size():
		return true // wrapping modulo 2^bits(mid), then modulo 2^bits(to) ≤ that, is wrapping modulo 2^bits(to)
	case !lossless(from, mid):
		return false // mid rounds, saturates, wraps or normalizes some x
	case from.IsInt() && mid.IsFloat() && to.IsInt():
		// float→int saturates where the direct int→int wraps: equal only if no x needs either.
		return lossless(from, to)
	}
	// x reaches the outer cast with its value, and the rule for to agrees on it: rounding to a
	// float and x != 0 depend on the value only, as do int→int from an int mid and float→int
	// from a float mid.
	return true
}
