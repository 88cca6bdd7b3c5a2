package ptx

import (
	"fmt"
	"math"
	"strings"

	"github.com/gcomp/gcomp/codegen/splitkv"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// The split-KV attention template (flash-decoding; package splitkv plans it): block (split, KV
// head, batch entry) loads its chunk of K and V, AttentionPlan.Keys keys at a time, into shared
// memory once for every query row that reads the KV head, and each warp folds the tile into its
// rows' online softmax as the prefill template does (butterfly q·k, base-2 exponentials). The
// chunk ends at the block's last visible key: a chunk wholly hidden by the mask loads nothing.
// Without a split the rows are finished in place; with one, each row's maximum, sum and
// unnormalized output go to scratch, and the (batch entry, KV head)'s last block (an integer
// ticket) combines the chunks in chunk order, zeroes the partials and its counter, and writes
// the rows.

// decodeKernel finishes attentionKernel for a split-KV plan: the writer's pointers, the entry's
// parameters and the operands are already bound.
func (w *attnWriter) decodeKernel(k Kernel, sp splitkv.Plan, operands []attnOperand, params []string, args []Arg) (string, Launch, error) {
	var scratch string
	if sp.Splits > 1 {
		param := fmt.Sprintf("%s_param_%d", k.Name, len(args))
		params = append(params, "\t.param .u64 "+param)
		args = append(args, Arg{Kind: ArgScratch, Bytes: sp.ScratchBytes()})
		scratch = w.reg("b64")
		w.ins("ld.param.u64", scratch, "["+param+"]")
		w.ins("cvta.to.global.u64", scratch, scratch)
	}
	w.decode(sp, operands, w.ptr[k.Graph.Outputs[0].Value], scratch)

	var s strings.Builder
	fmt.Fprintf(&s, "// %s: split-KV attention, %d splits of %d keys, %d-key tiles, %d query rows per KV head on %d warps\n",
		k.Name, sp.Splits, sp.Chunk, w.p.Keys, sp.Rows, sp.Warps)
	fmt.Fprintf(&s, "//   %s\n", k.Graph.Format(w.p.Op))
	// Two blocks per SM, said outright: with .maxntid alone ptxas for sm_90 aims at more blocks
	// of 512 threads and spills at 40 registers (32 rows of d = 128 take 48).
	fmt.Fprintf(&s, ".visible .entry %s(\n%s\n)\n.maxntid %d, 1, 1\n.minnctapersm 2\n{\n", k.Name, strings.Join(params, ",\n"), sp.Threads())
	fmt.Fprintf(&s, "\t.shared .align 16 .f32 ktile[%d];\n\t.shared .align 16 .f32 vtile[%d];\n", w.p.Keys*sp.E, w.p.Keys*sp.Ev)
	if sp.Splits > 1 {
		s.WriteString("\t.shared .align 4 .u32 is_last;\n")
	}
	for _, d := range w.decls() {
		s.WriteString("\t" + d + "\n")
	}
	s.WriteString(w.text.String())
	s.WriteString("}\n")
	return s.String(), Launch{Grid: sp.Grid(), Block: [3]int{sp.Threads(), 1, 1}, Params: args}, nil
}

// decodeRow is one of a warp's query rows: its index in the block, head and query index, the
// keys it sees (< lim), its scaled q elements and its online-softmax state.
type decodeRow struct {
	r, h, i, lim string
	active       string // predicate: r < Rows
	q, acc       []string
	m, l         string
}

// decode writes the kernel's body: operands q, k, v[, pos][, bias], the output's and the
// scratch's address registers ("" without a split).
func (w *attnWriter) decode(sp splitkv.Plan, operands []attnOperand, out, scratch string) {
	op := w.p.Op
	d := op.Type.DType
	keys := w.p.Keys
	ce, cev := ceilDiv(sp.E, 32), ceilDiv(sp.Ev, 32)
	mask := op.Attrs.String("mask", "")
	next := 3
	var posOp, biasOp *attnOperand
	var posType ir.DType
	if mask == ops.MaskPosition {
		posOp, posType = &operands[next], op.Args[next].Type.DType
		next++
	}
	if op.Attrs.Bool("additive", false) {
		biasOp = &operands[next]
	}
	u32 := func() string { return w.reg("b32") }
	pred := func() string { return w.reg("pred") }
	w.shared = map[string]string{}
	for _, t := range []string{"ktile", "vtile"} {
		w.shared[t] = u32()
		w.ins("mov.u32", w.shared[t], t)
	}
	tid, lane, warp, split, kh, b := u32(), u32(), u32(), u32(), u32(), u32()
	w.ins("mov.u32", tid, "%tid.x")
	w.ins("and.b32", lane, tid, "31")
	w.ins("shr.u32", warp, tid, "5")
	w.ins("mov.u32", split, "%ctaid.x")
	w.ins("mov.u32", kh, "%ctaid.y")
	w.ins("mov.u32", b, "%ctaid.z")

	// pos[b] as 64 bits (untrusted data: every limit is clamped to [0, S]).
	var posv string
	if posOp != nil {
		posv = w.reg("b64")
		if posType == ir.I64 {
			w.ins("ld.global.s64", posv, w.addr(posOp.ptr, w.index(*posOp, b), 8))
		} else {
			pr := u32()
			w.ins("ld.global.s32", pr, w.addr(posOp.ptr, w.index(*posOp, b), 4))
			w.ins("cvt.s64.s32", posv, pr)
		}
	}
	// limit returns the keys query index i sees: j < limit.
	limit := func(i string) string {
		lim := u32()
		switch mask {
		case ops.MaskCausal:
			w.ins("add.s32", lim, i, "1")
		case ops.MaskPosition:
			wide, t := w.reg("b64"), w.reg("b64")
			w.ins("cvt.u64.u32", wide, i)
			w.ins("add.s64", t, posv, wide)
			w.ins("add.s64", t, t, "1")
			w.ins("max.s64", t, t, "0")
			w.ins("min.s64", t, t, uimm(sp.S))
			w.ins("cvt.u32.u64", lim, t)
		default:
			w.ins("mov.u32", lim, uimm(sp.S))
		}
		w.ins("min.u32", lim, lim, uimm(sp.S))
		return lim
	}

	// The chunk [k0, kend): kend stops at the block's last visible key (query index L−1's).
	k0, kend := u32(), u32()
	w.ins("mul.lo.s32", k0, split, uimm(sp.Chunk))
	w.ins("add.s32", kend, k0, uimm(sp.Chunk))
	w.ins("min.u32", kend, kend, uimm(sp.S))
	last := u32()
	w.ins("mov.u32", last, uimm(sp.L-1))
	w.ins("min.u32", kend, kend, limit(last))

	// The warp's rows: q pre-scaled by scale·log2 e, accumulators, and the keys each sees.
	c2 := op.Attrs.Float("scale", 1) * math.Log2E
	rows := make([]decodeRow, sp.RowSlots)
	for j := range rows {
		rw := &rows[j]
		rw.r, rw.h, rw.i, rw.active = u32(), u32(), u32(), pred()
		w.ins("add.s32", rw.r, warp, uimm(j*sp.Warps))
		w.ins("setp.lt.u32", rw.active, rw.r, uimm(sp.Rows))
		hg := u32()
		w.ins("div.u32", hg, rw.r, uimm(sp.L))
		w.ins("rem.u32", rw.i, rw.r, uimm(sp.L))
		w.ins("mad.lo.s32", rw.h, kh, uimm(sp.Group), hg)
		rw.lim = limit(rw.i)
		w.ins("min.u32", rw.lim, rw.lim, kend)
		rw.q = make([]string, ce)
		for c := range rw.q {
			rw.q[c] = w.reg("f32")
			w.ins("mov.f32", rw.q[c], f32Imm(0))
			e, ok := u32(), pred()
			w.ins("add.s32", e, lane, uimm(32*c))
			w.ins("setp.lt.and.u32", ok, e, uimm(sp.E), rw.active)
			skip := fmt.Sprintf("$%s_q%d_%d", w.name, j, c)
			w.ins("@!"+ok+" bra", skip)
			x := w.loadF32(d, operands[0].ptr, w.index(operands[0], b, rw.h, rw.i, e))
			w.ins("mul.rn.f32", rw.q[c], x, f32Imm(c2))
			w.label(skip)
		}
		rw.acc = make([]string, cev)
		for c := range rw.acc {
			rw.acc[c] = w.reg("f32")
			w.ins("mov.f32", rw.acc[c], f32Imm(0))
		}
		rw.m, rw.l = w.reg("f32"), w.reg("f32")
		w.ins("mov.f32", rw.m, f32Imm(math.Inf(-1)))
		w.ins("mov.f32", rw.l, f32Imm(0))
	}

	// The tiles of the chunk: t0 is the tile's first key.
	t0 := u32()
	w.ins("mov.u32", t0, k0)
	loop, done := "$"+w.name+"_tile", "$"+w.name+"_done"
	w.label(loop)
	more := pred()
	w.ins("setp.lt.u32", more, t0, kend)
	w.ins("@!"+more+" bra.uni", done)
	for _, tile := range []struct {
		name string
		op   attnOperand
		n    int
	}{{"ktile", operands[1], sp.E}, {"vtile", operands[2], sp.Ev}} {
		w.loadTile(tile.name, d, tile.op, tile.n, keys, sp.Threads(), tid, t0, kend, b, kh)
	}
	w.ins("bar.sync", "0")
	for j := range rows {
		w.foldTile(&rows[j], fmt.Sprint(j), keys, t0, lane, b, d, biasOp)
	}
	w.ins("bar.sync", "0")
	w.ins("add.s32", t0, t0, uimm(keys))
	w.ins("bra.uni", loop)
	w.label(done)

	end := "$" + w.name + "_end"
	if scratch == "" {
		for j := range rows {
			w.finishRow(&rows[j], fmt.Sprint(j), sp, lane, b, d, out, rows[j].acc, rows[j].l)
		}
		w.label(end)
		w.ins("ret")
		return
	}

	// Publish: row r's partial at ((((b·KVH + kh)·Splits + split)·Rows + r)·(Ev+2).
	stride := sp.PartialStride()
	head := u32() // (b·KVH + kh)·Splits: the (batch entry, KV head)'s first partial row / Rows
	w.ins("mad.lo.s32", head, b, uimm(sp.KVH), kh)
	counterIdx := u32()
	w.ins("add.s32", counterIdx, head, uimm(sp.PartialFloats()))
	w.ins("mul.lo.s32", head, head, uimm(sp.Splits))
	lane0 := pred()
	w.ins("setp.eq.u32", lane0, lane, "0")
	for j := range rows {
		rw := &rows[j]
		skip := fmt.Sprintf("$%s_unpublished%d", w.name, j)
		w.ins("@!"+rw.active+" bra.uni", skip)
		at := u32()
		w.ins("add.s32", at, head, split)
		w.ins("mad.lo.s32", at, at, uimm(sp.Rows), rw.r)
		w.ins("mul.lo.s32", at, at, uimm(stride))
		ml := u32()
		w.ins("add.s32", ml, at, "1")
		w.ins("@"+lane0+" st.global.f32", w.addr(scratch, at, 4), rw.m)
		w.ins("@"+lane0+" st.global.f32", w.addr(scratch, ml, 4), rw.l)
		for c, a := range rw.acc {
			e, ok, ea := u32(), pred(), u32()
			w.ins("add.s32", e, lane, uimm(32*c))
			w.ins("setp.lt.u32", ok, e, uimm(sp.Ev))
			w.ins("add.s32", ea, at, e)
			w.ins("add.s32", ea, ea, "2")
			w.ins("@"+ok+" st.global.f32", w.addr(scratch, ea, 4), a)
		}
		w.label(skip)
	}
	w.ins("fence.acq_rel.gpu")
	w.ins("bar.sync", "0")
	// Thread 0 takes a ticket; the block goes on only if it was the last of Splits.
	counter := w.addr(scratch, counterIdx, 4)
	t0p := pred()
	w.ins("setp.eq.u32", t0p, tid, "0")
	isLast := u32()
	w.ins("mov.u32", isLast, "is_last")
	ticketed := "$" + w.name + "_ticketed"
	w.ins("@!"+t0p+" bra", ticketed)
	ticket, flag := u32(), u32()
	lp := pred()
	w.ins("atom.global.add.u32", ticket, counter, "1")
	w.ins("setp.eq.u32", lp, ticket, uimm(sp.Splits-1))
	w.ins("selp.u32", flag, "1", "0", lp)
	w.ins("st.shared.u32", "["+isLast+"]", flag)
	w.label(ticketed)
	w.ins("bar.sync", "0")
	w.ins("ld.shared.u32", flag, "["+isLast+"]")
	w.ins("setp.eq.u32", lp, flag, "0")
	w.ins("@"+lp+" bra.uni", end)
	w.ins("fence.acq_rel.gpu")
	w.ins("@"+t0p+" st.global.u32", counter, "0") // ready for the next launch
	for j := range rows {
		w.combineRow(&rows[j], fmt.Sprint(j), sp, lane, head, scratch, b, d, out)
	}
	w.label(end)
	w.ins("ret")
}

// loadTile stores keys [t0, t0+keys) of the (b, kh) rows of a K or V operand of n columns in
// the shared tile, as f32, zero from key kend on; threads share the elements.
func (w *attnWriter) loadTile(name string, d ir.DType, o attnOperand, n, keys, threads int, tid, t0, kend, b, kh string) {
	i, j, e, key := w.reg("b32"), w.reg("b32"), w.reg("b32"), w.reg("b32")
	w.ins("mov.u32", i, tid)
	head, end := fmt.Sprintf("$%s_%s_load", w.name, name), fmt.Sprintf("$%s_%s_loaded", w.name, name)
	w.label(head)
	in := w.reg("pred")
	w.ins("setp.lt.u32", in, i, uimm(keys*n))
	w.ins("@!"+in+" bra", end)
	w.ins("div.u32", j, i, uimm(n))
	w.ins("rem.u32", e, i, uimm(n))
	w.ins("add.s32", key, t0, j)
	x := w.reg("f32")
	w.ins("mov.f32", x, f32Imm(0))
	inKey := w.reg("pred")
	w.ins("setp.lt.u32", inKey, key, kend)
	skip := head + "_zero"
	w.ins("@!"+inKey+" bra", skip)
	y := w.loadF32(d, o.ptr, w.index(o, b, kh, key, e))
	w.ins("mov.f32", x, y)
	w.label(skip)
	sa := w.reg("b32")
	w.ins("shl.b32", sa, i, "2")
	w.ins("add.s32", sa, sa, w.shared[name])
	w.ins("st.shared.f32", "["+sa+"]", x)
	w.ins("add.s32", i, i, uimm(threads))
	w.ins("bra.uni", head)
	w.label(end)
}

// foldTile folds the tile's keys below the row's limit into its online softmax (one warp).
func (w *attnWriter) foldTile(rw *decodeRow, tag string, keys int, t0, lane, b string, d ir.DType, bias *attnOperand) {
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
func (w *attnWriter) finishRow(rw *decodeRow, tag string, sp splitkv.Plan, lane, b string, d ir.DType, out string, acc []string, l string) {
	skip := "$" + w.name + "_written" + tag
	w.ins("@!"+rw.active+" bra.uni", skip)
	orow := w.reg("b32")
	w.ins("mad.lo.s32", orow, b, uimm(sp.H), rw.h)
	w.ins("mad.lo.s32", orow, orow, uimm(sp.L), rw.i)
	for c := range acc {
		e, ok := w.reg("b32"), w.reg("pred")
		w.ins("add.s32", e, lane, uimm(32*c))
		w.ins("setp.lt.u32", ok, e, uimm(sp.Ev))
		lbl := fmt.Sprintf("$%s_o%s_%d", w.name, tag, c)
		w.ins("@!"+ok+" bra", lbl)
		o, idx := w.reg("f32"), w.reg("b32")
		w.ins("div.rn.f32", o, acc[c], l)
		w.ins("mad.lo.s32", idx, orow, uimm(sp.Ev), e)
		w.storeF32(d, out, idx, o)
		w.label(lbl)
	}
	w.label(skip)
}

// combineRow, in the last block, rescales the row's partials of every split to their common
// maximum and sums them in split order, zeroing them, then writes the row.
func (w *attnWriter) combineRow(rw *decodeRow, tag string, sp splitkv.Plan, lane, head, scratch, b string, d ir.DType, out string) {
	skip := "$" + w.name + "_combined" + tag
	w.ins("@!"+rw.active+" bra.uni", skip)
	stride := sp.PartialStride()
	// split s's partial of the row starts at ((head + s)·Rows + r)·stride.
	first := w.reg("b32")
	w.ins("mad.lo.s32", first, head, uimm(sp.Rows), rw.r)
	w.ins("mul.lo.s32", first, first, uimm(stride))
	loopSplits := func(name string, body func(at string)) {
		s, at := w.reg("b32"), w.reg("b32")
		w.ins("mov.u32", s, "0")
		w.ins("mov.u32", at, first)
		top, done := "$"+w.name+"_"+name+tag, "$"+w.name+"_"+name+"_done"+tag
		w.label(top)
		in := w.reg("pred")
		w.ins("setp.lt.u32", in, s, uimm(sp.Splits))
		w.ins("@!"+in+" bra.uni", done)
		body(at)
		w.ins("add.s32", s, s, "1")
		w.ins("add.s32", at, at, uimm(sp.Rows*stride))
		w.ins("bra.uni", top)
		w.label(done)
	}
	mx := w.reg("f32")
	w.ins("mov.f32", mx, f32Imm(math.Inf(-1)))
	loopSplits("max", func(at string) {
		x := w.reg("f32")
		w.ins("ld.global.cg.f32", x, w.addr(scratch, at, 4))
		w.ins("max.f32", mx, mx, x)
	})
	base := w.reg("f32")
	ninf := w.reg("pred")
	w.ins("setp.eq.f32", ninf, mx, f32Imm(math.Inf(-1)))
	w.ins("selp.f32", base, f32Imm(0), mx, ninf)
	l := w.reg("f32")
	w.ins("mov.f32", l, f32Imm(0))
	acc := make([]string, ceilDiv(sp.Ev, 32))
	es, oks := make([]string, len(acc)), make([]string, len(acc))
	for c := range acc {
		acc[c], es[c], oks[c] = w.reg("f32"), w.reg("b32"), w.reg("pred")
		w.ins("mov.f32", acc[c], f32Imm(0))
		w.ins("add.s32", es[c], lane, uimm(32*c))
		w.ins("setp.lt.u32", oks[c], es[c], uimm(sp.Ev))
	}
	loopSplits("sum", func(at string) {
		m, ls, wt, t, ml := w.reg("f32"), w.reg("f32"), w.reg("f32"), w.reg("f32"), w.reg("b32")
		w.ins("ld.global.cg.f32", m, w.addr(scratch, at, 4))
		w.ins("add.s32", ml, at, "1")
		w.ins("ld.global.cg.f32", ls, w.addr(scratch, ml, 4))
		w.ins("sub.rn.f32", t, m, base)
		w.ins("ex2.approx.f32", wt, t)
		w.ins("fma.rn.f32", l, ls, wt, l)
		for c := range acc {
			ea, x := w.reg("b32"), w.reg("f32")
			w.ins("add.s32", ea, at, es[c])
			w.ins("add.s32", ea, ea, "2")
			w.ins("mov.f32", x, f32Imm(0))
			a := w.addr(scratch, ea, 4)
			w.ins("@"+oks[c]+" ld.global.cg.f32", x, a)
			w.ins("@"+oks[c]+" st.global.f32", a, f32Imm(0)) // the scratch is left zero
			w.ins("fma.rn.f32", acc[c], x, wt, acc[c])
		}
	})
	// Every lane has read the maxima and sums: lanes zero them, split s by lane s mod 32.
	w.ins("bar.warp.sync", "0xffffffff")
	s, at := w.reg("b32"), w.reg("b32")
	w.ins("mov.u32", s, lane)
	top, done := "$"+w.name+"_zero"+tag, "$"+w.name+"_zeroed"+tag
	w.label(top)
	in := w.reg("pred")
	w.ins("setp.lt.u32", in, s, uimm(sp.Splits))
	w.ins("@!"+in+" bra", done)
	w.ins("mad.lo.s32", at, s, uimm(sp.Rows*stride), first)
	w.ins("st.global.f32", w.addr(scratch, at, 4), f32Imm(0))
	w.ins("add.s32", at, at, "1")
	w.ins("st.global.f32", w.addr(scratch, at, 4), f32Imm(0))
	w.ins("add.s32", s, s, "32")
	w.ins("bra", top)
	w.label(done)
	w.label(skip)
	w.finishRow(rw, tag, sp, lane, b, d, out, acc, l)
}
