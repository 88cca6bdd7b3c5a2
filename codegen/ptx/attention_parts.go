package ptx

import (
	"fmt"
	"math"
	"strings"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// The pieces both attention templates (attention.go, attention_decode.go) are made of: a warp's
// query row, the limit of the keys it sees, the K and V tiles' loop, the online softmax over a
// tile and the row's output.

// attnRow is a query row a warp computes, in both attention templates: its index in the block
// (split-KV), head and query index, the keys it sees (< lim), its scaled q elements and its
// online-softmax state.
type attnRow struct {
	r, h, i, lim string
	active       string // predicate: r < Rows
	q, acc       []string
	m, l         string
}

// extraOperands returns the attention op's optional operands: pos (nil without a position mask)
// and its dtype, and the bias (nil unless additive).
func (w *attnWriter) extraOperands(operands []attnOperand) (pos *attnOperand, posType ir.DType, bias *attnOperand) {
	op, next := w.p.Op, 3
	if op.Attrs.String("mask", "") == ops.MaskPosition {
		pos, posType = &operands[next], op.Args[next].Type.DType
		next++
	}
	if op.Attrs.Bool("additive", false) {
		bias = &operands[next]
	}
	return pos, posType, bias
}

// start points the shared tiles' registers at them and returns the thread's index, lane and
// warp.
func (w *attnWriter) start() (tid, lane, warp string) {
	w.shared = map[string]string{}
	for _, t := range []string{"ktile", "vtile"} {
		w.shared[t] = w.reg("b32")
		w.ins("mov.u32", w.shared[t], t)
	}
	tid, lane, warp = w.reg("b32"), w.reg("b32"), w.reg("b32")
	w.ins("mov.u32", tid, "%tid.x")
	w.ins("and.b32", lane, tid, "31")
	w.ins("shr.u32", warp, tid, "5")
	return tid, lane, warp
}

// newRow loads this lane's q elements of query (b, h, i), pre-scaled by scale·log2 e, when
// active, and zeroes the row's accumulators.
func (w *attnWriter) newRow(d ir.DType, qOp attnOperand, b, h, i, lane, active, tag string) *attnRow {
	rw := &attnRow{h: h, i: i, active: active, q: make([]string, ceilDiv(w.p.E, 32)), acc: make([]string, ceilDiv(w.p.Ev, 32))}
	c2 := w.p.Op.Attrs.Float("scale", 1) * math.Log2E
	for c := range rw.q {
		rw.q[c] = w.reg("f32")
		w.ins("mov.f32", rw.q[c], f32Imm(0))
		e, ok := w.reg("b32"), w.reg("pred")
		w.ins("add.s32", e, lane, uimm(32*c))
		w.ins("setp.lt.and.u32", ok, e, uimm(w.p.E), active)
		skip := fmt.Sprintf("$%s_q%s_%d", w.name, tag, c)
		w.ins("@!"+ok+" bra", skip)
		x := w.loadF32(d, qOp.ptr, w.index(qOp, b, h, i, e))
		w.ins("mul.rn.f32", rw.q[c], x, f32Imm(c2))
		w.label(skip)
	}
	for c := range rw.acc {
		rw.acc[c] = w.reg("f32")
		w.ins("mov.f32", rw.acc[c], f32Imm(0))
	}
	rw.m, rw.l = w.reg("f32"), w.reg("f32")
	w.ins("mov.f32", rw.m, f32Imm(math.Inf(-1)))
	w.ins("mov.f32", rw.l, f32Imm(0))
	return rw
}

// position loads pos[b] as 64 bits.
func (w *attnWriter) position(posOp attnOperand, t ir.DType, b string) string {
	return w.intAt(t, posOp.ptr, w.index(posOp, b))
}

// intAt loads element i of the integers of dtype d at ptr (the op table's index dtypes: i64,
// i32, i8 sign-extended, u8 zero-extended) into a 64-bit register.
func (w *attnWriter) intAt(d ir.DType, ptr, i string) string {
	p := w.reg("b64")
	switch d {
	case ir.I64:
		w.ins("ld.global.s64", p, w.addr(ptr, i, 8))
	case ir.U8:
		x := w.reg("b32")
		w.ins("ld.global.u8", x, w.addr(ptr, i, 1))
		w.ins("cvt.u64.u32", p, x)
	default: // i32, i8: sign-extended
		x := w.reg("b32")
		w.ins("ld.global."+map[ir.DType]string{ir.I32: "s32", ir.I8: "s8"}[d], x, w.addr(ptr, i, d.Size()))
		w.ins("cvt.s64.s32", p, x)
	}
	return p
}

// keyLimit returns the keys query index i sees, j < limit: S, i+1 (causal) or pos[b]+i+1 (posv,
// position), computed in 64 bits and clamped to [0, S] (pos is untrusted data).
func (w *attnWriter) keyLimit(mask, posv, i string) string {
	lim := w.reg("b32")
	switch mask {
	case ops.MaskCausal:
		w.ins("add.s32", lim, i, "1")
	case ops.MaskPosition:
		wide, t := w.reg("b64"), w.reg("b64")
		w.ins("cvt.u64.u32", wide, i)
		w.ins("add.s64", t, posv, wide)
		w.ins("add.s64", t, t, "1")
		w.ins("max.s64", t, t, "0")
		w.ins("min.s64", t, t, w.dimS64())
		w.ins("cvt.u32.u64", lim, t)
	default:
		w.ins("mov.u32", lim, w.dimS())
	}
	w.ins("min.u32", lim, lim, w.dimS())
	return lim
}

// tileLoop emits the loop over the tiles of keys [from, end): threads load each tile of K and V
// of KV head (b, kh) into shared memory, zero from key bound on, and fold(t0) folds the tile
// whose first key is t0, between two barriers.
func (w *attnWriter) tileLoop(d ir.DType, operands []attnOperand, threads int, tid, from, end, bound, b, kh string, fold func(t0 string)) {
	t0, more := w.reg("b32"), w.reg("pred")
	w.ins("mov.u32", t0, from)
	loop, done := "$"+w.name+"_tile", "$"+w.name+"_done"
	w.label(loop)
	w.ins("setp.lt.u32", more, t0, end)
	w.ins("@!"+more+" bra.uni", done)
	for _, tile := range []struct {
		name string
		op   attnOperand
		n    int
	}{{"ktile", operands[1], w.p.E}, {"vtile", operands[2], w.p.Ev}} {
		if tile.n > 0 {
			w.loadTile(tile.name, d, tile.op, tile.n, w.p.Keys, threads, tid, t0, bound, b, kh)
		}
	}
	w.ins("bar.sync", "0")
	fold(t0)
	w.ins("bar.sync", "0")
	w.ins("add.s32", t0, t0, uimm(w.p.Keys))
	w.ins("bra.uni", loop)
	w.label(done)
}

// loadTile stores keys [t0, t0+keys) of the (b, kh) rows of a K or V operand of n columns in
// the shared tile, as f32, zero from key kend on; threads share the elements, 16 bytes at a time
// where the operand's layout allows (tileVector), else one by one.
func (w *attnWriter) loadTile(name string, d ir.DType, o attnOperand, n, keys, threads int, tid, t0, kend, b, kh string) {
	v := tileVector(o, d, n)
	i, j, e, key := w.reg("b32"), w.reg("b32"), w.reg("b32"), w.reg("b32")
	w.ins("mov.u32", i, tid)
	head, end := fmt.Sprintf("$%s_%s_load", w.name, name), fmt.Sprintf("$%s_%s_loaded", w.name, name)
	w.label(head)
	in := w.reg("pred")
	w.ins("setp.lt.u32", in, i, uimm(keys*n/v)) // i is the v-element group
	w.ins("@!"+in+" bra", end)
	w.ins("div.u32", j, i, uimm(n/v))
	w.ins("rem.u32", e, i, uimm(n/v))
	if v > 1 {
		w.ins("mul.lo.s32", e, e, uimm(v))
	}
	w.ins("add.s32", key, t0, j)
	xs := make([]string, v)
	for c := range xs {
		xs[c] = w.reg("f32")
		w.ins("mov.f32", xs[c], f32Imm(0))
	}
	inKey := w.reg("pred")
	w.ins("setp.lt.u32", inKey, key, kend)
	skip := head + "_zero"
	w.ins("@!"+inKey+" bra", skip)
	if o.app != nil { // the step's keys from its rows (attention_append.go)
		w.loadAppendedKey(d, o, v, b, kh, key, e, xs)
	} else if v == 1 {
		w.ins("mov.f32", xs[0], w.loadF32(d, o.ptr, w.index(o, b, kh, key, e)))
	} else {
		w.loadVector(d, o.ptr, w.index(o, b, kh, key, e), xs)
	}
	w.label(skip)
	sa := w.reg("b32")
	w.ins("mul.lo.s32", sa, i, uimm(4*v))
	w.ins("add.s32", sa, sa, w.shared[name])
	if v == 1 {
		w.ins("st.shared.f32", "["+sa+"]", xs[0])
	}
	for c := 0; c+4 <= v; c += 4 {
		w.ins("st.shared.v4.f32", fmt.Sprintf("[%s+%d]", sa, 4*c), "{"+strings.Join(xs[c:c+4], ", ")+"}")
	}
	w.ins("add.s32", i, i, uimm(threads))
	w.ins("bra.uni", head)
	w.label(end)
}

// tileVector is how many elements of a K or V operand of n columns loadTile reads at once
// (AttentionTileVector).
func tileVector(o attnOperand, d ir.DType, n int) int {
	return appendedVector(o, d, n, AttentionTileVector(d, n, o.off, o.strides))
}

// loadVector reads len(xs) consecutive elements of dtype d from element idx of base (16 bytes,
// aligned) into xs as f32.
func (w *attnWriter) loadVector(d ir.DType, base, idx string, xs []string) {
	if d == ir.F32 {
		w.ins("ld.global.v4.f32", "{"+strings.Join(xs, ", ")+"}", w.addr(base, idx, 4))
		return
	}
	words := []string{w.reg("b32"), w.reg("b32"), w.reg("b32"), w.reg("b32")}
	w.ins("ld.global.v4.b32", "{"+strings.Join(words, ", ")+"}", w.addr(base, idx, 2))
	for c, wd := range words {
		lo, hi := xs[2*c], xs[2*c+1]
		if d == ir.BF16 { // bf16 is an f32's top half
			t := w.reg("b32")
			w.ins("shl.b32", t, wd, "16")
			w.ins("mov.b32", lo, t)
			w.ins("and.b32", t, wd, "0xffff0000")
			w.ins("mov.b32", hi, t)
			continue
		}
		h0, h1 := w.reg("b16"), w.reg("b16")
		w.ins("mov.b32", "{"+h0+", "+h1+"}", wd)
		w.ins("cvt.f32.f16", lo, h0)
		w.ins("cvt.f32.f16", hi, h1)
	}
}

// foldTile folds the tile's keys below the row's limit into its online softmax (one warp).
func (w *attnWriter) foldTile(rw *attnRow, tag string, keys int, t0, lane, b string, d ir.DType, bias *attnOperand) {
	skip := "$" + w.name + "_folded" + tag
	w.ins("@!"+rw.active+" bra.uni", skip)
	j, key := w.reg("b32"), w.reg("b32")
	w.ins("mov.u32", j, "0")
	loop := "$" + w.name + "_key" + tag
	w.label(loop)
	w.ins("add.s32", key, t0, j)
	in := w.reg("pred")
	w.ins("setp.lt.u32", in, j, uimm(keys))
	w.ins("@!"+in+" bra.uni", skip)
	w.ins("setp.lt.u32", in, key, rw.lim)
	w.ins("@!"+in+" bra.uni", skip)
	s := w.reg("f32")
	w.ins("mov.f32", s, f32Imm(0))
	for c := range rw.q {
		w.ins("fma.rn.f32", s, rw.q[c], w.tileElem("ktile", w.p.E, j, lane, c), s)
	}
	for off := 16; off >= 1; off /= 2 {
		o := w.reg("f32")
		w.ins("shfl.sync.bfly.b32", o, s, uimm(off), "0x1f", "0xffffffff")
		w.ins("add.rn.f32", s, s, o)
	}
	if bias != nil {
		x := w.loadF32(d, bias.ptr, w.index(*bias, b, rw.h, rw.i, key))
		w.ins("fma.rn.f32", s, x, f32Imm(math.Log2E), s)
	}
	// m' = max(m, s); base = m' unless it is −inf (nothing seen yet).
	mn, base, corr, pr, t := w.reg("f32"), w.reg("f32"), w.reg("f32"), w.reg("f32"), w.reg("f32")
	w.ins("max.f32", mn, rw.m, s)
	ninf := w.reg("pred")
	w.ins("setp.eq.f32", ninf, mn, f32Imm(math.Inf(-1)))
	w.ins("selp.f32", base, f32Imm(0), mn, ninf)
	w.ins("sub.rn.f32", t, rw.m, base)
	w.ins("ex2.approx.f32", corr, t)
	w.ins("sub.rn.f32", t, s, base)
	w.ins("ex2.approx.f32", pr, t)
	w.ins("fma.rn.f32", rw.l, rw.l, corr, pr)
	w.ins("mov.f32", rw.m, mn)
	for c := range rw.acc {
		vv := w.tileElem("vtile", w.p.Ev, j, lane, c)
		w.ins("mul.rn.f32", rw.acc[c], rw.acc[c], corr)
		w.ins("fma.rn.f32", rw.acc[c], pr, vv, rw.acc[c])
	}
	w.ins("add.s32", j, j, "1")
	w.ins("bra.uni", loop)
	w.label(skip)
}

// finishRow writes the row's outputs acc / l (a row with no visible key is 0/0 = NaN, as the
// reference).
func (w *attnWriter) finishRow(rw *attnRow, tag string, lane, b string, d ir.DType, out string, acc []string, l string) {
	p := w.p
	skip := "$" + w.name + "_written" + tag
	w.ins("@!"+rw.active+" bra.uni", skip)
	orow := w.reg("b32")
	w.ins("mad.lo.s32", orow, b, uimm(p.H), rw.h)
	w.ins("mad.lo.s32", orow, orow, w.dimL(), rw.i)
	for c := range acc {
		e, ok := w.reg("b32"), w.reg("pred")
		w.ins("add.s32", e, lane, uimm(32*c))
		w.ins("setp.lt.u32", ok, e, uimm(p.Ev))
		lbl := fmt.Sprintf("$%s_o%s_%d", w.name, tag, c)
		w.ins("@!"+ok+" bra", lbl)
		o, idx := w.reg("f32"), w.reg("b32")
		w.ins("div.rn.f32", o, acc[c], l)
		w.ins("mad.lo.s32", idx, orow, uimm(p.Ev), e)
		w.storeF32(d, out, idx, o)
		w.label(lbl)
	}
	w.label(skip)
}
