package ops

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// symRule computes an op's result sizes as expressions over its operands' (ir.Type.Axes), after
// Infer has accepted the operands at their bounds. want is the result's declared symbolic form, or
// nil: the ops whose result shape is an attribute (reshape, broadcast_in_dim) read their symbolic
// target from it, the others ignore it (the caller compares). r holds the graph's dim ranges.
type symRule func(args []ir.Type, a ir.Attrs, want []sym.Expr, r sym.Ranges) ([]sym.Expr, error)

// symRules are the ops that accept symbolic sizes beyond the classes' rules (symRuleOf).
var symRules = map[string]symRule{
	"dot_general":      symDot,
	"conv2d":           symConv,
	"max_pool2d":       symPool,
	"avg_pool2d":       symPool,
	"reshape":          symReshape,
	"transpose":        symTranspose,
	"broadcast_in_dim": symBroadcast,
	"slice":            symSlice,
	"concat":           symConcat,
	"pad":              symPad,
	"gather":           symGather,
	"philox_uniform":   symPhilox,      // random.go
	UpdateSliceOp:      symUpdateSlice, // update.go
	AttentionOp:        symAttention,   // symattention.go
	AttentionLSEOp:     symAttentionLSE,
	AttentionGradOp:    symAttentionGrad,
}

// symRuleOf returns op's rule: its own, else its class's (elementwise ops and reductions share
// one), else nil: the op refuses symbolic sizes.
func symRuleOf(op *Op) symRule {
	if r, ok := symRules[op.Name]; ok {
		return r
	}
	switch op.Class {
	case Elementwise:
		return symElementwise
	case Reduce:
		return symReduce
	}
	return nil
}

// InferSym is Infer for graphs with symbolic dims (docs/dynamic.md): it checks the op at its
// operands' bounds with Infer, then computes the result's sizes as expressions over r with the
// op's symbolic rule. The result's Shape is their bound, which must be what Infer computed. want is
// the declared result's symbolic form (nil when building). Without symbolic operands or want it
// is Infer.
func InferSym(name string, args []ir.Type, a ir.Attrs, r sym.Ranges, want []sym.Expr) (ir.Type, error) {
	symbolic := want != nil
	bounds := make([]ir.Type, len(args))
	for i, t := range args {
		bounds[i] = bound(t)
		symbolic = symbolic || t.Sym != nil
	}
	t, err := Infer(name, bounds, a)
	if err != nil || !symbolic {
		return t, err
	}
	rule := symRuleOf(byName[name])
	if rule == nil {
		return ir.Type{}, fmt.Errorf("%s: takes no symbolic sizes, have %s", name, typeList(args, want))
	}
	axes, err := rule(args, a, want, r)
	if err != nil {
		return ir.Type{}, fmt.Errorf("%s: %w", name, err)
	}
	st, err := ir.SymType(t.DType, r, axes...)
	if err != nil {
		return ir.Type{}, fmt.Errorf("%s: result %s: %w", name, ir.Type{DType: t.DType, Shape: t.Shape, Sym: axes}, err)
	}
	if !st.Shape.Equal(t.Shape) {
		return ir.Type{}, fmt.Errorf("%s: result %s is bounded by %v, but the op computes %v at its operands' bounds", name, st, st.Shape, t.Shape)
	}
	return st, nil
}

// bound is t at its bounds: the static type the ordinary inference checks.
func bound(t ir.Type) ir.Type { return ir.Type{DType: t.DType, Shape: t.Shape} }

func typeList(args []ir.Type, want []sym.Expr) string {
	parts := make([]string, len(args))
	for i, t := range args {
		parts[i] = t.String()
	}
	s := strings.Join(parts, ", ")
	if want != nil {
		s += " and the result sizes " + sizes(want)
	}
	return s
}

func sizes(es []sym.Expr) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.String()
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// checkSym is Check for a graph with dims or a value with symbolic sizes.
func checkSym(g *ir.Graph, v *ir.Value, args []ir.Type) error {
	t, err := InferSym(v.Op, args, v.Attrs, g.Ranges(), v.Type.Sym)
	if err != nil {
		return err
	}
	if !t.Equal(v.Type) {
		return fmt.Errorf("result type is %s, but the op computes %s", v.Type, t)
	}
	return nil
}

func symbolicValue(g *ir.Graph, v *ir.Value) bool {
	if len(g.Dims) > 0 || v.Type.Sym != nil {
		return true
	}
	return slices.ContainsFunc(v.Args, func(a *ir.Value) bool { return a.Type.Sym != nil })
}

// sameSize checks that two sizes are provably equal: the same canonical expression. The
// message, what, is formatted only on failure.
func sameSize(x, y sym.Expr, what string, args ...any) error {
	if !x.Equal(y) {
		return fmt.Errorf("%s: %s and %s are not provably equal", fmt.Sprintf(what, args...), x, y)
	}
	return nil
}

func symElementwise(args []ir.Type, _ ir.Attrs, _ []sym.Expr, _ sym.Ranges) ([]sym.Expr, error) {
	for _, t := range args[1:] {
		for i := range t.Shape {
			if err := sameSize(args[0].Axis(i), t.Axis(i), "operand sizes differ (%s and %s) in dim %d", args[0], t, i); err != nil {
				return nil, err
			}
		}
	}
	return args[0].Axes(), nil
}

func symReduce(args []ir.Type, a ir.Attrs, _ []sym.Expr, _ sym.Ranges) ([]sym.Expr, error) {
	axes, keep := a.Ints("axes"), a.Bool("keepdims", false)
	var out []sym.Expr
	for i, e := range args[0].Axes() {
		switch {
		case !slices.Contains(axes, i):
			out = append(out, e)
		case keep:
			out = append(out, sym.Const(1))
		}
	}
	return out, nil
}

func symTranspose(args []ir.Type, a ir.Attrs, _ []sym.Expr, _ sym.Ranges) ([]sym.Expr, error) {
	out := make([]sym.Expr, 0, len(args[0].Shape))
	for _, p := range a.Ints("perm") {
		out = append(out, args[0].Axis(p))
	}
	return out, nil
}

func symDot(args []ir.Type, a ir.Attrs, _ []sym.Expr, _ sym.Ranges) ([]sym.Expr, error) {
	l, r := args[0], args[1]
	d, err := dotSpec(bound(l), bound(r), a)
	if err != nil {
		return nil, err
	}
	for i := range d.lb {
		if err := sameSize(l.Axis(d.lb[i]), r.Axis(d.rb[i]), "batch dims %d and %d of %s and %s", d.lb[i], d.rb[i], l, r); err != nil {
			return nil, err
		}
	}
	for i := range d.lc {
		if err := sameSize(l.Axis(d.lc[i]), r.Axis(d.rc[i]), "contracting dims %d and %d of %s and %s", d.lc[i], d.rc[i], l, r); err != nil {
			return nil, err
		}
	}
	var out []sym.Expr
	for _, i := range append(slices.Clone(d.lb), d.lf...) {
		out = append(out, l.Axis(i))
	}
	for _, i := range d.rf {
		out = append(out, r.Axis(i))
	}
	return out, nil
}

// windowSym is one spatial output size, ⌊(in + 2·pad − dil·(k−1) − 1)/stride⌋ + 1, which must be
// at least 1 everywhere in the ranges.
func windowSym(in sym.Expr, k, s, p, d int, r sym.Ranges) (sym.Expr, error) {
	num := sym.Add(in, sym.Const(int64(2*p-d*(k-1)-1)))
	out := sym.Add(sym.Div(num, int64(s)), sym.Const(1))
	if lo, _, err := out.Range(r); err != nil || lo < 1 {
		if err != nil {
			return out, err
		}
		return out, fmt.Errorf("output size %s (input %s, window %d, stride %d, padding %d, dilation %d) can be %d: declare the input's range so that the window fits", out, in, k, s, p, d, lo)
	}
	return out, nil
}

func static(what string, e sym.Expr) (int, error) {
	n, ok := e.IsConst()
	if !ok {
		return 0, fmt.Errorf("%s must be static, have %s", what, e)
	}
	return int(n), nil
}

func symConv(args []ir.Type, a ir.Attrs, _ []sym.Expr, r sym.Ranges) ([]sym.Expr, error) {
	x, w := args[0], args[1]
	g, err := convSpec(bound(x), bound(w), a)
	if err != nil {
		return nil, err
	}
	for i := range w.Shape {
		if i == 1 {
			continue // the input channels may be symbolic: a weight gradient contracts the batch as them
		}
		if _, err := static(fmt.Sprintf("the weight's dim %d", i), w.Axis(i)); err != nil {
			return nil, err
		}
	}
	if err := sameSize(x.Axis(1), sym.Scale(w.Axis(1), int64(g.groups)), "input channels"); err != nil {
		return nil, err
	}
	oh, err := windowSym(x.Axis(2), g.kh, g.stride[0], g.pad[0], g.dil[0], r)
	if err != nil {
		return nil, err
	}
	ow, err := windowSym(x.Axis(3), g.kw, g.stride[1], g.pad[1], g.dil[1], r)
	if err != nil {
		return nil, err
	}
	return []sym.Expr{x.Axis(0), sym.Const(int64(g.outC)), oh, ow}, nil
}

func symPool(args []ir.Type, a ir.Attrs, _ []sym.Expr, r sym.Ranges) ([]sym.Expr, error) {
	x := args[0]
	g, err := poolSpec(bound(x), a)
	if err != nil {
		return nil, err
	}
	oh, err := windowSym(x.Axis(2), g.kh, g.stride[0], g.pad[0], 1, r)
	if err != nil {
		return nil, err
	}
	ow, err := windowSym(x.Axis(3), g.kw, g.stride[1], g.pad[1], 1, r)
	if err != nil {
		return nil, err
	}
	return []sym.Expr{x.Axis(0), x.Axis(1), oh, ow}, nil
}

func symSlice(args []ir.Type, a ir.Attrs, _ []sym.Expr, _ sym.Ranges) ([]sym.Expr, error) {
	x := args[0]
	start, limit, stride := a.Ints("start"), a.Ints("limit"), sliceStride(a, len(x.Shape))
	out := make([]sym.Expr, len(x.Shape))
	for i := range x.Shape {
		e := x.Axis(i)
		if _, ok := e.IsConst(); ok {
			out[i] = sym.Const(int64((limit[i] - start[i] + stride[i] - 1) / stride[i]))
			continue
		}
		if start[i] != 0 || limit[i] != x.Shape[i] || stride[i] != 1 {
			return nil, fmt.Errorf("dim %d of %s is %s: a symbolic dim is sliced whole (start 0, limit its bound %d, stride 1), have start %d, limit %d, stride %d",
				i, x, e, x.Shape[i], start[i], limit[i], stride[i])
		}
		out[i] = e
	}
	return out, nil
}

func symConcat(args []ir.Type, a ir.Attrs, _ []sym.Expr, _ sym.Ranges) ([]sym.Expr, error) {
	axis := a.Int("axis", 0)
	out := args[0].Axes()
	for _, t := range args[1:] {
		for i := range t.Shape {
			if i == axis {
				out[i] = sym.Add(out[i], t.Axis(i))
			} else if err := sameSize(args[0].Axis(i), t.Axis(i), "dim %d of %s and %s", i, args[0], t); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func symPad(args []ir.Type, a ir.Attrs, _ []sym.Expr, _ sym.Ranges) ([]sym.Expr, error) {
	low, high := a.Ints("low"), a.Ints("high")
	out := args[0].Axes()
	for i := range out {
		out[i] = sym.Add(out[i], sym.Const(int64(low[i]+high[i])))
	}
	return out, nil
}

func symGather(args []ir.Type, _ ir.Attrs, _ []sym.Expr, _ sym.Ranges) ([]sym.Expr, error) {
	table, idx := args[0], args[1]
	if _, err := static("the table's rows", table.Axis(0)); err != nil {
		return nil, err
	}
	return append(idx.Axes(), table.Axes()[1:]...), nil
}

// symBroadcast: each operand dim is 1 or provably the result dim it maps to. The result's other
// dims come from want, or are the static shape attribute.
func symBroadcast(args []ir.Type, a ir.Attrs, want []sym.Expr, _ sym.Ranges) ([]sym.Expr, error) {
	x, shape, dims := args[0], a.Ints("shape"), a.Ints("dims")
	out := make([]sym.Expr, len(shape))
	if want != nil {
		if len(want) != len(shape) {
			return nil, fmt.Errorf("result %s has %d dims, shape %v has %d", ir.Type{DType: x.DType, Sym: want}, len(want), ir.Shape(shape), len(shape))
		}
		copy(out, want)
	} else {
		for i, n := range shape {
			out[i] = sym.Const(int64(n))
		}
	}
	for i, d := range dims {
		e := x.Axis(i)
		if one, ok := e.IsConst(); ok && one == 1 {
			continue
		}
		if want == nil {
			out[d] = e
			continue
		}
		if err := sameSize(e, out[d], "operand dim %d of %s maps to result dim %d", i, x, d); err != nil {
			return nil, err
		}
	}
	return out, nil
}
