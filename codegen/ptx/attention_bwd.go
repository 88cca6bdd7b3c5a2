package ptx

import (
	"fmt"
	"math"
	"strings"

	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// The attention backward templates: FlashAttention-2's backward on CUDA cores, in f32 whatever
// the operands' dtype. The step computes the rows' log-sum-exp first (ops' attention_lse: the
// forward template with no value columns, which keeps the online softmax's max and sum and writes
// max + log sum), then each gradient (attention_grad, wrt q, k or v) in a kernel of its own that
// recomputes every probability as P = exp(S − LSE) from q and k, so the [heads, L, S] scores
// never exist in memory:
//
//   - dk and dv take a block per (batch, KV head, attnWarps keys), a warp per key, each lane
//     holding the key's k and v elements and its accumulator in registers. The block loops over
//     the query heads that read the KV head and over tiles of query rows, whose q and do rows,
//     LSE and D = rowsum(do∘o) it stages in shared memory; per (row, key) the warp sums the score
//     (and dP = do·vᵀ) by a butterfly of shuffles and adds P·do to dv or dS·q to dk, with
//     dS = P∘(dP − D). A causal block starts at its first key's row: the tiles above the diagonal
//     are never loaded.
//   - dq takes a block per attnWarps query rows of a head, a warp per row, streaming K and V tiles
//     as the forward does (tileLoop) and adding dS·k. This is the separate dq pass of
//     FlashAttention-2's paper rather than atomicAdd into dq from the key blocks: every dq
//     element is summed by one thread in key order, so results are deterministic (bit-identical
//     across runs and block orders) at the cost of computing the scores twice.
//
// The kernels take the grouped KV heads (dk and dv summed over the query heads of their group in
// head order) and the additive bias; the position mask, which training does not use, is
// refused (passes keep the decomposition for it). dk and dv of f16/bf16 attention with head dims
// up to 128, 96 with a bias (attention_bwd_mma.go), and dq with head dims up to 128
// (attention_bwd_dq_mma.go) run on tensor cores instead.

// hasLSE reports whether the kernel computes an attention_lse or attention_grad op: attention's
// backward, alone or (attention_lse) beside the forward.
func hasLSE(g *ir.Graph) bool {
	for _, v := range live(g) {
		if v.Op == ops.AttentionLSEOp || v.Op == ops.AttentionGradOp {
			return true
		}
	}
	return false
}

// gradNames are the gradients a dk/dv kernel writes, in operand order.
func gradNames(outs map[string]string) []string {
	var names []string
	for _, wrt := range []string{"k", "v"} {
		if outs[wrt] != "" {
			names = append(names, "d"+wrt)
		}
	}
	return names
}

// AttentionGradKeys is how many keys a block of the dk/dv template takes (a warp per key).
const AttentionGradKeys = plan.AttentionGradKeys

// attentionBwdKernel emits the template for a kernel whose only computation is one
// attention_lse or attention_grad op.
func attentionBwdKernel(k Kernel, op *ir.Value) (string, Launch, error) {
	return bwdKernel(k, op, true)
}

// bwdKernel is attentionBwdKernel, dk and dv on tensor cores where attnmma.FitsGrad or
// FitsGradWide and dq where FitsGradDQ if mma is set.
func bwdKernel(k Kernel, op *ir.Value, mma bool) (string, Launch, error) {
	g := k.Graph
	for _, v := range live(g) {
		switch v.Op {
		case ops.AttentionGradOp, ops.AttentionLSEOp, ir.OpInput, ir.OpParam, "reshape", "transpose", "broadcast_in_dim", "slice":
		default:
			return "", Launch{}, fmt.Errorf("%s fused with %s is not supported", op.Op, v.Op)
		}
	}
	outs, err := gradOutputs(g, op)
	if err != nil {
		return "", Launch{}, err
	}
	if op.Attrs.String("mask", "") == ops.MaskPosition {
		return "", Launch{}, fmt.Errorf("%s: the position mask is not supported by the backward templates", op.Op)
	}
	wrt := op.Attrs.String("wrt", "")
	if op.Op == ops.AttentionGradOp {
		if !op.Attrs.Bool("lse", false) {
			return "", Launch{}, fmt.Errorf("attention_grad without its lse operand is not supported (passes add attention_lse)")
		}
		if wrt != "q" && wrt != "k" && wrt != "v" {
			return "", Launch{}, fmt.Errorf("attention_grad with respect to %s is not supported (its result is [B, H, L, S])", wrt)
		}
	}
	ev := op.Args[2].Type.Shape[3]
	if op.Op == ops.AttentionLSEOp {
		ev = 0
	}
	w := &attnWriter{name: k.Name, p: planOf(op, ev), ptr: map[*ir.Value]string{}}
	if e := w.p.E; e > 128 || ev > 128 {
		return "", Launch{}, fmt.Errorf("%s: head dims %d and %d, the backward templates take at most 128", op.Op, e, ev)
	}
	if err := symAttnRefused(k, w.p); err != nil {
		return "", Launch{}, err
	}
	mmaKV, mmaDQ := mma && (attnmma.FitsGrad(op) || attnmma.FitsGradWide(op)), mma && attnmma.FitsGradDQ(op)
	params, args := w.bindAll(k)
	w.keyGrid = op.Op == ops.AttentionGradOp && wrt != "q"
	work, err := w.symbolic(k, &params, &args) // symattn.go
	if err != nil {
		return "", Launch{}, err
	}
	operands := make([]attnOperand, len(op.Args))
	for i, a := range op.Args {
		o, err := w.operandOf(a, k)
		if err != nil {
			return "", Launch{}, err
		}
		operands[i] = o
	}
	if mmaKV {
		return attentionGradMMAKernel(k, w.p, outs) // dk and dv on tensor cores (attention_bwd_mma.go)
	}
	if mmaDQ {
		return attentionGradDQMMAKernel(k, w.p, op) // dq on tensor cores (attention_bwd_dq_mma.go)
	}
	out := w.ptr[op]
	regs := map[string]string{} // the outputs' address registers by wrt
	for wrt, v := range outs {
		regs[wrt] = w.ptr[v]
	}
	var s strings.Builder
	tiles := [][2]any{}
	launch := Launch{Grid: w.p.Grid, Block: w.p.Block, Params: args, Work: work}
	switch {
	case op.Op == ops.AttentionLSEOp:
		w.lse = out
		w.body(operands, "")
		fmt.Fprintf(&s, "// %s: attention's log-sum-exp per query row, online over %d-key tiles, a warp per row\n", k.Name, w.p.Keys)
		tiles = append(tiles, [2]any{"ktile", w.p.Keys * max(1, w.p.E)}, [2]any{"vtile", 1})
	case wrt == "q":
		w.dqBody(operands, out)
		fmt.Fprintf(&s, "// %s: attention's dq, the probabilities recomputed over %d-key tiles, a warp per query row\n", k.Name, w.p.Keys)
		tiles = append(tiles, [2]any{"ktile", w.p.Keys * max(1, w.p.E)}, [2]any{"vtile", w.p.Keys * max(1, w.p.Ev)})
	default:
		rows := w.p.Keys // query rows per shared tile: the forward's key tile, for the same bytes
		w.dkvBody(operands, regs, rows)
		fmt.Fprintf(&s, "// %s: attention's %s, the probabilities recomputed over %d-row query tiles, a warp per key\n", k.Name, strings.Join(gradNames(regs), " and "), rows)
		tiles = append(tiles, [2]any{"qtile", rows * max(1, w.p.E)}, [2]any{"dotile", rows * max(1, w.p.Ev)},
			[2]any{"lsetile", rows}, [2]any{"dtile", rows})
		keyBlocks := ceilDiv(w.p.S, AttentionGradKeys)
		launch.Grid = [3]int{max(1, w.p.B*w.p.KVH*keyBlocks), 1, 1}
	}
	fmt.Fprintf(&s, "//   %s\n", g.Format(op))
	fmt.Fprintf(&s, ".visible .entry %s(\n%s\n)\n.maxntid %d, 1, 1\n{\n", k.Name, strings.Join(params, ",\n"), w.p.Block[0])
	for _, t := range tiles {
		fmt.Fprintf(&s, "\t.shared .align 16 .f32 %s[%d];\n", t[0], t[1])
	}
	for _, d := range w.decls() {
		s.WriteString("\t" + d + "\n")
	}
	s.WriteString(w.text.String())
	s.WriteString("}\n")
	return s.String(), launch, nil
}

// bindAll declares a .u64 parameter per buffer of the kernel (inputs, parameters, outputs) and
// loads each one's global address into a register of w.ptr.
func (w *attnWriter) bindAll(k Kernel) (params []string, args []Arg) {
	g := k.Graph
	bind := func(kind ArgKind, i int, name string, v *ir.Value) {
		param := fmt.Sprintf("%s_param_%d", k.Name, len(args))
		params = append(params, "\t.param .u64 "+param)
		args = append(args, Arg{Kind: kind, Index: i, Name: name})
		r := fmt.Sprintf("%%ptr%d", len(args)-1)
		w.ins("ld.param.u64", r, "["+param+"]")
		w.ins("cvta.to.global.u64", r, r)
		w.ptr[v] = r
	}
	eachBuffer(g, bind)
	return params, args
}

// storeLSE writes the row's log-sum-exp, (m + log₂ l)·ln 2 (m and the scores are in base 2), from
// lane 0: −inf for a row with no visible key (m = −inf, l = 0).
func (w *attnWriter) storeLSE(rw *attnRow, lane, b string) {
	skip := "$" + w.name + "_lse"
	ok := w.reg("pred")
	w.ins("setp.eq.and.u32", ok, lane, "0", rw.active)
	w.ins("@!"+ok+" bra", skip)
	x, idx := w.reg("f32"), w.reg("b32")
	w.ins("lg2.approx.f32", x, rw.l)
	w.ins("add.rn.f32", x, x, rw.m)
	w.ins("mul.rn.f32", x, x, f32Imm(math.Ln2))
	w.ins("mad.lo.s32", idx, b, uimm(w.p.H), rw.h)
	w.ins("mad.lo.s32", idx, idx, w.dimL(), rw.i)
	w.ins("st.global.f32", w.addr(w.lse, idx, 4), x)
	w.label(skip)
}

// gradOperands are attention_grad's operands o, do and lse.
func (w *attnWriter) gradOperands(operands []attnOperand) (o, do, lse attnOperand) {
	oi, doi := ops.AttentionGradOperands(w.p.Op)
	return operands[oi], operands[doi], operands[len(operands)-1]
}

// lanes loads this lane's elements (lane + 32c) of row (b, h, i) of an operand of n columns when
// active, 0 elsewhere.
func (w *attnWriter) lanes(d ir.DType, o attnOperand, n int, b, h, i, lane, active, tag string) []string {
	xs := make([]string, ceilDiv(n, 32))
	for c := range xs {
		xs[c] = w.reg("f32")
		w.ins("mov.f32", xs[c], f32Imm(0))
		e, ok := w.reg("b32"), w.reg("pred")
		w.ins("add.s32", e, lane, uimm(32*c))
		w.ins("setp.lt.and.u32", ok, e, uimm(n), active)
		skip := fmt.Sprintf("$%s_%s_%d", w.name, tag, c)
		w.ins("@!"+ok+" bra", skip)
		w.ins("mov.f32", xs[c], w.loadF32(d, o.ptr, w.index(o, b, h, i, e)))
		w.label(skip)
	}
	return xs
}

// warpDot returns Σ xs[c]·ys[c] over the warp's lanes, in every lane (a butterfly of shuffles).
func (w *attnWriter) warpDot(xs, ys []string) string {
	s := w.reg("f32")
	w.ins("mov.f32", s, f32Imm(0))
	for c := range xs {
		w.ins("fma.rn.f32", s, xs[c], ys[c], s)
	}
	for off := 16; off >= 1; off /= 2 {
		o := w.reg("f32")
		w.ins("shfl.sync.bfly.b32", o, s, uimm(off), "0x1f", "0xffffffff")
		w.ins("add.rn.f32", s, s, o)
	}
	return s
}

// prob returns P = 2^(s + bias·log₂e − lse₂) for score s (base 2), lse₂ the row's log-sum-exp
// times log₂ e, adding query i's bias for key j when the op has one.
func (w *attnWriter) prob(s, lse2 string, bias *attnOperand, d ir.DType, b, h, i, j string) string {
	if bias != nil {
		x := w.loadF32(d, bias.ptr, w.index(*bias, b, h, i, j))
		w.ins("fma.rn.f32", s, x, f32Imm(math.Log2E), s)
	}
	p := w.reg("f32")
	w.ins("sub.rn.f32", p, s, lse2)
	w.ins("ex2.approx.f32", p, p)
	return p
}

// storeLanes writes this lane's elements (lane + 32c) of xs, times scale, as row `row` of an
// output of n columns, when active.
func (w *attnWriter) storeLanes(d ir.DType, out string, xs []string, scale float64, n int, row, lane, active, tag string) {
	for c := range xs {
		e, ok, idx := w.reg("b32"), w.reg("pred"), w.reg("b32")
		w.ins("add.s32", e, lane, uimm(32*c))
		w.ins("setp.lt.and.u32", ok, e, uimm(n), active)
		skip := fmt.Sprintf("$%s_%s_%d", w.name, tag, c)
		w.ins("@!"+ok+" bra", skip)
		if scale != 1 {
			w.ins("mul.rn.f32", xs[c], xs[c], f32Imm(scale))
		}
		w.ins("mad.lo.s32", idx, row, uimm(n), e)
		w.storeF32(d, out, idx, xs[c])
		w.label(skip)
	}
}

// dqBody writes the dq kernel: a warp per query row folds every visible key of the K and V
// tiles into dq += dS·k.
func (w *attnWriter) dqBody(operands []attnOperand, out string) {
	p, op := w.p, w.p.Op
	d := op.Args[0].Type.DType
	_, _, biasOp := w.extraOperands(operands)
	oOp, doOp, lseOp := w.gradOperands(operands)
	tid, lane, b, h, kh, row, last, active := w.blockRows()
	lim, blim := w.keyLimit(op.Attrs.String("mask", ""), "", row), w.keyLimit(op.Attrs.String("mask", ""), "", last)
	rw := w.newRow(d, operands[0], b, h, row, lane, active, "") // q·scale·log₂e
	dO := w.lanes(d, doOp, p.Ev, b, h, row, lane, active, "do")
	D := w.warpDot(dO, w.lanes(d, oOp, p.Ev, b, h, row, lane, active, "o"))
	lse2 := w.rowLSE(lseOp, b, h, row, active)
	dq := make([]string, len(rw.q))
	for c := range dq {
		dq[c] = w.reg("f32")
		w.ins("mov.f32", dq[c], f32Imm(0))
	}
	w.tileLoop(d, operands, 32*attnWarps, tid, "0", blim, w.dimS(), b, kh, func(t0 string) {
		skip := "$" + w.name + "_folded"
		w.ins("@!"+active+" bra.uni", skip)
		j, key, in := w.reg("b32"), w.reg("b32"), w.reg("pred")
		w.ins("mov.u32", j, "0")
		loop := "$" + w.name + "_key"
		w.label(loop)
		w.ins("add.s32", key, t0, j)
		w.ins("setp.lt.u32", in, j, uimm(p.Keys))
		w.ins("@!"+in+" bra.uni", skip)
		w.ins("setp.lt.u32", in, key, lim)
		w.ins("@!"+in+" bra.uni", skip)
		ks, vs := make([]string, len(rw.q)), make([]string, len(dO))
		for c := range ks {
			ks[c] = w.tileElem("ktile", p.E, j, lane, c)
		}
		for c := range vs {
			vs[c] = w.tileElem("vtile", p.Ev, j, lane, c)
		}
		pr := w.prob(w.warpDot(rw.q, ks), lse2, biasOp, d, b, h, row, key)
		ds := w.reg("f32")
		w.ins("sub.rn.f32", ds, w.warpDot(dO, vs), D)
		w.ins("mul.rn.f32", ds, ds, pr)
		for c := range dq {
			w.ins("fma.rn.f32", dq[c], ds, ks[c], dq[c])
		}
		w.ins("add.s32", j, j, "1")
		w.ins("bra.uni", loop)
		w.label(skip)
	})
	orow := w.reg("b32")
	w.ins("mad.lo.s32", orow, b, uimm(p.H), h)
	w.ins("mad.lo.s32", orow, orow, w.dimL(), row)
	w.storeLanes(op.Type.DType, out, dq, op.Attrs.Float("scale", 1), p.E, orow, lane, active, "dq")
	w.ins("ret")
}

// rowLSE loads row (b, h, i)'s log-sum-exp times log₂ e when active.
func (w *attnWriter) rowLSE(lseOp attnOperand, b, h, i, active string) string {
	x := w.reg("f32")
	w.ins("mov.f32", x, f32Imm(0))
	skip := "$" + w.name + "_rowlse"
	w.ins("@!"+active+" bra", skip)
	w.ins("ld.global.f32", x, w.addr(lseOp.ptr, w.index(lseOp, b, h, i), 4))
	w.ins("mul.rn.f32", x, x, f32Imm(math.Log2E))
	w.label(skip)
	return x
}

// dkvBody writes the dk and dv kernel (outs: the address registers of dk and dv by wrt, one or
// both): a warp per key folds the visible query rows of every query head of its group, rows at a
// time through shared memory.
func (w *attnWriter) dkvBody(operands []attnOperand, outs map[string]string, rows int) {
	p, op := w.p, w.p.Op
	d := op.Args[0].Type.DType
	_, _, biasOp := w.extraOperands(operands)
	oOp, doOp, lseOp := w.gradOperands(operands)
	causal := op.Attrs.String("mask", "") == ops.MaskCausal
	w.shared = map[string]string{}
	for _, t := range []string{"qtile", "dotile", "lsetile", "dtile"} {
		w.shared[t] = w.reg("b32")
		w.ins("mov.u32", w.shared[t], t)
	}
	u32 := func() string { return w.reg("b32") }
	tid, lane, warp, cta := u32(), u32(), u32(), u32()
	w.ins("mov.u32", tid, "%tid.x")
	w.ins("and.b32", lane, tid, "31")
	w.ins("shr.u32", warp, tid, "5")
	w.ins("mov.u32", cta, "%ctaid.x")
	bk, kb, b, kh, key0, key := u32(), u32(), u32(), u32(), u32(), u32()
	w.ins("div.u32", bk, cta, w.dimKeyBlocks())
	w.ins("rem.u32", kb, cta, w.dimKeyBlocks())
	w.ins("div.u32", b, bk, uimm(p.KVH))
	w.ins("rem.u32", kh, bk, uimm(p.KVH))
	w.ins("mul.lo.s32", key0, kb, uimm(AttentionGradKeys))
	w.ins("add.s32", key, key0, warp)
	active := w.reg("pred")
	w.ins("setp.lt.u32", active, key, w.dimS())

	// This lane's k elements, pre-scaled by scale·log₂e (scores in base 2), v elements (dk) and
	// accumulator.
	ks := w.lanes(d, operands[1], p.E, b, kh, key, lane, active, "k")
	for c := range ks {
		w.ins("mul.rn.f32", ks[c], ks[c], f32Imm(op.Attrs.Float("scale", 1)*math.Log2E))
	}
	doK, doV := outs["k"] != "", outs["v"] != ""
	var vs []string
	if doK {
		vs = w.lanes(d, operands[2], p.Ev, b, kh, key, lane, active, "v")
	}
	zeros := func(n int, on bool) []string {
		if !on {
			return nil
		}
		acc := make([]string, ceilDiv(n, 32))
		for c := range acc {
			acc[c] = w.reg("f32")
			w.ins("mov.f32", acc[c], f32Imm(0))
		}
		return acc
	}
	dk, dv := zeros(p.E, doK), zeros(p.Ev, doV)

	// Rows before the block's first key see none of its keys under the causal mask.
	first := "0"
	if causal {
		first = key0
	}
	grp := p.H / p.KVH
	hh, h, t0, more := u32(), u32(), u32(), w.reg("pred")
	w.ins("mov.u32", hh, "0")
	heads, headsDone := "$"+w.name+"_head", "$"+w.name+"_heads_done"
	w.label(heads)
	w.ins("setp.lt.u32", more, hh, uimm(grp))
	w.ins("@!"+more+" bra.uni", headsDone)
	w.ins("mad.lo.s32", h, kh, uimm(grp), hh)
	w.ins("mov.u32", t0, first)
	tile, tilesDone := "$"+w.name+"_rows", "$"+w.name+"_rows_done"
	w.label(tile)
	w.ins("setp.lt.u32", more, t0, w.dimL())
	w.ins("@!"+more+" bra.uni", tilesDone)
	threads := 32 * attnWarps
	if p.E > 0 {
		w.loadTile("qtile", d, operands[0], p.E, rows, threads, tid, t0, w.dimL(), b, h)
	}
	if p.Ev > 0 {
		w.loadTile("dotile", d, doOp, p.Ev, rows, threads, tid, t0, w.dimL(), b, h)
	}
	w.rowStats(d, lseOp, oOp, doOp, rows, tid, t0, b, h, doK)
	w.ins("bar.sync", "0")

	// Fold the tile's rows [t0, min(t0+rows, L)) that see this warp's key.
	skip := "$" + w.name + "_folded"
	w.ins("@!"+active+" bra.uni", skip)
	r, i, in := u32(), u32(), w.reg("pred")
	w.ins("mov.u32", r, "0")
	loop := "$" + w.name + "_row"
	w.label(loop)
	w.ins("add.s32", i, t0, r)
	w.ins("setp.lt.u32", in, r, uimm(rows))
	w.ins("@!"+in+" bra.uni", skip)
	w.ins("setp.lt.u32", in, i, w.dimL())
	w.ins("@!"+in+" bra.uni", skip)
	next := "$" + w.name + "_next_row"
	if causal {
		w.ins("setp.lt.u32", in, i, key) // row i sees key iff key ≤ i
		w.ins("@"+in+" bra.uni", next)
	}
	qs := make([]string, len(ks))
	for c := range qs {
		qs[c] = w.tileElem("qtile", p.E, r, lane, c)
	}
	dos := make([]string, ceilDiv(p.Ev, 32))
	for c := range dos {
		dos[c] = w.tileElem("dotile", p.Ev, r, lane, c)
	}
	pr := w.prob(w.warpDot(qs, ks), w.sharedAt("lsetile", r), biasOp, d, b, h, i, key)
	for c := range dv {
		w.ins("fma.rn.f32", dv[c], pr, dos[c], dv[c])
	}
	if doK {
		ds := w.reg("f32")
		w.ins("sub.rn.f32", ds, w.warpDot(dos, vs), w.sharedAt("dtile", r))
		w.ins("mul.rn.f32", ds, ds, pr)
		for c := range dk {
			w.ins("fma.rn.f32", dk[c], ds, qs[c], dk[c])
		}
	}
	w.label(next)
	w.ins("add.s32", r, r, "1")
	w.ins("bra.uni", loop)
	w.label(skip)
	w.ins("bar.sync", "0")
	w.ins("add.s32", t0, t0, uimm(rows))
	w.ins("bra.uni", tile)
	w.label(tilesDone)
	w.ins("add.s32", hh, hh, "1")
	w.ins("bra.uni", heads)
	w.label(headsDone)

	orow := u32()
	w.ins("mad.lo.s32", orow, b, uimm(p.KVH), kh)
	w.ins("mad.lo.s32", orow, orow, w.dimS(), key)
	if doK {
		w.storeLanes(op.Args[1].Type.DType, outs["k"], dk, op.Attrs.Float("scale", 1), p.E, orow, lane, active, "dk")
	}
	if doV {
		w.storeLanes(op.Args[2].Type.DType, outs["v"], dv, 1, p.Ev, orow, lane, active, "dv")
	}
	w.ins("ret")
}

// sharedAt loads element r of a shared f32 array.
func (w *attnWriter) sharedAt(name, r string) string {
	a, x := w.reg("b32"), w.reg("f32")
	w.ins("shl.b32", a, r, "2")
	w.ins("add.s32", a, a, w.shared[name])
	w.ins("ld.shared.f32", x, "["+a+"]")
	return x
}

// rowStats stages the tile's rows' LSE·log₂e and (withD) D = rowsum(do∘o) in shared memory, a
// thread per row, rows past L left alone (never read).
func (w *attnWriter) rowStats(d ir.DType, lseOp, oOp, doOp attnOperand, rows int, tid, t0, b, h string, withD bool) {
	skip := "$" + w.name + "_stats"
	i, in := w.reg("b32"), w.reg("pred")
	w.ins("setp.lt.u32", in, tid, uimm(rows))
	w.ins("@!"+in+" bra", skip)
	w.ins("add.s32", i, t0, tid)
	w.ins("setp.lt.u32", in, i, w.dimL())
	w.ins("@!"+in+" bra", skip)
	lse := w.reg("f32")
	w.ins("ld.global.f32", lse, w.addr(lseOp.ptr, w.index(lseOp, b, h, i), 4))
	w.ins("mul.rn.f32", lse, lse, f32Imm(math.Log2E))
	w.storeShared("lsetile", tid, lse)
	if withD {
		e, sum := w.reg("b32"), w.reg("f32")
		w.ins("mov.u32", e, "0")
		w.ins("mov.f32", sum, f32Imm(0))
		loop, done := "$"+w.name+"_drow", "$"+w.name+"_drow_done"
		w.label(loop)
		w.ins("setp.lt.u32", in, e, uimm(w.p.Ev))
		w.ins("@!"+in+" bra", done)
		x, y := w.loadF32(d, doOp.ptr, w.index(doOp, b, h, i, e)), w.loadF32(d, oOp.ptr, w.index(oOp, b, h, i, e))
		w.ins("fma.rn.f32", sum, x, y, sum)
		w.ins("add.s32", e, e, "1")
		w.ins("bra", loop)
		w.label(done)
		w.storeShared("dtile", tid, sum)
	}
	w.label(skip)
}

// storeShared stores x as element r of a shared f32 array.
func (w *attnWriter) storeShared(name, r, x string) {
	a := w.reg("b32")
	w.ins("shl.b32", a, r, "2")
	w.ins("add.s32", a, a, w.shared[name])
	w.ins("st.shared.f32", "["+a+"]", x)
}
