package ptx

import (
	"fmt"
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// Views at symbolic sizes that are not strided (the heads of attention merged back through a
// transpose, [2, 2, seq, 8] read as [2, seq, 16]): the GEMM's generic operand delinearizes its
// free and k coordinates over the view's sizes at the run and follows the views down to the
// buffer, each size and stride computed from the dims' parameters (symDims) instead of the
// bound's immediates.

// symEval emits e at the run's sizes from the dims' registers (reg declares a .u32 register,
// ins emits an instruction): an immediate when e is constant.
func symEval(reg func() string, ins func(string, ...string), dims map[string]string, e sym.Expr) (string, error) {
	c, ms, ok := e.Monomials()
	if !ok {
		return "", fmt.Errorf("size %s has a floor division, which run-time strides do not take yet", e)
	}
	if len(ms) == 0 {
		if c < 0 || c >= 1<<31 {
			return "", fmt.Errorf("size %s is outside 32 bits", e)
		}
		return fmt.Sprint(c), nil
	}
	// Few registers: a bare dim is its parameter's register, and each monomial multiplies its
	// dims in place of a constant's move (the tensor-core template has none to spare).
	var r string
	for _, m := range ms {
		for _, n := range m.Names {
			if _, ok := dims[n]; !ok {
				return "", fmt.Errorf("size %s names %s, which the kernel does not take", e, n)
			}
		}
		t := dims[m.Names[0]]
		for _, n := range m.Names[1:] {
			u := reg()
			ins("mul.lo.s32", u, t, dims[n])
			t = u
		}
		switch {
		case r == "" && m.Coef == 1:
			r = t
		case r == "":
			u := reg()
			ins("mul.lo.s32", u, t, fmt.Sprint(uint32(m.Coef)))
			r = u
		default:
			u := reg()
			ins("mad.lo.s32", u, t, fmt.Sprint(uint32(m.Coef)), r)
			r = u
		}
	}
	if c != 0 {
		u := reg()
		ins("add.s32", u, r, fmt.Sprint(uint32(c)))
		r = u
	}
	return r, nil
}

// symDimNames returns the dims that sizes name, sorted.
func symDimNames(sizes map[*ir.Value][]sym.Expr) []string {
	var names []string
	for _, s := range sizes {
		for _, e := range s {
			names = append(names, e.Symbols()...)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// symViewLoad declares a .u32 parameter for each dim sizes name (Arg.Expr) and loads it.
func symViewLoad(k Kernel, b *builder, args *[]Arg, sizes map[*ir.Value][]sym.Expr) map[string]string {
	dims, _ := symDimParams(k, b, args, sizes)
	return dims
}

// symDimParams is symViewLoad, also returning each dim's parameter (to load it again later
// rather than keep its register live).
func symDimParams(k Kernel, b *builder, args *[]Arg, sizes map[*ir.Value][]sym.Expr) (dims, params map[string]string) {
	dims, params = map[string]string{}, map[string]string{}
	for _, n := range symDimNames(sizes) {
		p := b.param("u32", fmt.Sprintf("%s_param_%d", k.Name, len(*args)))
		*args = append(*args, Arg{Kind: ArgSize, Expr: n})
		r := b.reg(rU32)
		b.ins("ld.param.u32", r, "["+p+"]")
		b.note("%s: parameter %d", n, len(*args)-1)
		dims[n], params[n] = r, p
	}
	return dims, params
}

// symView is a symbolic GEMM's generic left operand: the dims' registers and the values' sizes,
// and sizes evaluated once where every later use sees them (hoist).
type symView struct {
	dims   map[string]string
	sizes  map[*ir.Value][]sym.Expr
	hoists map[string]string
}

func (s *symView) eval(b *builder, e sym.Expr) string {
	if r, ok := s.hoists[e.String()]; ok {
		return r
	}
	r, err := symEval(func() string { return b.reg(rU32) }, b.ins, s.dims, e)
	if err != nil {
		panic(err) // symbolic() evaluated every size of the view once already
	}
	return r
}

// check evaluates every size of the views under v once, so that eval cannot fail later.
func (s *symView) check(b *builder, v *ir.Value) error {
	for u := v; ; u = u.Args[0] {
		for _, e := range SymSizes(u, s.sizes) {
			if _, err := symEval(func() string { return b.reg(rU32) }, func(string, ...string) {}, s.dims, e); err != nil {
				return err
			}
		}
		switch u.Op {
		case "transpose", "slice", "broadcast_in_dim", "reshape":
			continue
		case ir.OpInput, ir.OpParam:
			return nil
		}
		return fmt.Errorf("%s is computed inside the kernel; a contraction reads only views of buffers", u.Op)
	}
}

// hoist evaluates the strides of the buffer under view v that take instructions (products of
// dims), so that each copy's address reuses them. It must be called where it dominates every
// later eval (the kernel's prologue).
func (s *symView) hoist(b *builder, v *ir.Value) {
	for v.Op != ir.OpInput && v.Op != ir.OpParam {
		v = v.Args[0]
	}
	for _, e := range symContiguous(SymSizes(v, s.sizes)) {
		if _, ms, _ := e.Monomials(); len(ms) == 1 && len(ms[0].Names) == 1 && ms[0].Coef == 1 || isConst(e) {
			continue // an immediate or a dim's register already
		}
		r := s.eval(b, e)
		if s.hoists == nil {
			s.hoists = map[string]string{}
		}
		s.hoists[e.String()] = r
	}
}

// lin follows the views from v at coordinates c down to the buffer, returning it and the linear
// index there, at the run's sizes.
func (s *symView) lin(b *builder, v *ir.Value, c []string) (*ir.Value, string) {
	for {
		switch v.Op {
		case ir.OpInput, ir.OpParam:
			return v, s.linear(b, SymSizes(v, s.sizes), c)
		}
		v, c = v.Args[0], s.operandCoords(b, v, c)
	}
}

// operandCoords maps coordinates c of view v (a transpose, slice, broadcast or reshape) to its
// operand's, at the run's sizes.
func (s *symView) operandCoords(b *builder, v *ir.Value, c []string) []string {
	out, in := SymSizes(v, s.sizes), SymSizes(v.Args[0], s.sizes)
	ic := make([]string, len(in))
	switch v.Op {
	case "transpose":
		for i, p := range v.Attrs.Ints("perm") {
			ic[p] = c[i]
		}
	case "slice":
		start, step := v.Attrs.Ints("start"), v.Attrs.Ints("stride")
		for i := range ic {
			st := 1
			if step != nil {
				st = step[i]
			}
			ic[i] = imm(start[i])
			if c[i] != "0" {
				r := b.reg(rU32)
				b.ins("mad.lo.s32", r, c[i], imm(st), imm(start[i]))
				ic[i] = r
			}
		}
	case "broadcast_in_dim":
		for i, d := range v.Attrs.Ints("dims") {
			ic[i] = c[d]
			if isOne(in[i]) {
				ic[i] = "0"
			}
		}
	case "reshape":
		ic = s.delinearize(b, in, s.linear(b, out, c))
	}
	return ic
}

// linear is Σ c[i]·stride_i of a contiguous tensor of sizes at the run. The copies compute it
// per element or chunk, so it spends no instruction on a zero start or a unit stride.
func (s *symView) linear(b *builder, sizes []sym.Expr, c []string) string {
	r := "0"
	for i, st := range symContiguous(sizes) {
		if isOne(sizes[i]) || c[i] == "0" {
			continue
		}
		sv, t := s.eval(b, st), b.reg(rU32)
		switch {
		case r == "0" && sv == "1":
			r = c[i]
			continue
		case r == "0":
			b.ins("mul.lo.s32", t, c[i], sv)
		case sv == "1":
			b.ins("add.s32", t, c[i], r)
		default:
			b.ins("mad.lo.s32", t, c[i], sv, r)
		}
		r = t
	}
	if r == "0" {
		r = b.reg(rU32)
		b.ins("mov.u32", r, "0")
	}
	return r
}

// delinearize splits linear index x into coordinates over sizes at the run.
func (s *symView) delinearize(b *builder, sizes []sym.Expr, x string) []string {
	c := make([]string, len(sizes))
	rest := x
	for i := len(sizes) - 1; i >= 0; i-- {
		if i == 0 {
			c[i] = rest
			break
		}
		n := s.eval(b, sizes[i])
		c[i] = b.reg(rU32)
		b.ins("rem.u32", c[i], rest, n)
		next := b.reg(rU32)
		b.ins("div.u32", next, rest, n)
		rest = next
	}
	return c
}

// symCopier is genericCopier for the left operand of a symbolic GEMM without batch dims, or
// either operand of one whose K is the rows or a symbolic dim of a batched product
// (symcontract.go; the batch coordinates are bidx's): the copy's free coordinate f (below M at
// the run, or below nFree for a fold) and k coordinate (below K, or K at the run for a fold;
// else a zero fill) are delinearized over the view's free and contract dims at the run's sizes.
func (mm *matmul) symCopier(l operandLayout, f0, kq string, df, dk []int, nFree int, bidx *index, eb int) func(k0 string, i int) (string, string) {
	a, b, sv := mm.a, mm.e.b, mm.symv
	s := SymSizes(l.view, sv.sizes)
	return func(k0 string, i int) (string, string) {
		f, k := a.reg(a.add(f0, imm(df[i]))), a.reg(a.add(a.add(k0, kq), imm(dk[i])))
		ok, okK := b.reg(rPred), b.reg(rPred)
		fn, kn := mm.symM, imm(mm.K) // a row GEMM's M, or (symfold_view.go) a fold's K, at the run
		if mm.symK != "" || mm.symOut {
			fn = imm(nFree)
			if mm.symK != "" {
				kn = mm.symK
			}
			if mm.symM != "" && l.view == mm.lhs.view { // a batched product's M at the run (symcontract.go)
				fn = mm.symM
			} else if mm.symN != "" && l.view == mm.rhs.view { // its N (symcontract_rhs.go)
				fn = mm.symN
			}
		}
		b.ins("setp.lt.s32", ok, f, fn)
		b.ins("setp.lt.s32", okK, k, kn)
		b.ins("and.pred", ok, ok, okK)
		c := make([]string, len(s))
		for j, d := range l.batchDims { // a batched product's (symcontract.go), at the run's sizes (symcontract_after.go)
			c[d] = bidx.getCoord(a, j)
		}
		for _, grp := range []struct {
			dims []int
			lin  string
		}{{l.freeDims, f}, {l.contractDims, k}} {
			sizes := make([]sym.Expr, len(grp.dims))
			for j, d := range grp.dims {
				sizes[j] = s[d]
			}
			x := sv.delinearize(b, sizes, grp.lin)
			for j, d := range grp.dims {
				c[d] = x[j]
			}
		}
		// Out of range: the buffer's first element (the copy moves no bytes; the coordinates'
		// address past the run's sizes is never dereferenced).
		buf, lin := sv.lin(b, l.view, c)
		src := mm.scaledAddr(mm.ptr[buf], lin, eb)
		b.ins("selp.b64", src, src, mm.ptr[buf], ok)
		return src, ok
	}
}
