package ops

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gcomp/gcomp/ir"
)

// dset is a set of dtypes: the operand types an op accepts.
type dset uint16

func setOf(ds ...ir.DType) dset {
	var s dset
	for _, d := range ds {
		s |= 1 << d
	}
	return s
}

var (
	floats  = setOf(ir.F32, ir.F16, ir.BF16, ir.F64)
	ints    = setOf(ir.I32, ir.I64, ir.I8, ir.U8)
	bools   = setOf(ir.Bool)
	numeric = floats | ints
	logical = ints | bools
	anyType = numeric | bools
)

var setNames = map[dset]string{floats: "float", ints: "integer", numeric: "float or integer",
	logical: "bool or integer", anyType: "any", bools: "bool"}

func (s dset) has(d ir.DType) bool { return s&(1<<d) != 0 }

func (s dset) String() string { return setNames[s] }

// want checks that t's dtype is in s.
func (s dset) want(t ir.Type) error {
	if !s.has(t.DType) {
		return fmt.Errorf("wants a %s type, have %s", s, t)
	}
	return nil
}

// errf builds an inference error. Types and []int lists print in the text form: f32[2,3], [0,1].
func errf(format string, args ...any) error {
	for i, a := range args {
		if l, ok := a.([]int); ok {
			args[i] = ir.Shape(l)
		}
	}
	return fmt.Errorf(format, args...)
}

func checkAxis(ax int, t ir.Type) error {
	if ax < 0 || ax >= len(t.Shape) {
		return errf("axis %d out of range for %s", ax, t)
	}
	return nil
}

// checkAxes checks that axes are in range for t, and unique; sorted also asks for ascending order.
func checkAxes(what string, axes []int, t ir.Type, sorted bool) error {
	for i, ax := range axes {
		if err := checkAxis(ax, t); err != nil {
			return err
		}
		if sorted && i > 0 && axes[i-1] >= ax {
			return errf("%s %v must be sorted and unique", what, axes)
		}
		if slices.Index(axes[:i], ax) >= 0 {
			return errf("%s %v name axis %d twice", what, axes, ax)
		}
	}
	return nil
}

// pair returns the 2-element []int attribute name, or def if absent.
func pair(a ir.Attrs, name string, def int) ([2]int, error) {
	v, ok := a[name]
	if !ok {
		return [2]int{def, def}, nil
	}
	s := v.([]int)
	if len(s) != 2 {
		return [2]int{}, errf("%s must have 2 elements, have %v", name, s)
	}
	return [2]int{s[0], s[1]}, nil
}

// pairs reads several 2-element attributes, checking each is at least min.
func pairs(a ir.Attrs, specs ...pairSpec) ([][2]int, error) {
	out := make([][2]int, len(specs))
	for i, s := range specs {
		p, err := pair(a, s.name, s.def)
		if err != nil {
			return nil, err
		}
		if p[0] < s.min || p[1] < s.min {
			return nil, errf("%s %v must be at least %d", s.name, p[:], s.min)
		}
		out[i] = p
	}
	return out, nil
}

type pairSpec struct {
	name     string
	def, min int
}

func checkShape(shape []int) error {
	for _, d := range shape {
		if d < 0 {
			return errf("negative dimension in shape %v", shape)
		}
	}
	return nil
}

// --- elementwise ---

func inferUnary(allowed dset) func([]ir.Type, ir.Attrs) (ir.Type, error) {
	return func(args []ir.Type, _ ir.Attrs) (ir.Type, error) {
		return args[0], allowed.want(args[0])
	}
}

// inferBinary checks that both operands have one type in allowed; the result has that type, or
// bool for comparisons.
func inferBinary(allowed dset, result ir.DType) func([]ir.Type, ir.Attrs) (ir.Type, error) {
	return func(args []ir.Type, _ ir.Attrs) (ir.Type, error) {
		x, y := args[0], args[1]
		if !x.Equal(y) {
			return ir.Type{}, errf("operand types differ: %s and %s", x, y)
		}
		if err := allowed.want(x); err != nil {
			return ir.Type{}, err
		}
		if result != ir.Invalid {
			return ir.Type{DType: result, Shape: x.Shape.Clone()}, nil
		}
		return x, nil
	}
}

func inferSelect(args []ir.Type, _ ir.Attrs) (ir.Type, error) {
	p, t, f := args[0], args[1], args[2]
	if p.DType != ir.Bool {
		return ir.Type{}, errf("predicate must be bool, have %s", p)
	}
	if !t.Equal(f) {
		return ir.Type{}, errf("branch types differ: %s and %s", t, f)
	}
	if !p.Shape.Equal(t.Shape) {
		return ir.Type{}, errf("predicate shape differs from the branches: %s and %s", p, t)
	}
	return t, nil
}

func inferCast(args []ir.Type, a ir.Attrs) (ir.Type, error) {
	to := a.DType("to")
	if !to.Valid() {
		return ir.Type{}, errf("invalid target dtype %s", to)
	}
	return ir.Type{DType: to, Shape: args[0].Shape.Clone()}, nil
}

// --- reductions ---

func inferReduce(args []ir.Type, a ir.Attrs) (ir.Type, error) {
	x := args[0]
	if err := numeric.want(x); err != nil {
		return ir.Type{}, err
	}
	axes := a.Ints("axes")
	if err := checkAxes("axes", axes, x, true); err != nil {
		return ir.Type{}, err
	}
	return ir.Type{DType: x.DType, Shape: reducedShape(x.Shape, axes, a.Bool("keepdims", false))}, nil
}

func reducedShape(s ir.Shape, axes []int, keep bool) ir.Shape {
	out := ir.Shape{}
	for i, d := range s {
		switch {
		case !slices.Contains(axes, i):
			out = append(out, d)
		case keep:
			out = append(out, 1)
		}
	}
	return out
}

// --- contractions ---

// dotDims is a checked dot_general dimension specification.
type dotDims struct {
	lb, rb, lc, rc []int // batch and contracting dims of lhs and rhs
	lf, rf         []int // free dims of lhs and rhs, ascending
}

func freeDims(rank int, used ...[]int) []int {
	var f []int
	for i := 0; i < rank; i++ {
		if !slices.Contains(used[0], i) && !slices.Contains(used[1], i) {
			f = append(f, i)
		}
	}
	return f
}

func dotSpec(l, r ir.Type, a ir.Attrs) (dotDims, error) {
	d := dotDims{lb: a.Ints("lhs_batch"), rb: a.Ints("rhs_batch"), lc: a.Ints("lhs_contract"), rc: a.Ints("rhs_contract")}
	if len(d.lb) != len(d.rb) {
		return d, errf("lhs_batch %v and rhs_batch %v differ in length", d.lb, d.rb)
	}
	if len(d.lc) != len(d.rc) {
		return d, errf("lhs_contract %v and rhs_contract %v differ in length", d.lc, d.rc)
	}
	for _, c := range []struct {
		t      ir.Type
		b, con []int
	}{{l, d.lb, d.lc}, {r, d.rb, d.rc}} {
		all := append(slices.Clone(c.b), c.con...)
		if err := checkAxes("batch and contracting dims", all, c.t, false); err != nil {
			return d, err
		}
	}
	for i := range d.lb {
		if l.Shape[d.lb[i]] != r.Shape[d.rb[i]] {
			return d, errf("batch dimensions differ: %s and %s", l, r)
		}
	}
	for i := range d.lc {
		if l.Shape[d.lc[i]] != r.Shape[d.rc[i]] {
			return d, errf("inner dimensions differ: %s and %s", l, r)
		}
	}
	d.lf, d.rf = freeDims(len(l.Shape), d.lb, d.lc), freeDims(len(r.Shape), d.rb, d.rc)
	return d, nil
}

func inferDot(args []ir.Type, a ir.Attrs) (ir.Type, error) {
	l, r := args[0], args[1]
	if l.DType != r.DType {
		return ir.Type{}, errf("operand dtypes differ: %s and %s", l, r)
	}
	if err := numeric.want(l); err != nil && !l.DType.IsFP8() {
		return ir.Type{}, err
	}
	d, err := dotSpec(l, r, a)
	if err != nil {
		return ir.Type{}, err
	}
	out := ir.Shape{}
	for _, i := range d.lb {
		out = append(out, l.Shape[i])
	}
	for _, i := range d.lf {
		out = append(out, l.Shape[i])
	}
	for _, i := range d.rf {
		out = append(out, r.Shape[i])
	}
	return ir.Type{DType: dotResult(l.DType), Shape: out}, nil
}

// convGeom is a checked 2-D window geometry (conv2d and pooling), per spatial axis.
type convGeom struct {
	n, c, h, w      int // input
	kh, kw          int
	stride, pad     [2]int
	dil             [2]int
	oh, ow          int
	groups, outC    int
	countIncludePad bool
}

// window computes the output size of one spatial axis.
func window(in, k, s, p, d int) int {
	span := d*(k-1) + 1
	if in+2*p < span {
		return 0
	}
	return (in+2*p-span)/s + 1
}

func want4D(what string, t ir.Type) error {
	if len(t.Shape) != 4 {
		return errf("%s must be 4-D (NCHW), have %s", what, t)
	}
	return floats.want(t)
}

func convSpec(x, w ir.Type, a ir.Attrs) (convGeom, error) {
	var g convGeom
	if err := want4D("input", x); err != nil {
		return g, err
	}
	if err := want4D("weight", w); err != nil {
		return g, err
	}
	if x.DType != w.DType {
		return g, errf("operand dtypes differ: %s and %s", x, w)
	}
	p, err := pairs(a, pairSpec{"stride", 1, 1}, pairSpec{"padding", 0, 0}, pairSpec{"dilation", 1, 1})
	if err != nil {
		return g, err
	}
	g.stride, g.pad, g.dil = p[0], p[1], p[2]
	g.groups = a.Int("groups", 1)
	g.n, g.c, g.h, g.w = x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	g.outC, g.kh, g.kw = w.Shape[0], w.Shape[2], w.Shape[3]
	switch {
	case g.groups < 1:
		return g, errf("groups must be at least 1, have %d", g.groups)
	case g.c%g.groups != 0 || g.outC%g.groups != 0:
		return g, errf("groups %d must divide input channels and output channels: %s and %s", g.groups, x, w)
	case w.Shape[1] != g.c/g.groups:
		return g, errf("weight has %d input channels, want %d (input channels/groups): %s and %s", w.Shape[1], g.c/g.groups, x, w)
	}
	return g, g.output(x)
}

// output fills oh, ow and rejects windows larger than the padded input.
func (g *convGeom) output(x ir.Type) error {
	g.oh = window(g.h, g.kh, g.stride[0], g.pad[0], g.dil[0])
	g.ow = window(g.w, g.kw, g.stride[1], g.pad[1], g.dil[1])
	if g.oh < 1 || g.ow < 1 {
		return errf("window %dx%d (dilation %v) is larger than the padded input %s", g.kh, g.kw, g.dil[:], x)
	}
	return nil
}

func inferConv(args []ir.Type, a ir.Attrs) (ir.Type, error) {
	g, err := convSpec(args[0], args[1], a)
	if err != nil {
		return ir.Type{}, err
	}
	return ir.T(args[0].DType, g.n, g.outC, g.oh, g.ow), nil
}

func poolSpec(x ir.Type, a ir.Attrs) (convGeom, error) {
	var g convGeom
	if err := want4D("input", x); err != nil {
		return g, err
	}
	p, err := pairs(a, pairSpec{"kernel", 1, 1}, pairSpec{"stride", 1, 1}, pairSpec{"padding", 0, 0})
	if err != nil {
		return g, err
	}
	k := p[0]
	g.stride, g.pad, g.dil = p[1], p[2], [2]int{1, 1}
	if _, given := a["stride"]; !given {
		g.stride = k // PyTorch: the stride defaults to the kernel size
	}
	g.kh, g.kw = k[0], k[1]
	if 2*g.pad[0] > g.kh || 2*g.pad[1] > g.kw {
		return g, errf("padding %v must be at most half the kernel %v", g.pad[:], k[:])
	}
	g.n, g.c, g.h, g.w = x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	g.countIncludePad = a.Bool("count_include_pad", true)
	return g, g.output(x)
}

func inferPool(args []ir.Type, a ir.Attrs) (ir.Type, error) {
	g, err := poolSpec(args[0], a)
	if err != nil {
		return ir.Type{}, err
	}
	return ir.T(args[0].DType, g.n, g.c, g.oh, g.ow), nil
}

// --- movement ---

func inferReshape(args []ir.Type, a ir.Attrs) (ir.Type, error) {
	s := ir.Shape(a.Ints("shape"))
	if err := checkShape(s); err != nil {
		return ir.Type{}, err
	}
	if s.NumElements() != args[0].Shape.NumElements() {
		return ir.Type{}, errf("cannot reshape %s (%d elements) to %v (%d elements)", args[0], args[0].Shape.NumElements(), s, s.NumElements())
	}
	return ir.Type{DType: args[0].DType, Shape: s.Clone()}, nil
}

func inferTranspose(args []ir.Type, a ir.Attrs) (ir.Type, error) {
	x, perm := args[0], a.Ints("perm")
	if len(perm) != len(x.Shape) {
		return ir.Type{}, errf("perm %v has %d entries, %s has rank %d", perm, len(perm), x, len(x.Shape))
	}
	if err := checkAxes("perm", perm, x, false); err != nil {
		return ir.Type{}, err
	}
	out := make(ir.Shape, len(perm))
	for i, p := range perm {
		out[i] = x.Shape[p]
	}
	return ir.Type{DType: x.DType, Shape: out}, nil
}

func inferBroadcast(args []ir.Type, a ir.Attrs) (ir.Type, error) {
	x, shape, dims := args[0], ir.Shape(a.Ints("shape")), a.Ints("dims")
	if err := checkShape(shape); err != nil {
		return ir.Type{}, err
	}
	if len(dims) != len(x.Shape) {
		return ir.Type{}, errf("dims %v has %d entries, %s has rank %d", dims, len(dims), x, len(x.Shape))
	}
	out := ir.Type{DType: x.DType, Shape: shape.Clone()}
	if err := checkAxes("dims", dims, out, false); err != nil {
		return ir.Type{}, err
	}
	for i, d := range dims {
		if x.Shape[i] != 1 && x.Shape[i] != shape[d] {
			return ir.Type{}, errf("cannot broadcast %s to %v: dimension %d (%d) maps to %d", x, shape, i, x.Shape[i], shape[d])
		}
	}
	return out, nil
}

func inferSlice(args []ir.Type, a ir.Attrs) (ir.Type, error) {
	x := args[0]
	start, limit, stride := a.Ints("start"), a.Ints("limit"), sliceStride(a, len(x.Shape))
	if len(start) != len(x.Shape) || len(limit) != len(x.Shape) || len(stride) != len(x.Shape) {
		return ir.Type{}, errf("start %v, limit %v and stride %v must each have an entry per dimension of %s", start, limit, stride, x)
	}
	out := make(ir.Shape, len(x.Shape))
	for i, d := range x.Shape {
		if start[i] < 0 || start[i] > limit[i] || limit[i] > d || stride[i] < 1 {
			return ir.Type{}, errf("bad slice of dimension %d of %s: start %d, limit %d, stride %d", i, x, start[i], limit[i], stride[i])
		}
		out[i] = (limit[i] - start[i] + stride[i] - 1) / stride[i]
	}
	return ir.Type{DType: x.DType, Shape: out}, nil
}

func sliceStride(a ir.Attrs, rank int) []int {
	if s := a.Ints("stride"); s != nil {
		return s
	}
	s := make([]int, rank)
	for i := range s {
		s[i] = 1
	}
	return s
}

func inferConcat(args []ir.Type, a ir.Attrs) (ir.Type, error) {
	first, axis := args[0], a.Int("axis", 0)
	if err := checkAxis(axis, first); err != nil {
		return ir.Type{}, err
	}
	out := ir.Type{DType: first.DType, Shape: first.Shape.Clone()}
	for _, t := range args[1:] {
		ok := t.DType == first.DType && len(t.Shape) == len(first.Shape)
		for i := 0; ok && i < len(t.Shape); i++ {
			ok = i == axis || t.Shape[i] == first.Shape[i]
		}
		if !ok {
			return ir.Type{}, errf("operands do not fit along axis %d: %s and %s", axis, first, t)
		}
		out.Shape[axis] += t.Shape[axis]
	}
	return out, nil
}

func inferPad(args []ir.Type, a ir.Attrs) (ir.Type, error) {
	x, low, high := args[0], a.Ints("low"), a.Ints("high")
	if len(low) != len(x.Shape) || len(high) != len(x.Shape) {
		return ir.Type{}, errf("low %v and high %v must each have an entry per dimension of %s", low, high, x)
	}
	out := x.Shape.Clone()
	for i := range out {
		if low[i] < 0 || high[i] < 0 {
			return ir.Type{}, errf("negative padding low %v high %v of %s", low, high, x)
		}
		out[i] += low[i] + high[i]
	}
	return ir.Type{DType: x.DType, Shape: out}, nil
}

func inferGather(args []ir.Type, _ ir.Attrs) (ir.Type, error) {
	table, idx := args[0], args[1]
	if len(table.Shape) < 1 {
		return ir.Type{}, errf("table must have rank at least 1, have %s", table)
	}
	if !ints.has(idx.DType) {
		return ir.Type{}, errf("indices must be integers, have %s", idx)
	}
	out := append(idx.Shape.Clone(), table.Shape[1:]...)
	return ir.Type{DType: table.DType, Shape: out}, nil
}

func inferIota(_ []ir.Type, a ir.Attrs) (ir.Type, error) {
	t := ir.Type{DType: a.DType("dtype"), Shape: ir.Shape(a.Ints("shape")).Clone()}
	if err := checkShape(t.Shape); err != nil {
		return ir.Type{}, err
	}
	if err := numeric.want(t); err != nil {
		return ir.Type{}, err
	}
	return t, checkAxis(a.Int("dim", 0), t)
}

func inferConstant(_ []ir.Type, a ir.Attrs) (ir.Type, error) {
	t := ir.Type{DType: a.DType("dtype"), Shape: ir.Shape(a.Ints("shape")).Clone()}
	if err := checkShape(t.Shape); err != nil {
		return ir.Type{}, err
	}
	if !t.DType.Valid() {
		return ir.Type{}, errf("invalid dtype %s", t.DType)
	}
	vals := a.Floats("value")
	if n := t.Shape.NumElements(); len(vals) != 1 && len(vals) != n {
		return ir.Type{}, errf("%d values for %s: want 1 (a splat) or %d", len(vals), t, n)
	}
	if !t.DType.IsFloat() {
		lo, hi := intRange(t.DType)
		iv, _ := a["value"].([]int)
		for k, v := range vals {
			ok := v == math.Trunc(v) && v >= float64(lo) && v <= float64(hi) && v != 0x1p63
			if iv != nil {
				ok = int64(iv[k]) >= lo && int64(iv[k]) <= hi
			}
			if !ok {
				return ir.Type{}, errf("value %s is not a %s", strings.TrimSuffix(ir.FormatFloat(v), ".0"), t.DType)
			}
		}
	}
	return t, nil
}
