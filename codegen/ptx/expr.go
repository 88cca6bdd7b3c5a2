package ptx

import (
	"encoding/binary"
	"fmt"
	"maps"
	"strings"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/tensor"
)

// gen evaluates graph values element by element at symbolic indexes: the heart of every template.
// Movement ops (broadcast, transpose, reshape, slice, pad, concat) only transform the index, so no
// intermediate tensor is ever materialized; elementwise ops compute in registers; inputs load from
// global memory at the index. Templates bind the values they compute themselves (matmul
// accumulators, reduction results) in bound.
type gen struct {
	kernelGraph *ir.Graph
	err         error
	e           *emitter
	a           ia
	kname       string
	ptr         map[*ir.Value]string           // global address register of each input and param
	outPtr      []string                       // global address register of each output
	sharedPtr   map[string]bool                // address registers that point into shared memory (persistent kernels)
	bound       map[*ir.Value]func(*index) val // values the template supplies
	offsets     map[string]string              // byte offsets of linear indexes, per element like cache
	cache       map[cacheKey]val               // per element: common subexpressions evaluate once
	groups      map[cacheKey]*index            // operand groups of element groups, per movement op
	vecLoads    map[cacheKey][]val             // vector loads of inputs at element groups
	poolRows    map[string][]val               // vector loads of pooling window rows, per element group
	globals     *[]string                      // module-level constant arrays
	errPtr      string                         // global address of the error word (kernels with gathers)
	sites       map[*ir.Value]int              // each gather's site number in the error word
	foldK       string                         // a folding conv's K at the run's sizes (symconv.go)
	run         *runBlock                      // a scattered fold's block at the run's count (symfold_scatter.go)
}

type cacheKey struct {
	v *ir.Value
	x *index
}

func newGen(b *builder, kname string, globals *[]string) *gen {
	return &gen{e: &emitter{b: b}, a: ia{b}, kname: kname, ptr: map[*ir.Value]string{},
		bound: map[*ir.Value]func(*index) val{}, cache: map[cacheKey]val{}, offsets: map[string]string{}, globals: globals,
		groups: map[cacheKey]*index{}, vecLoads: map[cacheKey][]val{}, poolRows: map[string][]val{}}
}

// reset forgets cached element values: registers computed inside one loop iteration must not be
// reused in another.
func (g *gen) reset() {
	g.cache = map[cacheKey]val{}
	g.offsets = map[string]string{}
	g.groups = map[cacheKey]*index{}
	g.vecLoads = map[cacheKey][]val{}
	g.poolRows = map[string][]val{}
}

func (g *gen) eval(v *ir.Value, x *index) (val, error) {
	key := cacheKey{v, x}
	if r, ok := g.cache[key]; ok {
		return r, nil
	}
	r, err := g.eval1(v, x)
	if err != nil {
		return val{}, err
	}
	g.cache[key] = r
	return r, nil
}

func (g *gen) eval1(v *ir.Value, x *index) (val, error) {
	if f, ok := g.bound[v]; ok {
		return f(x), nil
	}
	if v.Type.Shape.NumElements() == 0 {
		// An empty value has no element to read: code that reaches it (a pad or concat of an
		// empty operand) never uses what it gets, and its index arithmetic would divide by
		// the zero strides before a zero dim, or address an empty buffer.
		return g.e.constVal(v.Type.DType, 0), nil
	}

	a := g.a
	if x.leader != nil {
		if r, ok, err := g.groupThrough(v, x); ok || err != nil {
			return r, err
		}
	}
	switch v.Op {
	case ir.OpInput, ir.OpParam:
		return g.load(v, x.getLin(a)), nil
	case "constant":
		return g.constant(v, x)
	case "iota":
		c := x.getCoord(a, v.Attrs.Int("dim", 0))
		return g.e.cast(val{ir.I32, c}, v.Type.DType), nil
	case "broadcast_in_dim", "transpose", "reshape", "slice":
		return g.eval(v.Args[0], g.operandIndex(v, x))
	case "pad":
		return g.pad(v, x)
	case "concat":
		return g.concat(v, x)
	case "gather":
		return g.gather(v, x)
	case ops.DequantizeOp:
		return g.dequantize(v, x)
	case "philox_uniform":
		return g.philox(v, x)
	case "max_pool2d", "avg_pool2d":
		return g.pool(v, x)
	case "select":
		p, err := g.eval(v.Args[0], x)
		if err != nil {
			return val{}, err
		}
		t, err := g.eval(v.Args[1], x)
		if err != nil {
			return val{}, err
		}
		f, err := g.eval(v.Args[2], x)
		if err != nil {
			return val{}, err
		}
		return g.e.selectVal(p, t, f), nil
	}
	if ops.ClassOf(v.Op) != ops.Elementwise {
		return val{}, fmt.Errorf("%s cannot be computed inside this kernel", v.Op)
	}
	args := make([]val, len(v.Args))
	for i, arg := range v.Args {
		r, err := g.eval(arg, x)
		if err != nil {
			return val{}, err
		}
		args[i] = r
	}
	switch len(args) {
	case 1:
		return g.e.unary(v.Op, args[0], v.Type.DType, v.Attrs)
	case 2:
		return g.e.binary(v.Op, args[0], args[1])
	}
	return val{}, fmt.Errorf("%s is not supported by the PTX code generator", v.Op)
}

// addr returns the address of element lin of the tensor at base ptr.
func (g *gen) addr(ptr, lin string, size int) string {
	if n, ok := g.a.num(lin); ok {
		if n == 0 {
			return "[" + ptr + "]"
		}
		return fmt.Sprintf("[%s+%d]", ptr, n*size)
	}
	key := fmt.Sprint(lin, "*", size)
	off, ok := g.offsets[key]
	if !ok {
		off = g.e.b.reg(rU64)
		g.e.b.ins("mul.wide.u32", off, lin, imm(size))
		g.offsets[key] = off
	}
	ad := g.e.b.reg(rU64)
	g.e.b.ins("add.s64", ad, ptr, off)
	return "[" + ad + "]"
}

// load reads one element of an input into its register form.
func (g *gen) load(v *ir.Value, lin string) val {
	d := v.Type.DType
	return g.fromMem(d, g.loadRaw("ld."+g.space(g.ptr[v])+"."+memType(d), memClass(d), g.addr(g.ptr[v], lin, d.Size())))
}

// space is the state space an address register points into.
func (g *gen) space(ptr string) string {
	if g.sharedPtr[ptr] {
		return "shared"
	}
	return "global"
}

func (g *gen) loadRaw(opcode string, c regClass, addr string) string {
	r := g.e.b.reg(c)
	g.e.b.ins(opcode, r, addr)
	return r
}

// fromMem converts a loaded memory image to the register form of dtype d.
func (g *gen) fromMem(d ir.DType, r string) val {
	switch d {
	case ir.F16, ir.BF16:
		return g.e.widenHalf(d, r)
	case ir.F8E4M3, ir.F8E5M2:
		return g.e.fp8FromMem(d, r)
	case ir.Bool:
		p := g.e.b.reg(rPred)
		g.e.b.ins("setp.ne.u32", p, r, "0")
		return val{d, p}
	}
	return val{d, r}
}

// toMem converts a register value to the operand st writes.
func (g *gen) toMem(v val) string {
	switch v.dt {
	case ir.F16, ir.BF16:
		return g.e.narrowHalf(v)
	case ir.F8E4M3, ir.F8E5M2:
		return g.e.fp8ToMem(v)
	case ir.Bool:
		return g.e.boolToInt(v).r
	}
	return g.e.reg(v)
}

// store writes one element of an output.
func (g *gen) store(out *ir.Value, ptr, lin string, v val) {
	d := out.Type.DType
	g.e.b.ins("st."+g.space(ptr)+"."+memType(d), g.addr(ptr, lin, d.Size()), g.toMem(v))
}

func (g *gen) constant(v *ir.Value, x *index) (val, error) {
	d := v.Type.DType
	vals := v.Attrs.Floats("value")
	if len(vals) == 1 {
		return g.e.constVal(d, castConst(d, vals[0])), nil
	}
	// A literal tensor becomes a module-level array read at the index.
	name := fmt.Sprintf("%s_const%d", g.kname, v.ID)
	t := tensor.New(v.Type)
	for i, f := range vals {
		if d.IsFloat() {
			t.F[i] = castConst(d, f)
		} else {
			t.I[i] = exactInt(castConst(d, f))
		}
	}
	if !g.hasGlobal(name) {
		img := t.Bytes()
		for len(img)%8 != 0 {
			img = append(img, 0)
		}
		var s strings.Builder
		fmt.Fprintf(&s, ".global .align 8 .b64 %s[%d] = {", name, len(img)/8)
		for i := 0; i < len(img); i += 8 {
			if i > 0 {
				s.WriteString(", ")
			}
			fmt.Fprintf(&s, "0x%016X", binary.LittleEndian.Uint64(img[i:]))
		}
		s.WriteString("};")
		*g.globals = append(*g.globals, s.String())
	}
	base := g.e.b.reg(rU64)
	g.e.b.ins("mov.u64", base, name)
	return g.fromMem(d, g.loadRaw("ld.global."+memType(d), memClass(d), g.addr(base, x.getLin(g.a), d.Size()))), nil
}

func (g *gen) hasGlobal(name string) bool {
	for _, s := range *g.globals {
		if strings.Contains(s, " "+name+"[") {
			return true
		}
	}
	return false
}

// inRange is a predicate for 0 ≤ c < n (c is signed; the unsigned compare covers both ends).
func (g *gen) inRange(c string, n int) string {
	p := g.e.b.reg(rPred)
	g.e.b.ins("setp.lt.u32", p, g.e.reg(val{ir.I32, c}), imm(n))
	return p
}

func (g *gen) pad(v *ir.Value, x *index) (val, error) {
	op := v.Args[0]
	low := v.Attrs.Ints("low")
	c := make([]string, op.Type.Shape.Rank())
	inb := ""
	for i := range c {
		ci := g.a.sub(x.getCoord(g.a, i), imm(low[i]))
		if low[i] != 0 || v.Type.Shape[i] != op.Type.Shape[i] {
			p := g.inRange(ci, op.Type.Shape[i])
			if inb == "" {
				inb = p
			} else {
				q := g.e.b.reg(rPred)
				g.e.b.ins("and.pred", q, inb, p)
				inb = q
			}
			ci = g.a.clamp(ci, op.Type.Shape[i])
		}
		c[i] = ci
	}
	in, err := g.eval(op, newIndexCoords(op.Type.Shape, c))
	if err != nil || inb == "" {
		return in, err
	}
	d := v.Type.DType
	pv := g.e.constVal(d, castConst(d, v.Attrs.Float("value", 0)))
	return g.e.selectVal(val{ir.Bool, inb}, in, pv), nil
}

func (g *gen) concat(v *ir.Value, x *index) (val, error) {
	vals, err := g.concatBranches(v, x, []*index{x})
	if err != nil {
		return val{}, err
	}
	return vals[0], nil
}

// concatBranches evaluates concat v at lanes (consecutive elements that lie in the same
// operand: one element, or a group whose lanes differ off the concat axis or stay inside one
// operand along it). It branches on the axis coordinate of lead, so only the operand holding the
// elements is read; the operand's lanes form a group again where they are consecutive.
func (g *gen) concatBranches(v *ir.Value, lead *index, lanes []*index) ([]val, error) {
	b, a := g.e.b, g.a
	axis := v.Attrs.Int("axis", 0)
	// Every coordinate of lead before the first branch: index objects cache what they derive,
	// and a register set inside one branch is not set on the others' paths.
	for dd := range v.Type.Shape {
		lead.getCoord(a, dd)
	}
	c := a.reg(lead.getCoord(a, axis))
	d := v.Type.DType
	out := make([]string, len(lanes))
	for l := range out {
		out[l] = b.reg(classOf(d))
	}
	done := b.label("concat_done")
	off := 0
	for i, op := range v.Args {
		size := op.Type.Shape[axis]
		next := b.label("concat_next")
		if i < len(v.Args)-1 {
			p := b.reg(rPred)
			b.ins("setp.ge.s32", p, c, imm(off+size))
			b.braIf(p, next)
		}
		oc := make([]string, op.Type.Shape.Rank())
		for dd := range oc {
			oc[dd] = lead.getCoord(a, dd)
		}
		oc[axis] = a.sub(c, imm(off))
		opLead := newIndexCoords(op.Type.Shape, oc)
		opLanes := []*index{opLead}
		if len(lanes) > 1 {
			newGroup(a, opLead, len(lanes), false)
			opLanes = opLead.lanes
		}
		// Values computed inside the branch must not be reused after it.
		err := g.isolated(func() error {
			for l, ol := range opLanes {
				r, err := g.eval(op, ol)
				if err != nil {
					return err
				}
				mov := "mov." + bits(d)
				if d == ir.Bool {
					mov = "mov.pred"
				}
				b.ins(mov, out[l], g.e.reg(r))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if i < len(v.Args)-1 {
			b.bra(done)
		}
		b.place(next)
		off += size
	}
	b.place(done)
	vals := make([]val, len(lanes))
	for l := range vals {
		vals[l] = val{d, out[l]}
	}
	return vals, nil
}

// isolated runs f with the per-element caches saved and restored around it, for code emitted
// inside a branch.
func (g *gen) isolated(f func() error) error {
	cache, offsets := maps.Clone(g.cache), maps.Clone(g.offsets)
	groups, vecLoads, poolRows := maps.Clone(g.groups), maps.Clone(g.vecLoads), maps.Clone(g.poolRows)
	err := f()
	g.cache, g.offsets, g.groups, g.vecLoads, g.poolRows = cache, offsets, groups, vecLoads, poolRows
	return err
}

// gather reads table[indices[i...], j...]. An index outside the table is recorded in the
// kernel's error word (badIndex), which fails the run the way the reference interpreter does:
// the executor reports the index, and the results of the run are not returned.
func (g *gen) gather(v *ir.Value, x *index) (val, error) {
	table, idx := v.Args[0], v.Args[1]
	ri := idx.Type.Shape.Rank()
	ic := make([]string, ri)
	for d := range ic {
		ic[d] = x.getCoord(g.a, d)
	}
	iv, err := g.eval(idx, newIndexCoords(idx.Type.Shape, ic))
	if err != nil {
		return val{}, err
	}
	row := g.e.reg(iv)
	rows := table.Type.Shape[0]
	bad := g.e.b.reg(rPred)
	value := g.e.b.reg(rU64) // the index as an i64, for the error word
	if iv.dt == ir.I64 {
		g.e.b.ins("setp.ge.u64", bad, row, imm(rows))
		g.e.b.ins("mov.b64", value, row)
		r32 := g.e.b.reg(rU32)
		g.e.b.ins("cvt.u32.u64", r32, row)
		row = r32
	} else {
		g.e.b.ins("setp.ge.u32", bad, row, imm(rows))
		g.e.b.ins("cvt.s64.s32", value, row)
	}
	if row, err = g.badIndex(v, bad, row, value, idx.Type.Shape, ic); err != nil {
		return val{}, err
	}
	tc := make([]string, table.Type.Shape.Rank())
	tc[0] = row
	for d := 1; d < len(tc); d++ {
		tc[d] = x.getCoord(g.a, ri+d-1)
	}
	return g.eval(table, newIndexCoords(table.Type.Shape, tc))
}

// groupThrough evaluates v at lane x of an element group where the group survives: an input
// read with one vector load, or a movement op whose operand lanes stay consecutive (or all
// coincide), so the operand is evaluated at the matching lane of an operand group. ok is false
// where the lane must be evaluated on its own.
func (g *gen) groupThrough(v *ir.Value, x *index) (r val, ok bool, err error) {
	lead := x.leader
	n := len(lead.lanes)
	j := x.laneOf()
	switch v.Op {
	case ir.OpInput, ir.OpParam:
		d := v.Type.DType
		if n*d.Size() > 16 {
			return val{}, false, nil
		}
		key := cacheKey{v, lead}
		vals, done := g.vecLoads[key]
		if !done {
			vals = g.vectorLoad(v, lead.getLin(g.a), n)
			g.vecLoads[key] = vals
		}
		return vals[j], true, nil
	case "max_pool2d", "avg_pool2d":
		return g.poolGroup(v, x)
	case "concat":
		return g.concatGroup(v, x)
	case "broadcast_in_dim", "transpose", "slice", "reshape":
	default:
		return val{}, false, nil
	}
	if src, sub, r := g.repeatGroup(v, lead, n); src != nil {
		if sub.lanes == nil {
			res, err := g.eval(src, sub)
			return res, true, err
		}
		res, err := g.eval(src, sub.lanes[j/r])
		return res, true, err
	}
	op := v.Args[0]
	key := cacheKey{v, lead}
	og, done := g.groups[key]
	if !done {
		og = g.operandGroup(v, lead, n)
		g.groups[key] = og
	}
	if og == nil {
		return val{}, false, nil
	}
	if og.lanes == nil { // every lane reads the same operand element
		r, err := g.eval(op, og)
		return r, true, err
	}
	r, err = g.eval(op, og.lanes[j])
	return r, true, err
}

// repeatGroup recognizes a reshape that merges the last two axes of a broadcast repeating each
// element r times along a new last axis (nearest upsampling: x[..., w] → y[..., w·r + k] =
// x[..., w]) where r divides the group size n: lane j of the group reads element j/r of a group
// of n/r consecutive elements of the broadcast's operand (or, when r = n, one element shared by
// every lane), which a vector load reads at once. src is nil where the pattern does not hold.
func (g *gen) repeatGroup(v *ir.Value, lead *index, n int) (src *ir.Value, sub *index, r int) {
	if lead.lanes[1].parent == nil {
		return nil, nil, 0
	}
	src, r = NearestRepeat(v)
	if src == nil {
		return nil, nil, 0
	}
	os := src.Type.Shape
	k := len(os) + 1
	if n%r != 0 || os[k-2]%(n/r) != 0 {
		return nil, nil, 0
	}
	key := cacheKey{v, lead}
	if sub, done := g.groups[key]; done {
		return src, sub, r // one operand group per group, so its vector load is made once
	}
	c := make([]string, k-1)
	for i := range c[:k-2] {
		c[i] = lead.getCoord(g.a, i)
	}
	c[k-2] = g.a.div(lead.getCoord(g.a, k-2), r)
	sub = newIndexCoords(os, c)
	if n > r {
		newGroup(g.a, sub, n/r, false)
	}
	g.groups[key] = sub
	return src, sub, r
}

// operandGroup maps the group led by lead through movement op v: a new group if the lanes stay
// consecutive in the operand, an index without lanes if they all read one element, nil if
// neither.
func (g *gen) operandGroup(v *ir.Value, lead *index, n int) *index {
	op := v.Args[0]
	os, rs := op.Type.Shape, v.Type.Shape
	if len(rs) == 0 || len(os) == 0 || (lead.lanes[1].parent == nil && v.Op != "reshape") {
		return nil // flat groups only pass reshape, by linear position
	}
	last, olast := len(rs)-1, len(os)-1
	var opIdx *index
	grouped := false
	switch v.Op {
	case "broadcast_in_dim":
		c := make([]string, len(os))
		for i, d := range v.Attrs.Ints("dims") {
			if os[i] == 1 {
				c[i] = "0"
			} else {
				c[i] = lead.getCoord(g.a, d)
				if d == last {
					if i != olast {
						return nil
					}
					grouped = true
				}
			}
		}
		opIdx = newIndexCoords(os, c)
	case "transpose":
		perm := v.Attrs.Ints("perm")
		if perm[last] != olast {
			return nil
		}
		c := make([]string, len(os))
		for i, p := range perm {
			c[p] = lead.getCoord(g.a, i)
		}
		opIdx, grouped = newIndexCoords(os, c), true
	case "slice":
		start, stride := v.Attrs.Ints("start"), v.Attrs.Ints("stride")
		if (stride != nil && stride[last] != 1) || start[last]%n != 0 || os[olast]%n != 0 {
			return nil
		}
		c := make([]string, len(os))
		for i := range c {
			s := 1
			if stride != nil {
				s = stride[i]
			}
			c[i] = g.a.mad(lead.getCoord(g.a, i), s, imm(start[i]))
		}
		opIdx, grouped = newIndexCoords(os, c), true
	case "reshape":
		if os[olast]%n != 0 {
			return nil
		}
		opIdx, grouped = newIndexLin(os, lead.getLin(g.a)), true
	}
	if grouped {
		newGroup(g.a, opIdx, n, false)
	}
	return opIdx
}

// operandIndex maps index x of view v (broadcast_in_dim, transpose, reshape, slice) to the index
// of its operand that holds the same element.
func (g *gen) operandIndex(v *ir.Value, x *index) *index {
	a := g.a
	op := v.Args[0]
	if v.Op == "reshape" {
		return newIndexLin(op.Type.Shape, x.getLin(a))
	}
	c := make([]string, op.Type.Shape.Rank())
	for _, ax := range ViewPlan(v) {
		if ax.Dim < 0 {
			c[ax.Operand] = imm(ax.Offset)
		} else {
			c[ax.Operand] = a.mad(x.getCoord(a, ax.Dim), ax.Scale, imm(ax.Offset))
		}
	}
	return newIndexCoords(op.Type.Shape, c)
}

// viewLin follows views from v at index x down to the buffer they read, returning the buffer
// and the element's linear index in it.
func (g *gen) viewLin(v *ir.Value, x *index) (*ir.Value, string, error) {
	switch v.Op {
	case ir.OpInput, ir.OpParam:
		return v, x.getLin(g.a), nil
	case "broadcast_in_dim", "transpose", "reshape", "slice":
		return g.viewLin(v.Args[0], g.operandIndex(v, x))
	}
	return nil, "", fmt.Errorf("%s is computed inside the kernel; a contraction reads only views of buffers", v.Op)
}

// concatGroup evaluates concat at a lane of an element group, all lanes at once (one branch per
// group), when the lanes cannot straddle two operands.
func (g *gen) concatGroup(v *ir.Value, x *index) (val, bool, error) {
	lead := x.leader
	n := len(lead.lanes)
	axis := v.Attrs.Int("axis", 0)
	last := v.Type.Shape.Rank() - 1
	if lead.lanes[1].parent != lead {
		return val{}, false, nil
	}
	if axis == last {
		for _, op := range v.Args {
			if op.Type.Shape[axis]%n != 0 {
				return val{}, false, nil
			}
		}
	}
	key := cacheKey{v, lead}
	vals, done := g.vecLoads[key]
	if !done {
		var err error
		if vals, err = g.concatBranches(v, lead, lead.lanes); err != nil {
			return val{}, true, err
		}
		g.vecLoads[key] = vals
	}
	return vals[x.laneOf()], true, nil
}
