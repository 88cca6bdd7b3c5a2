package tolerance

import (
	"fmt"
	"math"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/tensor"
)

// Bounds evaluates g with the reference semantics (ops.Eval, what runtime/ref runs) on inputs
// and params and returns, for each output name, its reference values and the error bound of each
// element: how far a correct kernel's result may be from the reference's. The bound is a running
// first-order error analysis carried alongside the values (see the package doc): every rounded
// op adds rel·(the magnitudes of the terms it combines), and every op passes on its operands'
// bounds by the op's own sensitivity. tf32 says f32 contractions ran on TF32 tensor cores.
func Bounds(g *ir.Graph, inputs, params map[string]*tensor.Tensor, tf32 bool) (map[string]Bound, error) {
	uses := g.Uses()
	isOutput := make(map[*ir.Value]bool, len(g.Outputs))
	for _, o := range g.Outputs {
		isOutput[o.Value] = true
	}
	vals := make(map[*ir.Value]Bound, len(g.Values))
	for _, v := range g.Values {
		var b Bound
		switch v.Op {
		case ir.OpInput, ir.OpParam:
			src := inputs
			if v.Op == ir.OpParam {
				src = params
			}
			t, ok := src[v.Name]
			if !ok || !t.Type.Equal(v.Type) {
				return nil, fmt.Errorf("%s: no value of type %s supplied", g.FormatAt(v), v.Type)
			}
			b.Val = t // data is exact: no bound
		default:
			args := make([]Bound, len(v.Args))
			for i, a := range v.Args {
				args[i] = vals[a]
			}
			var err error
			if b, err = step(v, args, tf32); err != nil {
				return nil, fmt.Errorf("%s: %v", g.FormatAt(v), err)
			}
			for _, a := range v.Args {
				if uses[a]--; uses[a] == 0 && !isOutput[a] {
					delete(vals, a)
				}
			}
		}
		vals[v] = b
	}
	out := make(map[string]Bound, len(g.Outputs))
	for _, o := range g.Outputs {
		out[o.Name] = vals[o.Value]
	}
	return out, nil
}

// Bound is a value and the error bound of each of its elements (Err nil: exact everywhere).
// An infinite bound says the element is not determined by the arithmetic: an operand's error
// reaches a singularity (a division by a value whose sign is not known, a compare that may flip
// into a gather index).
type Bound struct {
	Val *tensor.Tensor
	Err []float64
}

// At is the bound of element i.
func (b Bound) At(i int) float64 {
	if b.Err == nil {
		return 0
	}
	return b.Err[i]
}

// step evaluates v from its operands and computes its bound, turning a panic of an op's Eval into
// an error.
func step(v *ir.Value, args []Bound, tf32 bool) (b Bound, err error) {
	defer func() {
		if p := recover(); p != nil {
			b, err = Bound{}, fmt.Errorf("internal error: %v", p)
		}
	}()
	ts := make([]*tensor.Tensor, len(args))
	for i, a := range args {
		ts[i] = a.Val
	}
	if b.Val, err = ops.Eval(v, ts); err != nil {
		return Bound{}, err
	}
	b.Err, err = propagate(v, args, b.Val, tf32)
	for i, e := range b.Err {
		b.Err[i] = orInf(e) // ∞·0 or ∞ − ∞ of bounds: not determined
	}
	return b, err
}

// rounding classes of the elementwise ops: exact ones select or compare operands and round
// nothing; correctly rounded ones (IEEE add, sub, mul, div, sqrt, and cast) round their exact
// result once; the rest are approximations, modelled as the exact function of operands rounded
// once (by u: the range reduction's x·log₂e or x mod π/2) with the result within rel.
var (
	exactOps   = map[string]bool{"abs": true, "neg": true, "relu": true, "max": true, "min": true, "select": true, "floor": true, "ceil": true, "eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true, "and": true, "or": true, "not": true}
	roundedOps = map[string]bool{"add": true, "sub": true, "mul": true, "div": true, "sqrt": true, "cast": true}
)

// propagate computes the bound of v = op(args) whose reference value is val.
func propagate(v *ir.Value, args []Bound, val *tensor.Tensor, tf32 bool) ([]float64, error) {
	rel, _ := Tolerance(v.Type.DType, false, 0)
	switch v.Op {
	case "iota", "constant":
		return nil, nil // exact by definition
	case "philox_uniform":
		// Integer arithmetic then one conversion: bit-identical on every device.
		return anyInf(val.Len(), args), nil
	case ops.DequantizeOp:
		// (q − zero)·scale rounded once from the exact product (docs/ops.md): bit-identical
		// on every device from exact weights; an inexact operand is not modelled.
		return anyInf(val.Len(), args), nil
	case "gather":
		if e := allInf(val.Len(), args[1].Err); e != nil {
			return e, nil // a moved index picks another row
		}
		return linear(v, []Bound{args[0], args[1]}, []bool{true, false}, 0, val)
	case ops.UpdateSliceOp:
		if e := allInf(val.Len(), args[2].Err); e != nil {
			return e, nil // a moved position writes other rows
		}
		return linear(v, args, []bool{true, true, false}, 0, val)
	case "reduce_sum", "avg_pool2d":
		return linear(v, args, []bool{true}, rel, val)
	case "reduce_max", "reduce_min", "max_pool2d":
		return selection(v, args[0])
	case "reduce_prod":
		return product(v, args[0], rel)
	case "pad":
		a := v.Attrs.Clone()
		a["value"] = 0.0 // the padding is exact
		w := *v
		w.Attrs = a
		return linear(&w, args, []bool{true}, 0, val)
	case ops.CustomOp, ops.AttentionOp, ops.AttentionLSEOp, ops.AttentionGradOp:
		return perturbAll(v, args, val, rel)
	case "cast":
		if args[0].Val.Type.DType.IsFloat() && v.Type.DType.IsFloat() {
			return castFloat(v, args[0], val), nil
		}
	}
	switch ops.ClassOf(v.Op) {
	case ops.Movement:
		nonneg := make([]bool, len(args))
		for i := range nonneg {
			nonneg[i] = true
		}
		return linear(v, args, nonneg, 0, val)
	case ops.Contraction:
		return contraction(v, args, val, rel, tf32 && v.Type.DType == ir.F32)
	case ops.Elementwise:
		return elementwise(v, args, val, rel)
	}
	return nil, fmt.Errorf("no error bound rule for %s", v.Op)
}

// minNormal is the smallest normal magnitude of float dtype d; below it results are subnormal and
// a rounding errs by a fixed spacing, not relatively.
func minNormal(d ir.DType) (normal, subnormal float64) {
	switch d {
	case ir.F16:
		return 0x1p-14, 0x1p-24
	case ir.F32:
		return 0x1p-126, 0x1p-149
	case ir.BF16:
		return 0x1p-126, 0x1p-133
	case ir.F64:
		return 0x1p-1022, 0x1p-1074
	}
	return 0, 0
}

// unitRoundoff is u, half the distance from 1 to the next float of dtype d (0 for integers).
func unitRoundoff(d ir.DType) float64 {
	switch d {
	case ir.F16:
		return 0x1p-11
	case ir.F32:
		return 0x1p-24
	case ir.BF16:
		return 0x1p-8
	case ir.F64:
		return 0x1p-53
	}
	return 0
}

// roundingErr is the error one rounding of result element x to dtype d may commit, at rel.
func roundingErr(d ir.DType, rel, x float64) float64 {
	n, s := minNormal(d)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0 // NaN and infinities are compared for what they are
	}
	if x = math.Abs(x); x != 0 && x < n {
		return rel*x + s
	}
	return rel * x
}

// f64 returns t's values as an f64 tensor (integer and bool tensors unchanged): bound arithmetic
// runs the ops' own Eval in f64, without the result dtype's rounding.
func f64(t *tensor.Tensor, f func(i int, x float64) float64) *tensor.Tensor {
	if !t.Type.DType.IsFloat() && f == nil {
		return t
	}
	r := tensor.Empty(ir.Type{DType: ir.F64, Shape: t.Type.Shape})
	for i := range r.F {
		x := t.At(i)
		if f != nil {
			x = f(i, x)
		}
		r.F[i] = x
	}
	return r
}

// errTensor is a bound as an f64 tensor of shape s.
func errTensor(s ir.Shape, e []float64) *tensor.Tensor {
	r := tensor.New(ir.Type{DType: ir.F64, Shape: s})
	copy(r.F, e)
	return r
}

// evalF64 evaluates v's op on args with an f64 result of v's shape.
func evalF64(v *ir.Value, args []*tensor.Tensor) ([]float64, error) {
	w := *v
	w.Type = ir.Type{DType: ir.F64, Shape: v.Type.Shape}
	r, err := ops.Eval(&w, args)
	if err != nil {
		return nil, err
	}
	return r.F, nil
}

// linear bounds an op that is linear with nonnegative coefficients in the operands marked in
// lin (movement ops, sums, averages; other operands are indices, used as they are): the
// operands' bounds go through the op itself, and the op's rounding is rel times the op applied to
// the operands' magnitudes (the sum of |terms|, not of the terms).
func linear(v *ir.Value, args []Bound, lin []bool, rel float64, val *tensor.Tensor) ([]float64, error) {
	exact := true
	for i, a := range args {
		exact = exact && (!lin[i] || a.Err == nil)
	}
	if exact && rel == 0 {
		return nil, nil
	}
	es := make([]*tensor.Tensor, len(args))
	ms := make([]*tensor.Tensor, len(args))
	for i, a := range args {
		if !lin[i] {
			es[i], ms[i] = a.Val, a.Val
			continue
		}
		es[i] = errTensor(a.Val.Type.Shape, a.Err)
		ms[i] = f64(a.Val, func(_ int, x float64) float64 { return math.Abs(x) })
	}
	var e []float64
	if !exact {
		var err error
		if e, err = evalF64(v, es); err != nil {
			return nil, err
		}
	} else {
		e = make([]float64, val.Len())
	}
	if rel > 0 {
		m, err := evalF64(v, ms)
		if err != nil {
			return nil, err
		}
		u := accumulation * unitRoundoff(v.Type.DType)
		for i := range e {
			e[i] += roundingErr(v.Type.DType, rel, val.At(i)) + u*m[i]
		}
	}
	return e, nil
}

// accumulation is k in the bound k·u·Σ|terms| of a sum's roundings (reductions and
// contractions), u the unit roundoff of the sum's dtype. A sum of K terms in any order commits at
// most K−1 roundings, each at most u times a partial sum; the worst case K·u·Σ|terms| is reached
// only by partial sums that all round the same way, while rounding errors of mixed-sign terms add
// like a random walk, to about u·Σ|terms|/2 for uniformly random signs (sequential f32 FFMA;
// TestBoundHoldsForAccumulation measures it to K = 16384). k = 8 leaves a margin of 16 over that;
// sums of terms of one sign are held by rel·|result| instead, which grows with the result.
const accumulation = 8

// contraction bounds dot_general and conv2d, bilinear in their operands, to first order:
// C(Ea, |b|) + C(|a|, Eb) + k·C(|a|, |b|) + rel·|result|, C(|a|, |b|) being the sum of the |terms|
// of each result element.
func contraction(v *ir.Value, args []Bound, val *tensor.Tensor, rel float64, tf32 bool) ([]float64, error) {
	a, b := args[0], args[1]
	absA := f64(a.Val, func(_ int, x float64) float64 { return math.Abs(x) })
	absB := f64(b.Val, func(_ int, x float64) float64 { return math.Abs(x) })
	var e []float64
	add := func(x, y *tensor.Tensor, scale float64) error {
		r, err := evalF64(v, []*tensor.Tensor{x, y})
		if err != nil {
			return err
		}
		if e == nil {
			e = make([]float64, len(r))
		}
		for i, t := range r {
			e[i] += scale * t
		}
		return nil
	}
	if a.Err != nil {
		ea := errTensor(a.Val.Type.Shape, a.Err)
		if err := add(ea, absB, 1); err != nil {
			return nil, err
		}
	}
	if b.Err != nil {
		if err := add(absA, errTensor(b.Val.Type.Shape, b.Err), 1); err != nil {
			return nil, err
		}
	}
	if d := v.Type.DType; d == ir.F16 || d == ir.BF16 {
		// Accumulated in f32 (or f64), not in the result's dtype: see halfContraction.
		mags, err := evalF64(v, []*tensor.Tensor{absA, absB})
		if err != nil {
			return nil, err
		}
		return halfContraction(v, args, val, e, mags)
	}
	if rel > 0 {
		// The result's rounding (rel), the sum's (k·u·Σ|a·b|), and with TF32 the operands'
		// rounding to a 10-bit mantissa: each product off by at most 2·2⁻¹¹ of itself.
		k := accumulation * unitRoundoff(v.Type.DType)
		if tf32 {
			k += 2 * 0x1p-11
		}
		if err := add(absA, absB, k); err != nil {
			return nil, err
		}
		for i := range e {
			e[i] += roundingErr(v.Type.DType, rel, val.At(i))
		}
	}
	return e, nil
}

// selection bounds reduce_max, reduce_min and max_pool2d: a maximum or minimum moves by at most
// the largest bound among the elements it chooses from.
func selection(v *ir.Value, a Bound) ([]float64, error) {
	if a.Err == nil {
		return nil, nil
	}
	w := *v
	if w.Op == "reduce_min" {
		w.Op = "reduce_max"
	}
	e, err := evalF64(&w, []*tensor.Tensor{errTensor(a.Val.Type.Shape, a.Err)})
	if err != nil {
		return nil, err
	}
	for i, x := range e {
		if !(x > 0) && !math.IsNaN(x) { // an empty window or reduction: the identity, exact
			e[i] = 0
		}
	}
	return e, nil
}

// product bounds reduce_prod: |Π(a+δ) − Πa| ≤ Π(|a|(1+rel) + E) − Π|a|, every factor's own error
// and each multiplication's rounding included.
func product(v *ir.Value, a Bound, rel float64) ([]float64, error) {
	if a.Err == nil && rel == 0 {
		return nil, nil
	}
	up, err := evalF64(v, []*tensor.Tensor{f64(a.Val, func(i int, x float64) float64 { return math.Abs(x)*(1+rel) + a.At(i) })})
	if err != nil {
		return nil, err
	}
	exact, err := evalF64(v, []*tensor.Tensor{f64(a.Val, func(_ int, x float64) float64 { return math.Abs(x) })})
	if err != nil {
		return nil, err
	}
	for i := range up {
		up[i] = orInf(up[i] - exact[i])
	}
	return up, nil
}

// elementwise bounds an elementwise op by evaluating it with each operand moved by its bound
// (and, for an approximation, by rel of its magnitude) both ways, one operand at a time (first
// order): the largest change of the result is that operand's share. The op's own rounding adds
// rel·|result|.
func elementwise(v *ir.Value, args []Bound, val *tensor.Tensor, rel float64) ([]float64, error) {
	argRel := 0.0 // an approximation's argument is rounded once (range reduction): u of its dtype
	if !exactOps[v.Op] && !roundedOps[v.Op] {
		argRel = unitRoundoff(v.Type.DType)
	}
	var e []float64
	if !exactOps[v.Op] && rel > 0 {
		e = make([]float64, val.Len())
		for i := range e {
			e[i] = roundingErr(v.Type.DType, rel, val.At(i))
		}
	}
	base := make([]*tensor.Tensor, len(args))
	for i, a := range args {
		base[i] = f64(a.Val, nil)
	}
	ref, err := evalF64OrOwn(v, base)
	if err != nil {
		return nil, err
	}
	for k, a := range args {
		if a.Err == nil && (argRel == 0 || !a.Val.Type.DType.IsFloat()) {
			continue
		}
		delta := func(i int, x float64) float64 { return a.At(i) + argRel*math.Abs(x) }
		moved := make([]*tensor.Tensor, len(args))
		copy(moved, base)
		var worst []float64
		for _, sign := range []float64{1, -1} {
			moved[k] = shift(a.Val, func(i int, x float64) float64 { return x + sign*delta(i, x) })
			r, err := evalF64OrOwn(v, moved)
			if err != nil {
				return nil, err
			}
			if worst == nil {
				worst = make([]float64, len(r))
			}
			for i, y := range r {
				d := math.Abs(y - ref[i])
				switch {
				case y == ref[i]:
					d = 0 // also the same infinity
				case math.IsNaN(ref[i]):
					d = 0 // a NaN result must be NaN: nothing to bound
				case math.IsNaN(y) && a.At(i) == 0:
					d = 0 // only the model's perturbation left the op's domain (pow's integer exponent)
				case math.IsNaN(y):
					d = math.Inf(1)
				}
				worst[i] = max(worst[i], d)
			}
		}
		if e == nil {
			e = make([]float64, len(worst))
		}
		for i, w := range worst {
			e[i] += w
		}
	}
	return e, nil
}

// evalF64OrOwn evaluates an elementwise op in f64 where its result is a float, else in its own
// (integer or bool) result dtype, returning the result as float64s.
func evalF64OrOwn(v *ir.Value, args []*tensor.Tensor) ([]float64, error) {
	if v.Type.DType.IsFloat() {
		return evalF64(v, args)
	}
	r, err := ops.Eval(v, args)
	if err != nil {
		return nil, err
	}
	out := make([]float64, r.Len())
	for i := range out {
		out[i] = r.At(i)
	}
	return out, nil
}

// shift moves t's elements by f: floats in f64, integers to the nearest integer beyond (never
// less than the bound), bools flip where they move at all.
func shift(t *tensor.Tensor, f func(i int, x float64) float64) *tensor.Tensor {
	d := t.Type.DType
	if d.IsFloat() {
		return f64(t, f)
	}
	r := tensor.New(t.Type)
	for i := range r.I {
		x := float64(t.I[i])
		y := f(i, x)
		switch {
		case y == x:
			r.I[i] = t.I[i]
		case d == ir.Bool:
			r.I[i] = 1 - t.I[i]
		case y > x:
			r.I[i] = tensor.WrapInt(d, int64(math.Ceil(min(y, 1<<62))))
		default:
			r.I[i] = tensor.WrapInt(d, int64(math.Floor(max(y, -1<<62))))
		}
	}
	return r
}

// perturbAll bounds an op whose structure is unknown (a custom kernel): every operand moved by
// its bound and rel of its magnitude, all together, both ways, plus the result's rounding.
func perturbAll(v *ir.Value, args []Bound, val *tensor.Tensor, rel float64) ([]float64, error) {
	e := make([]float64, val.Len())
	for i := range e {
		e[i] = roundingErr(v.Type.DType, rel, val.At(i))
	}
	for _, sign := range []float64{1, -1} {
		moved := make([]*tensor.Tensor, len(args))
		for k, a := range args {
			if !a.Val.Type.DType.IsFloat() {
				moved[k] = a.Val
				continue
			}
			m := tensor.New(a.Val.Type)
			for i := range m.F {
				x := a.Val.F[i]
				m.F[i] = tensor.RoundFloat(a.Val.Type.DType, x+sign*(a.At(i)+rel*math.Abs(x)))
			}
			moved[k] = m
		}
		r, err := ops.Eval(v, moved)
		if err != nil {
			return nil, err
		}
		for i := range e {
			if d := math.Abs(r.At(i) - val.At(i)); !math.IsNaN(val.At(i)) {
				e[i] = max(e[i], orInf(d)+roundingErr(v.Type.DType, rel, val.At(i)))
			}
		}
	}
	return e, nil
}

// orInf turns NaN (∞ − ∞) into +∞: the bound is not determined.
func orInf(x float64) float64 {
	if math.IsNaN(x) {
		return math.Inf(1)
	}
	return x
}

// anyInf is nil when every operand is exact, else +∞ everywhere (n elements).
func anyInf(n int, args []Bound) []float64 {
	for _, a := range args {
		if a.Err != nil {
			return allInf(n, a.Err)
		}
	}
	return nil
}

// allInf is +∞ for n elements if any of src is nonzero, else nil.
func allInf(n int, src []float64) []float64 {
	for _, x := range src {
		if x != 0 {
			e := make([]float64, n)
			for i := range e {
				e[i] = math.Inf(1)
			}
			return e
		}
	}
	return nil
}
