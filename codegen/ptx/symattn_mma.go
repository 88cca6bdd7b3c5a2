package ptx

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/ir/sym"
)

// The tensor-core attention template (attention_mma.go) at symbolic sizes, as symattn.go does
// for the CUDA-core one: the dims are parameters, and L, L−1, S, the (batch, head) count B·H
// and the last row tile ⌈L/64⌉−1 (its blocks run the last row tiles first) are registers, as are
// the operands' offsets and their strides but the innermost (the head dims are static and
// contiguous). A static kernel keeps the bound's immediates.

// symMMA holds a symbolic tensor-core kernel's sizes at the run, as registers.
type symMMA struct {
	l, lLast, s, bh, rtLast string
	lAgain                  func() string                  // loads the dims again and computes L
	eval                    func(sym.Expr) (string, error) // a size expression into a register
	sLast                   string                         // S−1 (the backward's, symattn_bwd_mma.go)
}

// symbolic declares a symbolic kernel's size parameters (each dim its sizes name, then its block
// count), resolves its operands at the run's sizes and computes its sizes; nothing for a static
// kernel.
func (w *attnMMA) symbolic(k Kernel, args *[]Arg) (*SymWork, error) {
	h := int64(w.p.H)
	return w.symbolicGrid(k, args, attnmma.Blocks(w.p.Op), func(q, _ []sym.Expr) sym.Expr {
		return sym.Mul(sym.Scale(q[0], h), sym.Div(sym.Add(q[2], sym.Const(attnMMARows-1)), attnMMARows))
	})
}

// symbolicGrid is symbolic with the grid's block count as blocks of q's and k's sizes (static:
// the count at the bound).
func (w *attnMMA) symbolicGrid(k Kernel, args *[]Arg, static int, blocks func(q, kk []sym.Expr) sym.Expr) (*SymWork, error) {
	if !k.Symbolic {
		return nil, nil
	}
	b, p := w.b, w.p
	dims, params := symDimParams(k, b, args, k.Sizes)
	eval := func(e sym.Expr) (string, error) {
		return symEval(func() string { return b.reg(rU32) }, b.ins, dims, e)
	}
	for i, a := range p.Op.Args {
		o, err := symOperand(a, k.Sizes, w.ptr, eval)
		if err != nil {
			return nil, err
		}
		if last := o.symSt[len(o.symSt)-1]; strings.HasPrefix(last, "%") {
			return nil, fmt.Errorf("the tensor-core attention template reads rows contiguous at every size; operand %d's innermost stride is %s", i, last)
		}
		w.ops[i] = o
	}
	q, kk := SymSizes(p.Op.Args[0], k.Sizes), SymSizes(p.Op.Args[1], k.Sizes)
	w.sym = &symMMA{}
	var err error
	if w.sym.l, err = eval(q[2]); err != nil {
		return nil, err
	}
	if w.sym.s, err = eval(kk[2]); err != nil {
		return nil, err
	}
	if w.sym.bh, err = eval(sym.Scale(q[0], int64(p.H))); err != nil {
		return nil, err
	}
	w.sym.lAgain = func() string {
		again := map[string]string{}
		for _, n := range slices.Sorted(maps.Keys(params)) {
			again[n] = b.reg(rU32)
			b.ins("ld.param.u32", again[n], "["+params[n]+"]")
		}
		l, _ := symEval(func() string { return b.reg(rU32) }, b.ins, again, q[2]) // evaluated above
		return l
	}
	w.sym.lLast, w.sym.rtLast = b.reg(rU32), b.reg(rU32)
	b.ins("sub.s32", w.sym.lLast, w.sym.l, "1")
	b.ins("add.s32", w.sym.rtLast, w.sym.l, imm(attnMMARows-1))
	b.ins("div.u32", w.sym.rtLast, w.sym.rtLast, imm(attnMMARows))
	b.ins("sub.s32", w.sym.rtLast, w.sym.rtLast, "1")
	w.sym.eval = eval
	b.param("u32", fmt.Sprintf("%s_param_%d", k.Name, len(*args))) // the grid's: %nctaid
	*args = append(*args, Arg{Kind: ArgSize})
	if static >= 1<<31 {
		return nil, fmt.Errorf("%d blocks at the bound exceed the grid", static)
	}
	return &SymWork{Vector: 1, MaxBlocks: 1<<31 - 1, Scale: 1, Tile: 1, Elements: blocks(q, kk).String()}, nil
}

// szL, szLast and szS are L, L−1 and S: immediates at the bound, registers at symbolic sizes.
func (w *attnMMA) szL() string {
	if w.sym == nil {
		return imm(w.p.L)
	}
	return w.sym.l
}

func (w *attnMMA) szLast() string {
	if w.sym == nil {
		return imm(w.p.L - 1)
	}
	return w.sym.lLast
}

func (w *attnMMA) szS() string {
	if w.sym == nil {
		return imm(w.p.S)
	}
	return w.sym.s
}

// szS64 is S as a 64-bit operand (a position mask's limit is computed in 64 bits).
func (w *attnMMA) szS64() string {
	if w.sym == nil {
		return imm(w.p.S)
	}
	s := w.b.reg(rU64)
	w.b.ins("cvt.u64.u32", s, w.sym.s)
	return s
}

// madSt is x·stride_d(o) + y.
func (w *attnMMA) madSt(x string, o attnOperand, d int, y string) string {
	if o.symSt == nil {
		return w.a.mad(x, o.strides[d], y)
	}
	if n, err := strconv.Atoi(o.symSt[d]); err == nil { // a stride static at every size
		return w.a.mad(x, n, y)
	}
	r := w.b.reg(rU32)
	w.b.ins("mad.lo.s32", r, w.a.reg(x), o.symSt[d], w.a.reg(y))
	return r
}

// offOf is o's offset.
func (w *attnMMA) offOf(o attnOperand) string {
	if o.symSt == nil {
		return imm(o.off)
	}
	return o.symOff
}

// clampL is row clamped to [0, L−1].
func (w *attnMMA) clampL(row string) string {
	return w.clampTo(row, w.p.L, func() string { return w.sym.lLast })
}

// clampTo is x clamped to [0, n−1]: n the bound's in a static kernel, else last() the register
// holding the run's n−1.
func (w *attnMMA) clampTo(x string, n int, last func() string) string {
	if w.sym == nil {
		return w.a.clamp(x, n)
	}
	r := w.b.reg(rU32)
	w.b.ins("min.u32", r, w.a.reg(x), last())
	return r
}

// rowStep adds n rows of operand o (eb-byte elements) to the 64-bit address src into dst; false
// when o's row stride is static (the caller adds its immediate).
func (w *attnMMA) rowStep(dst, src string, o attnOperand, n int) bool {
	if o.symSt == nil || !strings.HasPrefix(o.symSt[2], "%") {
		return false
	}
	wide := w.b.reg(rU64)
	w.b.ins("mul.wide.u32", wide, o.symSt[2], imm(w.eb*n))
	w.b.ins("add.s64", dst, src, wide)
	return true
}

// blockTile is the block's (batch·head, row tile) from its index: the last row tiles first.
func (w *attnMMA) blockTile(cta string) (bh, rt string) {
	a, p := w.a, w.p
	if w.sym == nil {
		rowTiles := ceilDiv(p.L, attnMMARows)
		return a.reg(a.rem(cta, p.B*p.H)), a.sub(imm(rowTiles-1), a.div(cta, p.B*p.H))
	}
	b := w.b
	q := b.reg(rU32)
	bh, rt = b.reg(rU32), b.reg(rU32)
	b.ins("rem.u32", bh, cta, w.sym.bh)
	b.ins("div.u32", q, cta, w.sym.bh)
	b.ins("sub.s32", rt, w.sym.rtLast, q)
	return bh, rt
}

// outRow is the output row of (batch·head bh, query row): bh·L + row.
func (w *attnMMA) outRow(bh, row string) string {
	if w.sym == nil {
		return w.a.mad(bh, w.p.L, row)
	}
	r := w.b.reg(rU32)
	w.b.ins("mad.lo.s32", r, bh, w.sym.l, w.a.reg(row))
	return r
}

// afterLoop reloads L from the parameters for the rows' output, so that no register holds it
// through the tile loop.
func (w *attnMMA) afterLoop() {
	if w.sym != nil {
		w.sym.l = w.sym.lAgain()
	}
}
