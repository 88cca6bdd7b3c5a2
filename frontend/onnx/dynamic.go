package onnx

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/tensor"
)

// Dynamic axes (docs/dynamic.md, docs/onnx.md): an input's symbolic dimension given a bound by
// Options.MaxShapes becomes a ranged dim [1, bound] of the graph, named after its dim_param, so
// the model is built once for every size in range. Sizes read from such an input (Shape, Size)
// are compile-time vectors whose entries may be expressions (val.sizes); they flow through the
// shape arithmetic torch exports (Gather, Unsqueeze, Concat, Slice, Cast, +, -, *, /) and are
// accepted only as a Reshape's shape. Any other use is refused by name.

// dimSource records which input's bound declared a dim, for messages.
type dimSource struct {
	input string
	axis  int
	bound int
}

// declareDims declares the dims of the inputs Options.MaxShapes bounds, before any input is
// read, so that an input without a bound that shares a dim_param shares the dim.
func (im *importer) declareDims(gp *onnxpb.GraphProto) error {
	im.dimOf = map[string]string{}
	im.dimFrom = map[string]dimSource{}
	im.maxAxes = map[string][]sym.Expr{}
	for name := range im.opt.MaxShapes {
		if !slices.ContainsFunc(gp.GetInput(), func(v *onnxpb.ValueInfoProto) bool { return v.GetName() == name }) {
			return fmt.Errorf("--max-shape %s: the model has no input %q (inputs: %s)", name, name, inputList(gp))
		}
		if _, ok := im.opt.Shapes[name]; ok {
			return fmt.Errorf("--max-shape %s: input %q has a --shape too; give one of them", name, name)
		}
		if _, ok := im.opt.Consts[name]; ok {
			return fmt.Errorf("--max-shape %s: input %q is bound by --const", name, name)
		}
	}
	for _, in := range gp.GetInput() {
		name := in.GetName()
		bound, ok := im.opt.MaxShapes[name]
		if !ok {
			continue
		}
		decl := in.GetType().GetTensorType().GetShape()
		if decl == nil {
			return fmt.Errorf("--max-shape %s: the model does not give the input's shape; fix it with --shape", name)
		}
		if len(decl.GetDim()) != len(bound) {
			return fmt.Errorf("--max-shape %s: shape %v has rank %d, input %q has rank %d", name, bound, len(bound), name, len(decl.GetDim()))
		}
		axes := make([]sym.Expr, len(bound))
		for i, d := range decl.GetDim() {
			if d.GetDimParam() == "" && d.GetValue() != nil && d.GetDimValue() >= 0 {
				if int64(bound[i]) != d.GetDimValue() {
					return fmt.Errorf("--max-shape %s: dim %d is %d, but input %q declares it static, %d", name, i, bound[i], name, d.GetDimValue())
				}
				axes[i] = sym.Const(int64(bound[i]))
				continue
			}
			if bound[i] < 1 {
				return fmt.Errorf("--max-shape %s: dim %d (%s) is %d, want a bound of at least 1", name, i, dimLabel(d), bound[i])
			}
			dim, err := im.dim(d, name, i, bound[i])
			if err != nil {
				return err
			}
			axes[i] = sym.Sym(dim)
		}
		im.maxAxes[name] = axes
	}
	return nil
}

// dimLabel is how messages name an input's dynamic dim: its dim_param, or "unnamed".
func dimLabel(d *onnxpb.TensorShapeProto_Dimension) string {
	if p := d.GetDimParam(); p != "" {
		return fmt.Sprintf("%q", p)
	}
	return "unnamed"
}

// dim returns the graph dim of an input's dynamic axis bounded by bound: the dim of its
// dim_param, declared on first use; an axis without a dim_param gets a dim of its own.
func (im *importer) dim(d *onnxpb.TensorShapeProto_Dimension, input string, axis, bound int) (string, error) {
	param := d.GetDimParam()
	if param != "" {
		if name, ok := im.dimOf[param]; ok {
			if src := im.dimFrom[name]; src.bound != bound {
				return "", fmt.Errorf("--max-shape %s: dim %d (%q) is %d, but --max-shape %s bounds %q by %d (its dim %d)", input, axis, param, bound, src.input, param, src.bound, src.axis)
			}
			return name, nil
		}
	}
	base := param
	if base == "" {
		base = fmt.Sprintf("%s_d%d", input, axis)
	}
	name := dimName(base)
	for i := 2; slices.ContainsFunc(im.b.g.Dims, func(x ir.Dim) bool { return x.Name == name }); i++ {
		name = fmt.Sprintf("%s_%d", dimName(base), i)
	}
	im.b.g.DeclareDim(name, 1, bound)
	im.dimFrom[name] = dimSource{input, axis, bound}
	if param != "" {
		im.dimOf[param] = name
	}
	return name, nil
}

// dimName turns an ONNX dim_param (an untrusted string) into a dim name: characters other than
// letters, digits and '_' become '_', and a leading digit gets a 'd'.
func dimName(s string) string {
	var sb strings.Builder
	for _, r := range s {
		if r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			sb.WriteRune(r)
		} else {
			sb.WriteByte('_')
		}
	}
	n := sb.String()
	if n == "" || '0' <= n[0] && n[0] <= '9' {
		n = "d" + n
	}
	return n
}

// symInput is the type of an input with dynamic axes: those --max-shape bounds, or, for an input
// without one, the axes whose dim_param a bounded input declared (ok false: none).
func (im *importer) symInput(in *onnxpb.ValueInfoProto, d ir.DType) (t ir.Type, ok bool, err error) {
	axes, bounded := im.maxAxes[in.GetName()]
	if !bounded {
		decl := in.GetType().GetTensorType().GetShape()
		if decl == nil {
			return t, false, nil
		}
		for _, dim := range decl.GetDim() {
			switch name, shared := im.dimOf[dim.GetDimParam()]; {
			case dim.GetDimParam() != "" && shared:
				axes = append(axes, sym.Sym(name))
			case dim.GetDimParam() == "" && dim.GetValue() != nil && dim.GetDimValue() >= 0:
				axes = append(axes, sym.Const(dim.GetDimValue()))
			default:
				return t, false, nil // left to --shape and --batch, which name what is missing
			}
		}
		if !slices.ContainsFunc(axes, func(e sym.Expr) bool { _, c := e.IsConst(); return !c }) {
			return t, false, nil
		}
	}
	t, err = ir.SymType(d, im.b.g.Ranges(), axes...)
	return t, err == nil, err
}

// infer is ops.Infer, over expressions when the graph has dims; want is the result's symbolic
// sizes for reshape and broadcast_in_dim (nil: derived from the bounds).
func (b *builder) infer(name string, types []ir.Type, attrs ir.Attrs, want []sym.Expr) (ir.Type, error) {
	if len(b.g.Dims) == 0 {
		return ops.Infer(name, types, attrs)
	}
	return ops.InferSym(name, types, attrs, b.g.Ranges(), want)
}

// symbolicSizes reports whether es holds a size known only at run time.
func symbolicSizes(es []sym.Expr) bool {
	return slices.ContainsFunc(es, func(e sym.Expr) bool { _, c := e.IsConst(); return !c })
}

// sizeVal is a compile-time integer tensor of type t whose entries are the sizes es, c holding
// their bounds.
func (b *builder) sizeVal(t ir.Type, es []sym.Expr) *val {
	c := tensor.New(t)
	for i, e := range es {
		_, hi, _ := e.Range(b.g.Ranges())
		c.I[i] = hi
	}
	x := constant(c)
	if symbolicSizes(es) {
		x.sizes = es
	}
	return x
}

// sizesRefused is the error for a symbolic size used where gcomp needs a number.
func sizesRefused(x *val, use string) error {
	return unsupportedf("%s depends on the size %s of an input with --max-shape, known only at run time; gcomp takes such a size only as a Reshape's shape", use, sizeList(x.sizes))
}

func sizeList(es []sym.Expr) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.String()
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// sizeMoves are the ops that move a size vector's entries without computing with them; the
// index of each operand whose entries move (the others are indices or shapes).
var sizeMoves = map[string]func(i int) bool{
	"reshape": first, "broadcast_in_dim": first, "transpose": first, "slice": first, "gather": first,
	"concat": func(int) bool { return true },
}

func first(i int) bool { return i == 0 }

// foldSizes computes an op over compile-time operands some of which hold symbolic sizes: a
// movement moves the expressions (each entry is computed through the op as its own index into
// a table of them), integer arithmetic computes them; any other op is refused.
func (b *builder) foldSizes(name string, attrs ir.Attrs, t ir.Type, args []*val) (*val, error) {
	if !t.DType.IsInt() {
		return nil, sizesRefused(firstSized(args), fmt.Sprintf("%s to %s", name, t.DType))
	}
	out := make([]sym.Expr, t.Shape.NumElements())
	if moves, ok := sizeMoves[name]; ok || name == "cast" {
		var table []sym.Expr
		cs := make([]*tensor.Tensor, len(args))
		for i, a := range args {
			cs[i] = a.c
			if !ok || moves(i) {
				ids := tensor.New(ir.Type{DType: ir.I64, Shape: a.t.Shape})
				for j := range ids.I {
					ids.I[j] = int64(len(table))
					table = append(table, a.entry(j))
				}
				cs[i] = ids
			} else if a.sizes != nil {
				return nil, sizesRefused(a, "the indices of "+name)
			}
		}
		if name == "cast" { // to an integer type: the entries stay
			for j := range out {
				out[j] = table[cs[0].I[j]]
			}
			return b.sizeVal(t, out), nil
		}
		r, err := ops.Eval(&ir.Value{Op: name, Attrs: attrs, Type: ir.Type{DType: ir.I64, Shape: t.Shape}}, cs)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		for j := range out {
			out[j] = table[r.I[j]]
		}
		return b.sizeVal(t, out), nil
	}
	if len(args) != 2 || !args[0].t.Shape.Equal(t.Shape) || !args[1].t.Shape.Equal(t.Shape) {
		return nil, sizesRefused(firstSized(args), "op "+name)
	}
	for j := range out {
		x, y := args[0].entry(j), args[1].entry(j)
		switch k, c := y.IsConst(); {
		case name == "add":
			out[j] = sym.Add(x, y)
		case name == "sub":
			out[j] = sym.Sub(x, y)
		case name == "mul":
			out[j] = sym.Mul(x, y)
		case name == "div" && c && k > 0 && b.nonNegative(x):
			out[j] = sym.Div(x, k) // ONNX's truncation is floor division for x >= 0
		default:
			return nil, sizesRefused(firstSized(args), "op "+name)
		}
	}
	return b.sizeVal(t, out), nil
}

// nonNegative reports whether e is provably at least 0 over the graph's dims.
func (b *builder) nonNegative(e sym.Expr) bool {
	lo, _, err := e.Range(b.g.Ranges())
	return err == nil && lo >= 0
}

func firstSized(args []*val) *val {
	for _, a := range args {
		if a.sizes != nil {
			return a
		}
	}
	return args[0]
}

// entry is element j of a compile-time integer vector as an expression.
func (x *val) entry(j int) sym.Expr {
	if x.sizes != nil {
		return x.sizes[j]
	}
	return sym.Const(int64(x.c.At(j)))
}

// reshapeSizes is a Reshape whose shape holds symbolic sizes (torch's x.view(x.size(0), -1)):
// 0 copies the input's dim (unless allowzero), one -1 is the input's size divided by the others'
// when that division is exact.
func (b *builder) reshapeSizes(x *val, shape *val, allowZero bool) (*val, error) {
	es := x.t.Axes()
	want := make([]sym.Expr, len(shape.sizes))
	infer := -1
	rest := sym.Const(1)
	for i := range want {
		e := shape.entry(i)
		if k, c := e.IsConst(); c {
			switch {
			case k == 0 && !allowZero:
				if i >= len(es) {
					return nil, fmt.Errorf("shape %s copies dim %d, but the input is %s", sizeList(shape.sizes), i, x.t)
				}
				e = es[i]
			case k == -1 && infer < 0:
				infer = i
				continue
			case k < 0:
				return nil, fmt.Errorf("shape %s has a negative dim", sizeList(shape.sizes))
			}
		}
		want[i] = e
		rest = sym.Mul(rest, e)
	}
	in := sym.Const(1)
	for _, e := range es {
		in = sym.Mul(in, e)
	}
	if infer >= 0 {
		q, ok := quotient(es, slices.Delete(slices.Clone(want), infer, infer+1), b.g.Ranges())
		if !ok {
			return nil, unsupportedf("cannot reshape %s to %s: its size %s is not provably a multiple of %s", x.t, sizeList(shape.sizes), in, rest)
		}
		want[infer] = q
	} else if !rest.Equal(in) {
		return nil, fmt.Errorf("cannot reshape %s to %s: %s elements, not %s", x.t, sizeList(shape.sizes), rest, in)
	}
	t, err := ir.SymType(x.t.DType, b.g.Ranges(), want...)
	if err != nil {
		return nil, err
	}
	if t.Equal(x.t) {
		return x, nil
	}
	return b.opWant("reshape", ir.Attrs{"shape": []int(t.Shape.Clone())}, want, x)
}

// quotient is the product of ins divided by the product of given, when provably exact: each
// given size equal to one of ins cancels it (torch's [x.size(0), -1]); what remains of given must
// then be a positive constant dividing what remains of ins, or what remains of ins must be a
// constant multiple of it (6*batch over 2*batch), the constant read at the bounds r.
func quotient(ins, given []sym.Expr, r sym.Ranges) (sym.Expr, bool) {
	ins = slices.Clone(ins)
	k := sym.Const(1)
	for _, g := range given {
		if i := slices.IndexFunc(ins, g.Equal); i >= 0 {
			ins = slices.Delete(ins, i, i+1)
			continue
		}
		k = sym.Mul(k, g)
	}
	n := sym.Const(1)
	for _, e := range ins {
		n = sym.Mul(n, e)
	}
	if c, ok := k.IsConst(); ok {
		if c <= 0 {
			return n, false
		}
		q := sym.Div(n, c)
		return q, sym.Scale(q, c).Equal(n)
	}
	_, nh, err1 := n.Range(r)
	_, kh, err2 := k.Range(r)
	if err1 != nil || err2 != nil || kh <= 0 || nh%kh != 0 {
		return n, false
	}
	return sym.Const(nh / kh), sym.Scale(k, nh/kh).Equal(n)
}

// broadcastSym is the common type of xs under numpy's broadcasting over expressions: two sizes
// match when provably equal or when one is the constant 1.
func (b *builder) broadcastSym(xs []*val) (ir.Type, error) {
	r := 0
	for _, x := range xs {
		r = max(r, len(x.t.Shape))
	}
	out := make([]sym.Expr, r)
	one := sym.Const(1)
	for i := range out {
		out[i] = one
	}
	for _, x := range xs {
		for i, d := range x.t.Axes() {
			j := r - len(x.t.Shape) + i
			switch {
			case d.Equal(out[j]) || d.Equal(one):
			case out[j].Equal(one):
				out[j] = d
			default:
				return ir.Type{}, fmt.Errorf("operands do not broadcast: dim %d is %s and %s, not provably equal", j, out[j], d)
			}
		}
	}
	return ir.SymType(xs[0].t.DType, b.g.Ranges(), out...)
}
