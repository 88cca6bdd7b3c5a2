package ptx

import (
	"fmt"
	"math"

	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// The dq backward on tensor cores (mma.sync m16n8k16, f32 accumulators) for f16 and bf16:
// FlashAttention-2's separate dq pass, shaped as the forward template. A block of 4 warps owns
// attnmma.Rows query rows of one (batch, head), 16 per warp, whose Q and dO rows it keeps as mma A
// fragments in registers, with the rows' LSE·log₂e and D = rowsum(dO∘O) (summed over the lane
// quad in a fixed order) and dq's f32 accumulators. K and V stream through shared memory in
// tiles of attnmma.GradDQKeys keys by cp.async (V's copy overlaps S's products), and per tile a
// warp computes
//
//	S = Q·Kᵀ, P = 2^(S·scale·log₂e + bias·log₂e − LSE·log₂e) (0 for keys a row does not see),
//	dP = dO·Vᵀ, dS = P∘(dP − D), dq += dS·K
//
// with K and V read by ldmatrix (K again with .trans for dS·K, the keys being that product's k)
// and dS rounded to the operands' dtype in registers, where the accumulators' layout is that of
// A fragments (as the forward's P). The bias is read as the forward reads it. Every dq element is
// summed by one thread in key order: no atomics, the same bits under every block order. dq is
// scaled by scale at the store.

// gradDQ writes the tensor-core dq template; out is dq's address register.
func (w *attnMMA) gradDQ(out string) {
	b, a, p := w.b, w.a, w.p
	keys := w.keys
	op := p.Op
	d := op.Args[0].Type.DType
	half := halfName(d)
	inst := mmaShapeOf(d).inst
	oi, doi := ops.AttentionGradOperands(op)
	oOp, doOp, lseOp := w.ops[oi], w.ops[doi], w.ops[len(w.ops)-1]
	var biasOp *attnOperand
	if op.Attrs.Bool("additive", false) {
		biasOp = &w.ops[3]
	}

	_, lane, warp, cta := w.threadIDs()
	// The last row tiles first, as the forward: under the causal mask they see the most keys.
	bh, rt := w.blockTile(cta)
	bIdx := a.reg(a.div(bh, p.H))
	h := a.reg(a.rem(bh, p.H))
	kh := a.reg(a.div(h, p.H/p.KVH))
	g, tq := a.reg(a.div(lane, 4)), a.reg(a.rem(lane, 4))
	blockRow := a.reg(a.mul(rt, attnMMARows))
	warpRow := a.reg(a.mad(warp, 16, blockRow))
	rowA := a.reg(a.add(warpRow, g))
	rowB := a.reg(a.add(rowA, imm(8)))
	rows := []string{rowA, rowB}

	limA, limB := w.limit(rowA, ""), w.limit(rowB, "")
	warpFirst := w.limit(warpRow, "")
	warpLast := w.limit(a.reg(a.add(warpRow, imm(15))), "")
	past := b.reg(rPred)
	b.ins("setp.ge.u32", past, warpRow, w.szL())
	b.ins("selp.b32", warpLast, "0", warpLast, past)
	lastRow := b.reg(rU32)
	b.ins("add.s32", lastRow, blockRow, imm(attnMMARows-1))
	b.ins("min.u32", lastRow, lastRow, w.szLast())
	blockLast := w.limit(lastRow, "")

	// Q's, dO's and (for D only) O's A fragments of rows g and g+8, zero past L.
	ok := w.belowSz(rowA, rowB, w.szL())
	aFrags := func(o attnOperand, n int) [][4]string {
		return w.rowFrags(o, n, bIdx, h, tq, [2]string{rowA, rowB}, ok, w.clampL)
	}
	qf, dof := aFrags(w.ops[0], p.E), aFrags(doOp, p.Ev)

	// Per row i (g, g+8): D = Σ dO∘O over the thread's columns, then over the lane quad; and
	// −LSE·log₂e.
	var dr, nl [2]string
	for i := range 2 {
		dr[i], nl[i] = b.reg(rF32), b.reg(rF32)
		b.ins("mov.f32", dr[i], immF32(0))
		b.ins("mov.f32", nl[i], immF32(0))
	}
	of := aFrags(oOp, p.Ev)
	for ks := range of {
		for j := range 4 {
			var x, y [2]string
			for c, f := range []string{dof[ks][j], of[ks][j]} {
				hs := [2]string{b.reg(rB16), b.reg(rB16)}
				b.ins("mov.b32", "{"+hs[0]+", "+hs[1]+"}", f)
				x[c], y[c] = b.reg(rF32), b.reg(rF32)
				w.toF32(x[c], hs[0], d)
				w.toF32(y[c], hs[1], d)
			}
			b.ins("fma.rn.f32", dr[j%2], x[0], x[1], dr[j%2])
			b.ins("fma.rn.f32", dr[j%2], y[0], y[1], dr[j%2])
		}
	}
	for i, row := range rows {
		for _, off := range []string{"1", "2"} {
			o := b.reg(rF32)
			b.ins("shfl.sync.bfly.b32", o, dr[i], off, "0x1f", "0xffffffff")
			b.ins("add.rn.f32", dr[i], dr[i], o)
		}
		skip := b.label("dq_lse")
		b.braIf("!"+ok[i], skip)
		b.ins("ld.global.f32", nl[i], w.elemAddr(lseOp, []string{bIdx, h, row}, 4))
		b.ins("mul.rn.f32", nl[i], nl[i], immF32(-math.Log2E))
		b.place(skip)
	}

	// Bias rows' addresses at key 2t of the first tile (rows past L read row L−1).
	var biasAddr [2]string
	if biasOp != nil {
		bo := *biasOp
		bBH := w.madSt(h, bo, 1, w.madSt(bIdx, bo, 0, w.offOf(bo)))
		for i, row := range rows {
			el := a.add(w.madSt(w.clampL(row), bo, 2, bBH), a.mul(tq, 2*bo.strides[3]))
			biasAddr[i] = b.reg(rU64)
			o := b.reg(rU64)
			b.ins("mul.wide.u32", o, a.reg(el), "2")
			b.ins("add.s64", biasAddr[i], bo.ptr, o)
		}
	}

	kt := w.tile("ktile", w.ops[1], p.E, bIdx, kh)
	vt := w.tile("vtile", w.ops[2], p.Ev, bIdx, kh)
	// ldmatrix lane addresses: K and V as B operands of S and dP (stored [key][e], the keys the
	// product's n), and K with .trans as dS·K's B (the keys its k), as the forward's V.
	q8, r8 := a.div(lane, 8), a.rem(lane, 8)
	plain := func(t *kvTile) string {
		return a.reg(a.add(t.sh, a.mul(a.mad(a.add(a.mul(a.div(q8, 2), 8), r8), t.rowH, a.mul(a.rem(q8, 2), 8)), 2)))
	}
	kN, vN := plain(kt), plain(vt)
	kT := a.reg(a.add(kt.sh, a.mul(a.mad(a.add(a.mul(a.rem(q8, 2), 8), r8), kt.rowH, a.mul(a.div(q8, 2), 8)), 2)))

	zeros := func(n int) []string {
		r := make([]string, n)
		for i := range r {
			r[i] = b.reg(rF32)
			b.ins("mov.f32", r[i], immF32(0))
		}
		return r
	}
	dq := zeros(4 * p.E / 8)
	// product returns A·Bᵀ over the tile's keys: n-tile j holds keys t0+8j…, thread values
	// (row g, key 2t+c) and (g+8, 2t+c); addr is the tile's plain ldmatrix address.
	product := func(af [][4]string, addr string, rowH int) []string {
		s := zeros(4 * keys / 8)
		for ks := range af {
			for np := range keys / 16 {
				bf := []string{b.reg(rU32), b.reg(rU32), b.reg(rU32), b.reg(rU32)}
				b.ins(ldmatrix(false), "{"+joinRegs(bf)+"}", fmt.Sprintf("[%s+%d]", addr, 2*(16*np*rowH+16*ks)))
				for x := range 2 {
					c := s[4*(2*np+x) : 4*(2*np+x)+4]
					b.ins(inst, "{"+joinRegs(c)+"}", "{"+joinRegs(af[ks][:])+"}", "{"+bf[2*x]+", "+bf[2*x+1]+"}", "{"+joinRegs(c)+"}")
				}
			}
		}
		return s
	}
	c2 := op.Attrs.Float("scale", 1) * math.Log2E

	t0 := b.reg(rU32)
	b.ins("mov.u32", t0, "0")
	left := b.reg(rU32)
	b.ins("mov.u32", left, w.szS())
	loop, done := b.label("dq_tile"), b.label("dq_done")
	none := b.reg(rPred)
	b.ins("setp.eq.u32", none, blockLast, "0")
	b.braIf(none, done)
	b.place(loop)
	b.ins(`.pragma "nounroll"`)
	w.issue(kt, left)
	w.issue(vt, left)
	b.ins("cp.async.wait_group", "1") // K of this tile
	b.ins("bar.sync", "0")
	busy := b.reg(rPred) // the warp's last row sees a key of this tile
	b.ins("setp.lt.u32", busy, t0, warpLast)
	skipS := b.label("dq_skip_s")
	b.braIf("!"+busy, skipS)
	s := product(qf, kN, kt.rowH)
	if biasOp != nil {
		kLeft := b.reg(rU32)
		b.ins("sub.s32", kLeft, left, a.reg(a.mul(tq, 2)))
		for j := range keys / 8 {
			for c := range 4 {
				in := b.reg(rPred)
				b.ins("setp.gt.s32", in, kLeft, imm(8*j+c%2))
				hv, f := b.reg(rB16), b.reg(rF32)
				b.ins("mov.b16", hv, "0")
				b.guarded(in, "ld.global.b16", hv, fmt.Sprintf("[%s+%d]", biasAddr[c/2], 2*(8*j+c%2)*biasOp.strides[3]))
				w.toF32(f, hv, d)
				b.ins("fma.rn.f32", s[4*j+c], s[4*j+c], immF32(c2/math.Log2E), f)
			}
		}
	}
	for j := range keys / 8 {
		for c := range 4 {
			r := s[4*j+c]
			if biasOp != nil { // s holds score + bias
				b.ins("fma.rn.f32", r, r, immF32(math.Log2E), nl[c/2])
			} else {
				b.ins("fma.rn.f32", r, r, immF32(c2), nl[c/2])
			}
			b.ins("ex2.approx.ftz.f32", r, r)
		}
	}
	// P = 0 for keys a row does not see, where the warp's first row does not see the whole tile.
	whole := b.reg(rPred)
	end := b.reg(rU32)
	b.ins("add.s32", end, t0, imm(keys))
	b.ins("setp.le.u32", whole, end, warpFirst)
	masked := b.label("dq_masked")
	b.braIf(whole, masked)
	for i, lim := range []string{limA, limB} {
		rel := b.reg(rU32)
		b.ins("sub.s32", rel, lim, t0)
		b.ins("sub.s32", rel, rel, a.reg(a.mul(tq, 2)))
		for j := range keys / 8 {
			for c := range 2 {
				in := b.reg(rPred)
				b.ins("setp.gt.s32", in, rel, imm(8*j+c))
				r := s[4*j+2*i+c]
				b.ins("selp.f32", r, r, immF32(0), in)
			}
		}
	}
	b.place(masked)
	b.place(skipS)
	b.ins("cp.async.wait_group", "0") // V of this tile
	b.ins("bar.sync", "0")
	skipDQ := b.label("dq_skip")
	b.braIf("!"+busy, skipDQ)
	dp := product(dof, vN, vt.rowH)
	// dS = P∘(dP − D), as A fragments: keys 16kk… are tiles 2kk and 2kk+1.
	dsf := make([][4]string, keys/16)
	for j := range keys / 8 {
		for c := range 4 {
			x := dp[4*j+c]
			b.ins("sub.rn.f32", x, x, dr[c/2])
			b.ins("mul.rn.f32", x, x, s[4*j+c])
		}
	}
	for kk := range dsf {
		for j := range 4 {
			c := 4*(2*kk+j/2) + 2*(j%2)
			dsf[kk][j] = b.reg(rU32)
			b.ins("cvt.rn."+half+"x2.f32", dsf[kk][j], dp[c+1], dp[c])
		}
	}
	// dq += dS·K: K's x4 .trans covers keys 16kk… and columns 16nj…
	for kk := range dsf {
		mmaTransB(b, inst, dq, dsf[kk], kT, kk, kt.rowH, p.E)
	}
	b.place(skipDQ)
	b.ins("bar.sync", "0") // every warp is done with K and V
	if biasOp != nil {
		for _, r := range biasAddr {
			b.ins("add.s64", r, r, imm(2*keys*biasOp.strides[3]))
		}
	}
	b.ins("add.s32", t0, t0, imm(keys))
	b.ins("sub.s32", left, left, imm(keys))
	more := b.reg(rPred)
	b.ins("setp.lt.u32", more, t0, blockLast)
	b.braIf(more, loop)
	b.place(done)

	// dq·scale as rows g and g+8, pairs of columns 2t, 2t+1.
	scale := op.Attrs.Float("scale", 1)
	w.afterLoop()
	for i, row := range rows {
		el := a.mad(w.outRow(bh, w.clampL(row)), p.E, a.mul(tq, 2))
		addr, o := b.reg(rU64), b.reg(rU64)
		b.ins("mul.wide.u32", o, a.reg(el), "2")
		b.ins("add.s64", addr, out, o)
		for n := range p.E / 8 {
			x, y := dq[4*n+2*i], dq[4*n+2*i+1]
			b.ins("mul.rn.f32", x, x, immF32(scale))
			b.ins("mul.rn.f32", y, y, immF32(scale))
			pk := b.reg(rU32)
			b.ins("cvt.rn."+half+"x2.f32", pk, y, x)
			b.guarded(ok[i], "st.global.b32", fmt.Sprintf("[%s+%d]", addr, 16*n), pk)
		}
	}
}

// attentionGradDQMMAKernel emits the tensor-core dq template for a kernel attentionBwdKernel
// checked (attnmma.FitsGradDQ): out is dq.
func attentionGradDQMMAKernel(k Kernel, p AttentionPlan, out *ir.Value) (string, Launch, error) {
	b := newBuilder(k.Name)
	w := &attnMMA{b: b, a: ia{b}, p: p, eb: 2, keys: attnmma.GradDQKeys}
	ptr, args, operands, err := bindMMA(b, k, p.Op)
	if err != nil {
		return "", Launch{}, err
	}
	w.ops, w.ptr = operands, ptr
	work, err := w.symbolicGrad(k, &args, true) // symattn_bwd_mma.go
	if err != nil {
		return "", Launch{}, err
	}
	b.comment = []string{
		fmt.Sprintf("%s: attention's dq on tensor cores (mma.sync), %d query rows per block, %d-key K/V tiles by cp.async", k.Name, attnMMARows, w.keys),
		"  " + k.Graph.Format(p.Op),
	}
	b.perf = fmt.Sprintf(".maxntid %d, 1, 1", attnmma.Threads)
	w.gradDQ(ptr[out])
	return b.text(), Launch{Grid: [3]int{attnmma.GradDQBlocks(p.Op), 1, 1}, Block: [3]int{attnmma.Threads, 1, 1}, Params: args, Work: work}, nil
}
