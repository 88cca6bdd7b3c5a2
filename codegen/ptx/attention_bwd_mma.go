package ptx

import (
	"fmt"
	"math"
	"strings"

	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// The dk/dv backward on tensor cores (mma.sync m16n8k16, f32 accumulators) for f16 and bf16,
// FlashAttention-2's key-block loop: a block of 4 warps owns 64 keys of one (batch, KV head), 16
// per warp, whose K and V rows it keeps as mma A fragments in registers and whose dk and dv it
// accumulates in f32 registers. It loops over the query heads of the KV head's group (in head
// order) and over tiles of 32 query rows (16 where a head dim exceeds 96: attnmma.GradRowTile,
// which keeps Sᵀ and dPᵀ small enough for 0 spills at 128; a causal block starts at the tile of
// its first key),
// staging each tile's q and do rows in shared memory by cp.async, and the rows' LSE·log₂e and
// D = rowsum(do∘o) (a thread per row, in f32, in column order). Per tile a warp computes
//
//	Sᵀ = K·Qᵀ, Pᵀ = 2^(Sᵀ·scale·log₂e − LSE·log₂e) (0 where a row does not see the key or lies
//	past L), dV += Pᵀ·dO, dPᵀ = V·dOᵀ, dSᵀ = Pᵀ∘(dPᵀ − D), dK += dSᵀ·Q
//
// with Pᵀ and dSᵀ rounded to the operands' dtype in registers, where the accumulators' layout is
// that of A fragments (as the forward's P), and Q and dO read with ldmatrix (.trans where rows are
// the product's k). Every dk and dv element is summed by one thread in a fixed order: results are
// deterministic. dk is scaled by scale at the store. With the additive bias (attnmma.FitsGradWide,
// which also takes head dims up to attnmma.GradWideMaxDim, GradBiasMaxDim with a bias) each
// thread reads the bias elements of its Pᵀ values from global memory, (row, key) of the query
// head, where the row is below L. The CUDA-core template keeps the rest (a bias at head dims over
// GradBiasMaxDim, f32, position masks), as attnmma.FitsGrad and FitsGradWide tell the passes'
// cost model.

const (
	gradMMAKeys = attnmma.GradKeys // keys per block, 16 per warp
)

// gradBody writes the tensor-core dk/dv template; outs are the outputs' address registers by wrt
// ("k", "v"; one or both).
func (w *attnMMA) gradBody(operands []attnOperand, outs map[string]string) {
	b, a, p := w.b, w.a, w.p
	op := p.Op
	d := op.Args[0].Type.DType
	half := halfName(d)
	inst := mmaShapeOf(d).inst
	causal := op.Attrs.String("mask", "") == ops.MaskCausal
	oi, doi := ops.AttentionGradOperands(op)
	qOp, kOp, vOp, oOp, doOp, lseOp := operands[0], operands[1], operands[2], operands[oi], operands[doi], operands[len(operands)-1]
	grp := p.H / p.KVH
	keyBlocks := ceilDiv(p.S, gradMMAKeys)

	_, lane, warp, cta := w.threadIDs()
	bk, kb := w.keyBlock(cta, keyBlocks)
	bIdx := a.reg(a.div(bk, p.KVH))
	kh := a.reg(a.rem(bk, p.KVH))
	g, tq := a.reg(a.div(lane, 4)), a.reg(a.rem(lane, 4))
	blockKey := a.reg(a.mul(kb, gradMMAKeys))
	warpKey := a.reg(a.mad(warp, 16, blockKey))
	keyA := a.reg(a.add(warpKey, g))
	keyB := a.reg(a.add(keyA, imm(8)))

	// K's and V's A fragments of the warp's 16 keys (rows g and g+8), zero past S.
	keys, keyOK := [2]string{keyA, keyB}, w.belowSz(keyA, keyB, w.szS())
	kf, vf := w.rowFrags(kOp, p.E, bIdx, kh, tq, keys, keyOK, w.clampS), w.rowFrags(vOp, p.Ev, bIdx, kh, tq, keys, keyOK, w.clampS)
	bias := w.gradBias(operands, bIdx, keyA, keyB)

	zeros := func(n int) []string {
		r := make([]string, n)
		for i := range r {
			r[i] = b.reg(rF32)
			b.ins("mov.f32", r[i], immF32(0))
		}
		return r
	}
	dk, dv := zeros(4*p.E/8), zeros(4*p.Ev/8)

	qt := w.tile("qtile", qOp, p.E, bIdx, kh)
	dt := w.tile("dotile", doOp, p.Ev, bIdx, kh)
	lseSh, dSh := b.reg(rU32), b.reg(rU32)
	b.ins("mov.u32", lseSh, b.sharedArray("lsetile", 4*w.keys, 16))
	b.ins("mov.u32", dSh, b.sharedArray("dtile", 4*w.keys, 16))

	// ldmatrix lane addresses as the forward's: non-transposed (Qᵀ and dOᵀ as B, the tile's
	// rows the product's n) and transposed (Q and dO as B, its rows the product's k).
	q8, r8 := a.div(lane, 8), a.rem(lane, 8)
	plain := func(t *kvTile) string {
		return a.reg(a.add(t.sh, a.mul(a.mad(a.add(a.mul(a.div(q8, 2), 8), r8), t.rowH, a.mul(a.rem(q8, 2), 8)), 2)))
	}
	trans := func(t *kvTile) string {
		return a.reg(a.add(t.sh, a.mul(a.mad(a.add(a.mul(a.rem(q8, 2), 8), r8), t.rowH, a.mul(a.div(q8, 2), 8)), 2)))
	}
	qN, qK, dN, dK := plain(qt), trans(qt), plain(dt), trans(dt)

	// The first row tile: a causal block's first key's (rows before it see none of its keys).
	rowStart := "0"
	if causal {
		rowStart = a.reg(a.mul(a.div(blockKey, w.keys), w.keys))
	}
	c2 := op.Attrs.Float("scale", 1) * math.Log2E

	hj := b.reg(rU32)
	b.ins("mov.u32", hj, "0")
	headLoop, headDone := b.label("grad_head"), b.label("grad_head_done")
	rowLoop, rowDone := b.label("grad_rows"), b.label("grad_rows_done")
	b.place(headLoop)
	b.ins(`.pragma "nounroll"`)
	h := a.reg(a.mad(kh, grp, hj))
	bias.retarget(w, h)
	r0 := b.reg(rU32)
	b.ins("mov.u32", r0, a.reg(rowStart))
	for _, t := range []*kvTile{qt, dt} {
		w.retarget(t, bIdx, h, r0)
	}
	none := b.reg(rPred)
	b.ins("setp.ge.u32", none, r0, w.szL())
	b.braIf(none, rowDone)
	b.place(rowLoop)
	b.ins(`.pragma "nounroll"`)
	left := b.reg(rU32)
	b.ins("sub.s32", left, w.szL(), r0)
	w.issue(qt, left)
	w.issue(dt, left)
	w.rowStats(oOp, doOp, lseOp, bIdx, h, r0, lseSh, dSh)
	b.ins("cp.async.wait_group", "0")
	b.ins("bar.sync", "0")

	busy := b.reg(rPred) // the warp has keys below S that a row of the tile sees
	b.ins("setp.lt.u32", busy, warpKey, w.szS())
	if causal {
		rl := b.reg(rU32)
		b.ins("add.s32", rl, r0, imm(w.keys-1))
		b.ins("setp.le.and.u32", busy, warpKey, rl, busy)
	}
	skip := b.label("grad_skip")
	b.braIf("!"+busy, skip)

	// Sᵀ and dPᵀ: n-tile j holds rows r0+8j…, thread values (key g, row 2t+c) and (g+8, 2t+c).
	// mma2 adds A fragment af times the B fragments of n-tiles 2nt and 2nt+1 (one ldmatrix x4 at
	// addr+off) to the accumulator tiles 2nt and 2nt+1 of acc.
	mma2 := func(acc []string, af [4]string, trans bool, addr string, off, nt int) {
		bf := []string{b.reg(rU32), b.reg(rU32), b.reg(rU32), b.reg(rU32)}
		b.ins(ldmatrix(trans), "{"+joinRegs(bf)+"}", fmt.Sprintf("[%s+%d]", addr, off))
		for x := range 2 {
			c := acc[4*(2*nt+x) : 4*(2*nt+x)+4]
			b.ins(inst, "{"+joinRegs(c)+"}", "{"+joinRegs(af[:])+"}", "{"+bf[2*x]+", "+bf[2*x+1]+"}", "{"+joinRegs(c)+"}")
		}
	}
	product := func(af [][4]string, addr string, rowH int) []string {
		s := zeros(4 * w.keys / 8)
		for ks := range af {
			for np := range w.keys / 16 {
				mma2(s, af[ks], false, addr, 2*(16*np*rowH+16*ks), np)
			}
		}
		return s
	}
	s := product(kf, qN, qt.rowH)
	// Pᵀ, 0 where the row is past L or (causal) before the key.
	rowOff := a.reg(a.mul(tq, 2))
	nl, dr := make([]string, w.keys/4), make([]string, w.keys/4) // by (j, c)
	for j := range w.keys / 8 {
		for c := range 2 {
			at := a.reg(a.add(rowOff, imm(8*j+c)))
			off := a.reg(a.mul(at, 4))
			x, y := b.reg(rF32), b.reg(rF32)
			b.ins("ld.shared.f32", x, "["+a.reg(a.add(lseSh, off))+"]")
			b.ins("ld.shared.f32", y, "["+a.reg(a.add(dSh, off))+"]")
			nl[2*j+c], dr[2*j+c] = x, y
			row := a.reg(a.add(r0, at))
			for i, key := range []string{keyA, keyB} {
				ok := b.reg(rPred)
				b.ins("setp.lt.u32", ok, row, w.szL())
				if causal {
					b.ins("setp.ge.and.u32", ok, row, key, ok)
				}
				r := s[4*j+2*i+c]
				if bias != nil { // Sᵀ·scale + bias, then in base 2
					b.ins("fma.rn.f32", r, r, immF32(op.Attrs.Float("scale", 1)), bias.load(w, row, i, ok))
					b.ins("fma.rn.f32", r, r, immF32(math.Log2E), x)
				} else {
					b.ins("fma.rn.f32", r, r, immF32(c2), x)
				}
				b.ins("ex2.approx.ftz.f32", r, r)
				b.ins("selp.f32", r, r, immF32(0), ok)
			}
		}
	}
	// A fragments of keys × rows 16kk…: accumulator tiles 2kk and 2kk+1, as the forward's P.
	aFrags := func(x []string) [][4]string {
		f := make([][4]string, w.keys/16)
		for kk := range f {
			for j := range 4 {
				c := 4*(2*kk+j/2) + 2*(j%2)
				f[kk][j] = b.reg(rU32)
				b.ins("cvt.rn."+half+"x2.f32", f[kk][j], x[c+1], x[c])
			}
		}
		return f
	}
	// acc += A·B with B the rows × n tile at addr (ldmatrix.trans), n-tiles of 8 columns.
	accumulate := func(acc []string, af [][4]string, addr string, rowH, n int) {
		for kk := range af {
			for nj := range n / 16 {
				mma2(acc, af[kk], true, addr, 2*(16*kk*rowH+16*nj), nj)
			}
		}
	}
	accumulate(dv, aFrags(s), dK, dt.rowH, p.Ev)
	dp := product(vf, dN, dt.rowH)
	for j := range w.keys / 8 {
		for c := range 2 {
			for i := range 2 {
				x := dp[4*j+2*i+c]
				b.ins("sub.rn.f32", x, x, dr[2*j+c])
				b.ins("mul.rn.f32", x, x, s[4*j+2*i+c])
			}
		}
	}
	accumulate(dk, aFrags(dp), qK, qt.rowH, p.E)
	b.place(skip)
	b.ins("bar.sync", "0") // every warp is done with the tile
	b.ins("add.s32", r0, r0, imm(w.keys))
	more := b.reg(rPred)
	b.ins("setp.lt.u32", more, r0, w.szL())
	b.braIf(more, rowLoop)
	b.place(rowDone)
	b.ins("add.s32", hj, hj, "1")
	again := b.reg(rPred)
	b.ins("setp.lt.u32", again, hj, imm(grp))
	b.braIf(again, headLoop)
	b.place(headDone)

	// dk·scale and dv as rows g and g+8 of the warp's keys, pairs of columns 2t, 2t+1.
	store := func(out string, acc []string, n int, scale float64) {
		for i, key := range []string{keyA, keyB} {
			ok := b.reg(rPred)
			b.ins("setp.lt.u32", ok, key, w.szS())
			el := a.mad(w.keyRow(bk, key), n, a.mul(tq, 2))
			addr, o := b.reg(rU64), b.reg(rU64)
			b.ins("mul.wide.u32", o, a.reg(el), "2")
			b.ins("add.s64", addr, out, o)
			for nt := range n / 8 {
				x, y := acc[4*nt+2*i], acc[4*nt+2*i+1]
				if scale != 1 {
					b.ins("mul.rn.f32", x, x, immF32(scale))
					b.ins("mul.rn.f32", y, y, immF32(scale))
				}
				pk := b.reg(rU32)
				b.ins("cvt.rn."+half+"x2.f32", pk, y, x)
				b.guarded(ok, "st.global.b32", fmt.Sprintf("[%s+%d]", addr, 16*nt), pk)
			}
		}
	}
	if outs["k"] != "" {
		store(outs["k"], dk, p.E, op.Attrs.Float("scale", 1))
	}
	if outs["v"] != "" {
		store(outs["v"], dv, p.Ev, 1)
	}
}

// belowSz returns predicates: x < n and y < n (n an immediate or a register).
func (w *attnMMA) belowSz(x, y string, n string) (ok [2]string) {
	for i, r := range []string{x, y} {
		ok[i] = w.b.reg(rPred)
		w.b.ins("setp.lt.u32", ok[i], r, n)
	}
	return ok
}

// rowFrags loads the 16-bit A fragments of n columns of rows rows[0] and rows[1] (a thread's g
// and g+8; tq its lane in the quad) of head hh of batch entry b0 of operand o, zero where ok is
// false (the row is past the rows, where clamp clamps the address).
func (w *attnMMA) rowFrags(o attnOperand, n int, b0, hh, tq string, rows, ok [2]string, clamp func(string) string) [][4]string {
	b, a := w.b, w.a
	f := make([][4]string, n/16)
	base := w.madSt(hh, o, 1, w.madSt(b0, o, 0, w.offOf(o)))
	var rowAddr [2]string
	for i, row := range rows {
		el := a.add(w.madSt(clamp(row), o, 2, base), a.mul(tq, 2*o.strides[3]))
		rowAddr[i] = b.reg(rU64)
		wide := b.reg(rU64)
		b.ins("mul.wide.u32", wide, a.reg(el), "2")
		b.ins("add.s64", rowAddr[i], o.ptr, wide)
	}
	w.halfA(o, f, rowAddr, ok)
	return f
}

// retarget points tile t's copies at rows r0… of head h of batch entry b0 (the tile's operand is
// [B, H, rows, n] through its strides).
func (w *attnMMA) retarget(t *kvTile, b0, h, r0 string) {
	b, a := w.b, w.a
	perRow := t.n / t.chunk
	col0 := a.mul(a.rem(w.tid, perRow), t.chunk)
	el := w.madSt(b0, t.op, 0, w.offOf(t.op))
	el = w.madSt(h, t.op, 1, el)
	el = a.add(w.madSt(a.reg(a.add(t.row0, r0)), t.op, 2, el), col0)
	o := b.reg(rU64)
	b.ins("mul.wide.u32", o, a.reg(el), imm(w.eb))
	b.ins("add.s64", t.src, t.op.ptr, o)
}

// rowStats stores the tile's rows' −LSE·log₂e and D = rowsum(do∘o) (f32, in column order) in
// shared memory, a thread per row; 0 and 0 for rows past L.
func (w *attnMMA) rowStats(oOp, doOp, lseOp attnOperand, b0, h, r0, lseSh, dSh string) {
	b, a, p := w.b, w.a, w.p
	d := p.Op.Args[0].Type.DType
	done := b.label("grad_stats")
	idle := b.reg(rPred)
	b.ins("setp.ge.u32", idle, w.tid, imm(w.keys))
	b.braIf(idle, done)
	row := a.reg(a.add(r0, w.tid))
	nl, dsum := b.reg(rF32), b.reg(rF32)
	b.ins("mov.f32", nl, immF32(0))
	b.ins("mov.f32", dsum, immF32(0))
	store := b.label("grad_stats_store")
	past := b.reg(rPred)
	b.ins("setp.ge.u32", past, row, w.szL())
	b.braIf(past, store)
	b.ins("ld.global.f32", nl, w.elemAddr(lseOp, []string{b0, h, row}, 4))
	b.ins("mul.rn.f32", nl, nl, immF32(-math.Log2E))
	var rowAddr [2]string
	for i, o := range []attnOperand{oOp, doOp} {
		rowAddr[i] = w.elemAddr(o, []string{b0, h, row}, 2)
	}
	for e := range p.Ev {
		var xs [2]string
		for i, o := range []attnOperand{oOp, doOp} {
			hv := b.reg(rB16)
			addr := rowAddr[i]
			if off := 2 * e * o.strides[3]; off != 0 {
				addr = fmt.Sprintf("%s+%d]", addr[:len(addr)-1], off)
			}
			b.ins("ld.global.b16", hv, addr)
			xs[i] = b.reg(rF32)
			w.toF32(xs[i], hv, d)
		}
		b.ins("fma.rn.f32", dsum, xs[0], xs[1], dsum)
	}
	b.place(store)
	off := a.reg(a.mul(w.tid, 4))
	b.ins("st.shared.f32", "["+a.reg(a.add(lseSh, off))+"]", nl)
	b.ins("st.shared.f32", "["+a.reg(a.add(dSh, off))+"]", dsum)
	b.place(done)
}

// attentionGradMMAKernel emits the tensor-core dk/dv template for a kernel attentionBwdKernel
// checked (attnmma.FitsGrad): outs are the outputs by wrt.
func attentionGradMMAKernel(k Kernel, p AttentionPlan, outs map[string]*ir.Value) (string, Launch, error) {
	g := k.Graph
	b := newBuilder(k.Name)
	w := &attnMMA{b: b, a: ia{b}, p: p, eb: 2, keys: attnmma.GradRowTile(p.Op)} // keys: the row tile
	ptr, args, operands, err := bindMMA(b, k, p.Op)
	if err != nil {
		return "", Launch{}, err
	}
	w.ops, w.ptr = operands, ptr
	work, err := w.symbolicGrad(k, &args, false) // symattn_bwd_mma.go
	if err != nil {
		return "", Launch{}, err
	}
	regs := map[string]string{}
	for wrt, v := range outs {
		regs[wrt] = ptr[v]
	}
	b.comment = []string{
		fmt.Sprintf("%s: attention's %s on tensor cores (mma.sync), %d keys per block, %d-row q/do tiles by cp.async", k.Name, strings.Join(gradNames(regs), " and "), gradMMAKeys, w.keys),
		"  " + g.Format(p.Op),
	}
	b.perf = fmt.Sprintf(".maxntid %d, 1, 1", 32*attnWarps)
	w.gradBody(w.ops, regs)
	return b.text(), Launch{Grid: [3]int{attnmma.GradBlocks(p.Op), 1, 1}, Block: [3]int{32 * attnWarps, 1, 1}, Params: args, Work: work}, nil
}
