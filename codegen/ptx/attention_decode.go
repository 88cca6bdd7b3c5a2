package ptx

import (
	"fmt"
	"math"
	"strings"

	"github.com/gcomp/gcomp/codegen/splitkv"
	"github.com/gcomp/gcomp/ir"
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
// parameters and the operands are already bound. batch is the batch's expression of a kernel
// over a symbolic batch (symattn_decode.go), else "".
func (w *attnWriter) decodeKernel(k Kernel, sp splitkv.Plan, operands []attnOperand, params []string, args []Arg, batch string) (string, Launch, error) {
	var scratch string
	if sp.Splits > 1 {
		param := fmt.Sprintf("%s_param_%d", k.Name, len(args))
		params = append(params, "\t.param .u64 "+param)
		args = append(args, Arg{Kind: ArgScratch, Bytes: sp.ScratchBytes()})
		scratch = w.reg("b64")
		w.ins("ld.param.u64", scratch, "["+param+"]")
		w.ins("cvta.to.global.u64", scratch, scratch)
	}
	var work *SymWork
	over := ""
	switch {
	case batch != "":
		work = w.symDecodeBatch(k, batch, &params, &args)
		over = " over batch " + batch + ","
	case w.sym != nil: // over a symbolic cache length
		work, over = w.symDecodeLengthWork(k, sp, &params, &args)
	}
	w.decode(sp, operands, w.ptr[w.p.Op], scratch)

	var s strings.Builder
	fmt.Fprintf(&s, "// %s: split-KV attention,%s %d splits of %d keys, %d-key tiles, %d query rows per KV head on %d warps\n",
		k.Name, over, sp.Splits, sp.Chunk, w.p.Keys, sp.Rows, sp.Warps)
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
	return s.String(), Launch{Grid: sp.Grid(), Block: [3]int{sp.Threads(), 1, 1}, Params: args, Work: work}, nil
}

// decode writes the kernel's body: operands q, k, v[, pos][, bias], the output's and the
// scratch's address registers ("" without a split).
func (w *attnWriter) decode(sp splitkv.Plan, operands []attnOperand, out, scratch string) {
	op := w.p.Op
	d := op.Type.DType
	mask := op.Attrs.String("mask", "")
	posOp, posType, biasOp := w.extraOperands(operands)
	u32 := func() string { return w.reg("b32") }
	pred := func() string { return w.reg("pred") }
	tid, lane, warp := w.start()
	split, kh, b := u32(), u32(), u32()
	w.ins("mov.u32", split, "%ctaid.x")
	w.ins("mov.u32", kh, "%ctaid.y")
	w.ins("mov.u32", b, "%ctaid.z")
	var posv string
	if posOp != nil {
		posv = w.position(*posOp, posType, b)
	}
	w.appendRows(operands, sp.Threads(), tid, split, b, kh)

	// The chunk [k0, kend): kend stops at the block's last visible key (query index L−1's).
	k0, kend := u32(), u32()
	w.ins("mul.lo.s32", k0, split, uimm(sp.Chunk))
	w.ins("add.s32", kend, k0, uimm(sp.Chunk))
	w.ins("min.u32", kend, kend, w.dimS())
	last := u32()
	w.ins("mov.u32", last, uimm(sp.L-1))
	w.ins("min.u32", kend, kend, w.keyLimit(mask, posv, last))

	// The warp's rows and the keys each sees.
	rows := make([]attnRow, sp.RowSlots)
	for j := range rows {
		r, hg, h, i, active := u32(), u32(), u32(), u32(), pred()
		w.ins("add.s32", r, warp, uimm(j*sp.Warps))
		w.ins("setp.lt.u32", active, r, uimm(sp.Rows))
		w.ins("div.u32", hg, r, uimm(sp.L))
		w.ins("rem.u32", i, r, uimm(sp.L))
		w.ins("mad.lo.s32", h, kh, uimm(sp.Group), hg)
		rows[j] = *w.newRow(d, operands[0], b, h, i, lane, active, fmt.Sprint(j))
		rows[j].r = r
		rows[j].lim = w.keyLimit(mask, posv, i)
		w.ins("min.u32", rows[j].lim, rows[j].lim, kend)
	}
	w.tileLoop(d, operands, sp.Threads(), tid, k0, kend, kend, b, kh, func(t0 string) {
		for j := range rows {
			w.foldTile(&rows[j], fmt.Sprint(j), w.p.Keys, t0, lane, b, d, biasOp)
		}
	})

	end := "$" + w.name + "_end"
	if scratch == "" {
		for j := range rows {
			w.finishRow(&rows[j], fmt.Sprint(j), lane, b, d, out, rows[j].acc, rows[j].l)
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
	w.ins("setp.eq.u32", lp, ticket, w.dimLastSplit(sp))
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

// combineRow, in the last block, rescales the row's partials of every split to their common
// maximum and sums them in split order, zeroing them, then writes the row.
func (w *attnWriter) combineRow(rw *attnRow, tag string, sp splitkv.Plan, lane, head, scratch, b string, d ir.DType, out string) {
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
		w.ins("setp.lt.u32", in, s, w.dimSplits(sp))
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
	w.ins("setp.lt.u32", in, s, w.dimSplits(sp))
	w.ins("@!"+in+" bra", done)
	w.ins("mad.lo.s32", at, s, uimm(sp.Rows*stride), first)
	w.ins("st.global.f32", w.addr(scratch, at, 4), f32Imm(0))
	w.ins("add.s32", at, at, "1")
	w.ins("st.global.f32", w.addr(scratch, at, 4), f32Imm(0))
	w.ins("add.s32", s, s, "32")
	w.ins("bra", top)
	w.label(done)
	w.label(skip)
	w.finishRow(rw, tag, lane, b, d, out, acc, l)
}
