package ptx

import (
	"fmt"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/codegen/qmma"
	"github.com/gcomp/gcomp/ir"
)

// The tensor-core GEMM over a quantized weight (codegen/qmma decides which products): x[M,K]
// times w[N,K]ᵀ where w = dequantize(q, scale[, zero]) {axis=1} (or an f32 one cast to the
// operands' 16-bit dtype). The A side is mma.go's; the B side copies q's bytes, not w's
// halves, to shared memory: a tile row of the 32 k of a step is 32 bytes of int8 or 16 of
// packed int4 (2× or 4× fewer than f16), by 16-byte cp.async where q's rows allow (else 4-byte,
// else byte copies), rows padded to 48 bytes. The mma's B fragment of lane (g, t) is column g,
// k 2t, 2t+1 (register 0) and 2t+8, 2t+9 (register 1) of a k16 slab: for int8 the u16 at byte
// 2t (and 2t+8) of the column's row, for int4 byte t (and t+4), whose low and high nibbles are
// the two k. For a dequantize of f16 scales (autocast's f16 weight) the pair is dequantized in
// an f16x2 register (quantPair: the fields or'ed into the mantissas of two 1024s, minus 1024 +
// zero, times the scale by mul.rn.f16x2, whose rounding is the op's one). Otherwise each field
// becomes (u − zero)·scale in f32 as quantVector computes it (or'ed into the bits of 2²³, minus
// 2²³ + zero, times the scale by mul.rn.f32) and the pair is rounded to f16x2 or bf16x2 by one
// cvt: for a dequantize of 16-bit scales the f32 product is exact and the cvt is the op's
// rounding; for cast(dequantize f32) mul.rn.f32 is the dequantize's and the cvt the cast's. The
// fragment reads hit 8 different bank groups (rows 12 words apart). Scales and zero points come
// from global memory (L1/L2-resident: K/group per column): once before the k loop for one group
// per row, on a group's first k step for groups of a multiple of 32 (kept in registers across
// its steps), once per k16 slab for other multiples of 16.
// Out-of-range k of a ragged last step is set to 0 in B (A is zero there too, but a non-finite
// scale would make 0·w NaN).

// quantB is the quantized B side of a tensor-core GEMM.
type quantB struct {
	dq    *ir.Value
	out   ir.DType // the fragments' dtype (f16 or bf16)
	bits  int
	group int // k per group (K: one group per row)
	k     int // the weight's K
	q     operandLayout
	kb    int // bytes of a tile row per k step
	rowB  int // shared bytes per tile row
	chunk int // bytes per copy: 16, 4 or 1

	// registers of the emitted kernel
	ptr, row0, col0 string // the thread's first copy: global address, tile row, byte in the row
	frag            string // shared address of the thread's fragment bytes in buffer 0
	kt              string // the k-step counter
	// (scale, biased zero) per column of the thread: loaded before the k loop (one group per
	// row), or carried across the steps of a group and reloaded on its first
	hoisted, carried [][2]string
}

const quantRowBytes = 48 // 32 bytes of k and 16 of padding: fragment rows 12 words apart

// quantGEMM views a dot whose weight qmma.Fits as a GEMM with a quantized B side.
func quantGEMM(dot, dq *ir.Value) (*matmul, int, error) {
	lhs, err := layoutOf(dot.Args[0], nil, dot.Attrs.Ints("lhs_contract"))
	if err != nil {
		return nil, 0, err
	}
	q := dq.Args[0]
	for _, a := range dq.Args {
		if a.Op != ir.OpInput && a.Op != ir.OpParam {
			return nil, 0, fmt.Errorf("dequantize operand %s is computed inside the kernel (%s)", a.Type, a.Op)
		}
	}
	ql, err := layoutOf(q, nil, []int{1})
	if err != nil || ql.view != nil || ql.kSt != 1 {
		return nil, 0, fmt.Errorf("quantized weight %s is not stored [N][K]", q.Type)
	}
	qb := &quantB{dq: dq, out: dot.Type.DType, bits: dq.Attrs.Int("bits", 8), group: dq.Attrs.Int("group", 0), k: dq.Type.Shape[1], q: ql}
	qb.kb = mmaBK * qb.bits / 8
	qb.rowB = quantRowBytes
	qb.chunk = 1
	for _, c := range []int{16, 4} {
		if ql.k%c == 0 && ql.off%c == 0 && ql.freeSt%c == 0 {
			qb.chunk = c
			break
		}
	}
	w := dq.Type.Shape
	mm := &matmul{M: lhs.free, N: w[0], K: lhs.k, lhs: lhs, rhs: ql, dot: dot, quant: qb}
	if mm.K != w[1] {
		return nil, 0, fmt.Errorf("the product's K %d is not the weight's %d", mm.K, w[1])
	}
	return mm, 1, nil
}

// plan describes the side to codegen/nvvm (plan.MMAQuant): the byte tile's copies (bufBytes per
// buffer) as quantIssue makes them and the dequantization.
func (qb *quantB) plan(bufBytes int) (plan.MMASide, *plan.MMAQuant) {
	perRow := qb.kb / qb.chunk
	sd := plan.MMASide{KContig: true, BufBytes: bufBytes, Chunk: qb.chunk, PerRow: perRow}
	for i := 0; i*mmThreads < mmBM*perRow; i++ {
		sd.DF, sd.DK = append(sd.DF, i*mmThreads/perRow), append(sd.DK, 0)
	}
	return sd, &plan.MMAQuant{DQ: qb.dq, Bits: qb.bits, Group: qb.group, K: qb.k, KB: qb.kb, RowB: qb.rowB, Halves: qb.halves()}
}

// quantOperand returns dot's dequantized weight if the quantized GEMM takes it.
func quantOperand(dot *ir.Value) *ir.Value {
	dq, ok := qmma.Fits(dot)
	if !ok {
		return nil
	}
	return dq
}

// quantSide fills sd, side 1 of a quantized GEMM, for its byte tile.
func (mm *matmul) quantSide(sd *mmaSide) {
	sd.kContig, sd.q = true, mm.quant
	sd.chunk = mm.quant.chunk
	sd.bufBytes = mmBM * mm.quant.rowB
}

// quantCopyInit computes the thread's first copy of the B tile: tile row tid / perRow, byte
// (tid % perRow)·chunk, and its global address (the row clamped into q).
func (mm *matmul) quantCopyInit(sd *mmaSide, tid, n0 string) {
	b, a, qb := mm.e.b, mm.a, sd.q
	perRow := qb.kb / qb.chunk
	qb.row0, qb.col0 = a.div(tid, perRow), a.mul(a.rem(tid, perRow), qb.chunk)
	off := a.mad(a.clamp(a.add(n0, qb.row0), mm.N), qb.q.freeSt, a.add(qb.col0, imm(qb.q.off)))
	o := b.reg(rU64)
	b.ins("cvt.u64.u32", o, a.reg(off))
	qb.ptr = b.reg(rU64)
	b.ins("add.s64", qb.ptr, sd.base, o)
}

// quantIssue copies k step k0's bytes of the B tile into buffer buf and advances the pointer.
// Chunks past q's rows or past K are zero-filled (cp.async with 0 source bytes).
func (mm *matmul) quantIssue(sd *mmaSide, k0, buf, tid, n0 string) {
	b, a, qb := mm.e.b, mm.a, sd.q
	perRow := qb.kb / qb.chunk
	total := mmBM * perRow // copies per step
	kc := a.add(a.div(a.mul(k0, qb.bits), 8), qb.col0)
	bufBase := a.add(a.mad(buf, sd.bufBytes, sd.sh), a.mad(qb.row0, qb.rowB, qb.col0))
	rows := a.add(n0, qb.row0)
	for i := 0; i*mmThreads < total; i++ {
		dr := i * mmThreads / perRow
		ok := b.reg(rPred)
		b.ins("setp.lt.s32", ok, a.reg(rows), imm(mm.N-dr))
		okK := b.reg(rPred)
		b.ins("setp.lt.s32", okK, a.reg(kc), imm(qb.q.k))
		b.ins("and.pred", ok, ok, okK)
		src := b.reg(rU64)
		b.ins("add.s64", src, qb.ptr, imm(dr*qb.q.freeSt))
		b.ins("selp.b64", src, src, sd.base, ok)
		dst := fmt.Sprintf("[%s+%d]", bufBase, dr*qb.rowB)
		skip := ""
		if total < mmThreads*(i+1) {
			// Fewer copies than threads (int4 by 16 bytes): the others would write past the rows.
			skip = b.label("no_copy")
			okT := b.reg(rPred)
			b.ins("setp.lt.u32", okT, tid, imm(total-i*mmThreads))
			b.braIf("!"+okT, skip)
		}
		if qb.chunk == 1 {
			r := b.reg(rU32)
			b.ins("mov.u32", r, "0")
			b.guarded(ok, "ld.global.u8", r, "["+src+"]")
			b.ins("st.shared.u8", dst, r)
		} else {
			n := b.reg(rU32)
			b.ins("selp.b32", n, imm(qb.chunk), "0", ok)
			kind := "ca"
			if qb.chunk == 16 {
				kind = "cg"
			}
			b.ins("cp.async."+kind+".shared.global", dst, "["+src+"]", imm(qb.chunk), n)
		}
		if skip != "" {
			b.place(skip)
		}
	}
	b.ins("add.s64", qb.ptr, qb.ptr, imm(qb.kb))
}

// quantFragInit computes the thread's fragment address (column wn·8·nI + g of the tile, byte 2t
// or t of its row) and, for one group per row, loads the scales and zero points of its nI
// columns before the k loop.
func (mm *matmul) quantFragInit(sd *mmaSide, lane, wn, n0 string, nI int) error {
	a, qb := mm.a, sd.q
	g, t := a.div(lane, 4), a.rem(lane, 4)
	col := a.add(a.mul(wn, 8*nI), g)
	qb.frag = a.reg(a.add(sd.sh, a.add(a.mul(col, qb.rowB), a.mul(t, qb.bits/4))))
	if qb.group < mm.K {
		return nil
	}
	for ni := range nI {
		s, z, err := mm.quantScale(a.add(a.add(n0, col), imm(8*ni)), "0")
		if err != nil {
			return err
		}
		qb.hoisted = append(qb.hoisted, [2]string{s, z})
	}
	return nil
}

// quantScale loads the scale and the biased zero point of column n (clamped into the weight)
// and group grp: for the f32 route the f32 scale and 2²³ (+ 128 for i8) + zero; for the f16x2
// route (quantB.halves) both as f16 pairs, the zero biased by 1024 (+ 128), exact in f16.
func (mm *matmul) quantScale(n, grp string) (scale, zmagic string, err error) {
	b, dq := mm.e.b, mm.quant.dq
	mm.reset()
	at := []string{mm.a.clamp(n, mm.N), grp}
	sv, err := mm.eval(dq.Args[1], newIndexCoords(dq.Args[1].Type.Shape, at))
	if err != nil {
		return "", "", err
	}
	scale = mm.e.reg(mm.e.cast(sv, ir.F32))
	bias := 1 << 23
	if mm.quant.halves() {
		bias = 1024
	}
	if dq.Args[0].Type.DType == ir.I8 {
		bias += 128
	}
	if zmagic, err = mm.biasedZero(dq, at, bias); err != nil || !mm.quant.halves() {
		return scale, zmagic, err
	}
	pair := func(f32 string) string {
		h := b.reg(rB16)
		b.ins("cvt.rn.f16.f32", h, f32) // an f16 value: exact
		p := b.reg(rU32)
		b.ins("mov.b32", p, "{"+h+", "+h+"}")
		return p
	}
	return pair(scale), pair(zmagic), nil
}

// halves reports whether the fragments dequantize in f16x2 registers (quantVectorF16's trick):
// a dequantize of f16 scales, whose single rounding mul.rn.f16x2 makes, with K a whole number
// of k steps (no k of a step to zero).
func (qb *quantB) halves() bool {
	return qb.dq.Type.DType == ir.F16 && qb.out == ir.F16 && qb.k%mmaBK == 0
}

// quantFrags forms the B fragments of k slab ks (0 or 16 of the step) in buffer cur: for each
// pair of column tiles (2nj, 2nj+1), registers in ldmatrix.x4's order (k half j%2, tile
// 2nj + j/2). scales holds the (scale, zmagic) of each of the thread's nI columns for the slab.
func (mm *matmul) quantFrags(sd *mmaSide, cur string, ks, nI int, scales [][2]string, kOK [][2]string) [][]string {
	b, a, qb := mm.e.b, mm.a, sd.q
	base := a.reg(a.mad(cur, sd.bufBytes, qb.frag))
	signed := qb.dq.Args[0].Type.DType == ir.I8
	cvt := "cvt.rn.f16x2.f32"
	if qb.out == ir.BF16 {
		cvt = "cvt.rn.bf16x2.f32"
	}
	bf := make([][]string, nI/2)
	for nj := range bf {
		bf[nj] = make([]string, 4)
		for j := range 4 {
			ni, h := 2*nj+j/2, j%2
			off := ni*8*qb.rowB + (ks+8*h)*qb.bits/8
			r := b.reg(rU32)
			if qb.bits == 8 {
				b.ins("ld.shared.u16", r, fmt.Sprintf("[%s+%d]", base, off))
			} else {
				b.ins("ld.shared.u8", r, fmt.Sprintf("[%s+%d]", base, off))
			}
			if qb.halves() {
				bf[nj][j] = mm.quantPair(r, signed, scales[ni])
				continue
			}
			var fs [2]string
			for e := range 2 {
				u := b.reg(rU32)
				b.ins("bfe.u32", u, r, imm(e*qb.bits), imm(qb.bits))
				if signed {
					b.ins("xor.b32", u, u, "128")
				}
				b.ins("or.b32", u, u, "0x4B000000")
				f := b.reg(rF32)
				b.ins("mov.b32", f, u)
				b.ins("sub.f32", f, f, scales[ni][1])
				b.ins("mul.rn.f32", f, f, scales[ni][0])
				if kOK != nil {
					b.ins("selp.f32", f, f, immF32(0), kOK[h][e])
				}
				fs[e] = f
			}
			p := b.reg(rU32)
			b.ins(cvt, p, fs[1], fs[0]) // the even k in the lower half
			bf[nj][j] = p
		}
	}
	return bf
}

// quantPair dequantizes the two fields of r (the even k in the low bits) into an f16x2
// register: the fields moved to bits 0 and 16 (int4: the byte or'ed with itself shifted by
// 12; int8: prmt, and i8 flipped to q + 128), or'ed into the mantissas of two 1024s (1024 + u
// is exact), minus the pair 1024 (+ 128) + zero, which leaves u − zero exactly, times the
// scale pair by mul.rn.f16x2: the one rounding of dequantize's product to f16.
func (mm *matmul) quantPair(r string, signed bool, sc [2]string) string {
	b, qb := mm.e.b, mm.quant
	t := b.reg(rU32)
	mask := "0x00FF00FF"
	if qb.bits == 4 {
		b.ins("shl.b32", t, r, "12")
		b.ins("or.b32", t, t, r)
		mask = "0x000F000F"
	} else {
		b.ins("prmt.b32", t, r, "0", "0x4140")
		if signed {
			b.ins("xor.b32", t, t, "0x00800080")
		}
	}
	b.ins("lop3.b32", t, t, mask, "0x64006400", "0xEA") // (t & mask) | 0x64006400
	b.ins("sub.rn.f16x2", t, t, sc[1])
	b.ins("mul.rn.f16x2", t, t, sc[0])
	return t
}

// quantStep loads, at the top of a k step's compute, what quantFrags needs per slab: the
// scales of each column (per step or per slab by the group size) and, where K is ragged,
// whether each of the thread's k is inside it.
func (mm *matmul) quantStep(sd *mmaSide, lane, wn, n0 string, nI, bk int) (func(ks int) ([][2]string, [][2]string, error), error) {
	b, a, qb := mm.e.b, mm.a, sd.q
	k0 := a.mul(qb.kt, bk)
	col := a.add(a.add(n0, a.mul(wn, 8*nI)), a.div(lane, 4))
	groups := mm.K / qb.group
	load := func(ks int) ([][2]string, error) {
		if qb.hoisted != nil {
			return qb.hoisted, nil
		}
		grp := b.reg(rU32)
		b.ins("div.u32", grp, a.reg(a.add(k0, imm(ks))), imm(qb.group))
		b.ins("min.u32", grp, grp, imm(groups-1))
		var out [][2]string
		for ni := range nI {
			s, z, err := mm.quantScale(a.add(col, imm(8*ni)), grp)
			if err != nil {
				return nil, err
			}
			out = append(out, [2]string{s, z})
		}
		return out, nil
	}
	var perStep [][2]string
	switch {
	case qb.hoisted == nil && qb.group%bk == 0 && qb.group > bk:
		// Groups of several steps: the registers carried across steps are reloaded on a
		// group's first step only.
		if qb.carried == nil {
			kind := rF32
			if qb.halves() {
				kind = rU32 // f16x2 pairs
			}
			for range nI {
				qb.carried = append(qb.carried, [2]string{b.reg(kind), b.reg(kind)})
			}
		}
		keep := b.reg(rPred)
		b.ins("setp.ne.u32", keep, a.reg(a.rem(qb.kt, qb.group/bk)), "0")
		same := b.label("same_group")
		b.braIf(keep, same)
		loaded, err := load(0)
		if err != nil {
			return nil, err
		}
		for ni, c := range qb.carried {
			b.ins("mov.b32", c[0], loaded[ni][0])
			b.ins("mov.b32", c[1], loaded[ni][1])
		}
		b.place(same)
		perStep = qb.carried
	case qb.hoisted == nil && qb.group%bk == 0:
		var err error
		if perStep, err = load(0); err != nil {
			return nil, err
		}
	}
	kt2 := a.reg(a.add(k0, a.mul(a.rem(lane, 4), 2)))
	return func(ks int) ([][2]string, [][2]string, error) {
		var kOK [][2]string
		if mm.K%bk != 0 {
			kOK = make([][2]string, 2)
			for h := range 2 {
				for e := range 2 {
					p := b.reg(rPred)
					b.ins("setp.lt.s32", p, kt2, imm(mm.K-(ks+8*h+e)))
					kOK[h][e] = p
				}
			}
		}
		if perStep != nil {
			return perStep, kOK, nil
		}
		s, err := load(ks)
		return s, kOK, err
	}, nil
}
