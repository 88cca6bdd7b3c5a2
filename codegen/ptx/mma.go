package ptx

import (
	"fmt"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
)

// The tensor-core matmul template: f16/bf16 through mma.sync.m16n8k16, f32 with --tf32
// through mma.sync.m16n8k8.tf32 (operands rounded to tf32 with cvt.rna), and fp8 on sm_89/sm_90
// through mma.sync.m16n8k32 .e4m3/.e5m2 (mma_fp8.go), f32 accumulators.
//
// A block computes a 128×128 tile with 8 warps in a 2×4 grid, each warp a 64×32 tile: 4×4
// mma tiles of 16×8, 64 f32 accumulators per thread. K advances in steps of 32 through two
// shared buffers filled by 16-byte cp.async copies (4-byte ones when a contiguous dim is not a
// multiple of 8). Fragments come from shared memory with ldmatrix (.trans where an operand is
// stored free-dim contiguous); shared rows are padded by 16 bytes, so the 8 row addresses of each
// ldmatrix phase fall in 8 different 16-byte bank groups: no bank conflicts.
//
// A conv2d of at most 64 output channels per group takes a narrow tile instead (mmaWarps): the
// 8 warps stacked over the 128 rows, each 16 rows × TileN (16, 32 or 64) columns, so no mma
// issues on the columns past TileN that the 128-wide tile would multiply by zero weights.
const (
	mmaBK   = 32 // k elements per step for 16-bit operands (64 bytes; tf32 steps 16)
	mmaPadH = 8  // halves of padding per shared row (16 bytes)
)

// mmaShape is what differs between 16-bit, tf32 and fp8 operands; tiles are laid out in bytes alike.
type mmaShape struct {
	eb    int // element bytes
	bk    int // k elements per pipeline step (64 bytes)
	pad   int // padding elements per shared row (16 bytes)
	kStep int // k of one mma
	inst  string
}

func mmaShapeOf(d ir.DType) mmaShape {
	if d == ir.F32 {
		return mmaShape{4, 16, 4, 8, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"}
	}
	t := halfName(d)
	return mmaShape{2, mmaBK, mmaPadH, 16, "mma.sync.aligned.m16n8k16.row.col.f32." + t + "." + t + ".f32"}
}

// tf32Eligible reports whether an f32 product can take the tf32 tensor-core path: each
// operand a strided view with a contiguous dim, read through views that are not strided, or
// conv2d's image. A k-contiguous operand's fragments load with ldmatrix; a free-contiguous one
// (B stored [K,N], A stored [K,M], conv2d's image) with one ld.shared.b32 per fragment
// register, since ldmatrix cannot transpose 32-bit elements.
func (mm *matmul) tf32Eligible() bool { return mm.tf32Fallback() == "" }

// tf32Fallback says why an f32 contraction does not take the tf32 path ("" when it does).
func (mm *matmul) tf32Fallback() string {
	ok := func(l operandLayout) bool { return l.view != nil || l.kSt == 1 || l.freeSt == 1 }
	if !ok(mm.rhs) || mm.conv == nil && !ok(mm.lhs) {
		return "an operand has no contiguous dim"
	}
	return ""
}

// mmaWarps is the tensor-core tile's warp grid for a tile TileN = 16·rn columns wide: wn warps
// across the columns (8/wn down the rows) and each warp's mi×ni mma tiles of 16×8. The
// 128-wide tile is 2×4 warps of 4×4; a narrow one 8×1 warps of 1×(TileN/8).
func mmaWarps(rn int) (wn, mi, ni int) {
	if rn == 8 {
		return 4, 4, 4
	}
	return 1, 1, 2 * rn
}

// mmaSides decides each operand's shared layout and copies (ms's element size and k step).
func (mm *matmul) mmaSides(ms mmaShape) ([]*mmaSide, error) {
	d := mm.dot.Args[0].Type.DType
	if d.IsFP8() {
		d = mm.dot.Type.DType // fp8 operands make an f16 product
	}
	eb, bk := ms.eb, ms.bk
	sides := []*mmaSide{{l: mm.lhs}, {l: mm.rhs}}
	for i, sd := range sides {
		if i == 1 && mm.quant != nil {
			mm.quantSide(sd)
			continue
		}
		// conv2d's image side is the implicit im2col matrix, stored [k][pixel] (pixels are what lie
		// close together in the image); a generic operand runs along its last dim.
		conv := i == 0 && mm.conv != nil
		sd.kContig = !conv && sd.l.kSt == 1
		if !conv && !sd.kContig && sd.l.freeSt != 1 {
			return nil, fmt.Errorf("%s matmul operand %d has no contiguous dim", d, i)
		}
		free := mmBM
		if sd.kContig {
			sd.rowH = bk + ms.pad
			sd.bufBytes = free * sd.rowH * eb
		} else if eb == 4 {
			// tf32 [k][free] rows, read one word per fragment register: lanes (g, t) read word
			// t·rowH + g, and rows of 136 words put the 4 values of t 8 banks apart.
			sd.rowH = free + 8
			sd.bufBytes = bk * sd.rowH * eb
		} else {
			sd.rowH = free + ms.pad
			sd.bufBytes = bk * sd.rowH * eb
			if eb == 1 {
				sd.rowPad = fp8RowPad
				sd.bufBytes += fp8RowPad * bk / 8
			}
		}
		if conv || sd.l.view != nil {
			// Element copies whose addresses copyAt computes: 4-byte ones by cp.async, 2-byte and
			// 1-byte ones by ld.global and st.shared; a generic side whose views align 16-byte
			// chunks copies those instead (symChunks, symchunk.go).
			sd.chunk, sd.elem = 1, eb != 4
			continue
		}
		contig := mm.K
		nFree := mm.M
		if i == 1 {
			nFree = mm.N
		}
		if !sd.kContig {
			contig = nFree
		}
		// A chunk must start 16 (or 4) bytes aligned wherever it lies: the view's offset and every
		// stride but the contiguous one must be multiples of it too.
		aligned := func(n int) bool {
			if contig%n != 0 || sd.l.off%n != 0 {
				return false
			}
			for _, st := range append([]int{sd.l.freeSt, sd.l.kSt}, sd.l.batchStrides...) {
				if st != 1 && st%n != 0 {
					return false
				}
			}
			return true
		}
		switch {
		case aligned(16 / eb):
			sd.chunk = 16 / eb
		case aligned(4 / eb):
			sd.chunk = 4 / eb
		default: // 16-bit or fp8 elements of a contiguous dim no chunk divides
			sd.chunk, sd.elem = 1, true
		}
		if i == 1 && sd.kContig && mm.rn < 8 {
			// A narrow tile's B rows: its TileN, or the rows one copy of all threads fills.
			sd.bufBytes = max(16*mm.rn, mmThreads*sd.chunk/bk) * sd.rowH * eb
		}
	}
	return sides, nil
}

// copies is a side's copy map for k steps of bk: a row of the tile (a free row when k is
// contiguous, else a k row) is perRow chunks; copy i of a thread sits (df[i], dk[i]) from its
// first. A side whose tile uses only its first rows free rows (a narrow tile's B) skips the
// copies that start past them; its buffer holds the rows the first copy fills, zeros past
// rows included (mmaSides).
func (sd *mmaSide) copies(bk, rows int) (perRow int, df, dk []int) {
	per := mmBM * bk / sd.chunk / mmThreads
	if sd.kContig {
		perRow = bk / sd.chunk
		for i := range per {
			if i*mmThreads/perRow < rows {
				df, dk = append(df, i*mmThreads/perRow), append(dk, 0)
			}
		}
		return perRow, df, dk
	}
	perRow = mmBM / sd.chunk
	for i := range per {
		df, dk = append(df, 0), append(dk, i*mmThreads/perRow)
	}
	return perRow, df, dk
}

// mmaStaged reports whether the epilogue stages accumulators through shared memory.
func (mm *matmul) mmaStaged() bool {
	return mm.conv == nil && mm.colGroups(4) && len(mm.batchShape)+2 == mm.dot.Type.Shape.Rank() ||
		mm.conv != nil && (mm.conv.oh*mm.conv.ow%4 == 0 || mm.conv.pool != nil)
}

// mmaSide is one operand's tile in shared memory.
type mmaSide struct {
	l        operandLayout
	kContig  bool // stored [free][k] (else [k][free], read with ldmatrix.trans)
	rowH     int  // halves per shared row, padding included
	bufBytes int
	chunk    int // elements per cp.async (8 or 2), 1 for element copies
	// elem: 16-bit elements are copied one at a time with ld.global.u16 and st.shared.u16 (a
	// contiguous dim that is odd, conv2d's implicit im2col side or a generic operand, whose
	// elements have no contiguous runs cp.async could move: cp.async copies at least 4 bytes).
	// tf32 element copies are 4-byte cp.async.
	elem bool
	// rowPad: bytes of padding after every 8 k rows of a side stored [k][free] (fp8's, rowAt).
	rowPad int
	// copyAt, if set, gives the source address and validity of copy i at k step k0 (conv2d's
	// image side, a generic operand).
	copyAt func(k0 string, i int) (src, ok string)
	q      *quantB // set for a quantized weight's byte tile (mma_dequant.go)
	sh     string
	base   string // global address of the operand (batch offset applied)
}

func (mm *matmul) emitMMA() error {
	b, a := mm.e.b, mm.a
	ms := mm.mmaShape()
	eb, bk := ms.eb, ms.bk
	sides, err := mm.mmaSides(ms)
	if err != nil {
		return err
	}
	// The epilogue stages accumulators through tileA once the main loop is done with it.
	staged := mm.mmaStaged()
	aBytes := 2 * sides[0].bufBytes
	if staged || mm.symStages() {
		aBytes = max(aBytes, mmThreads/32*stageWarpBytes)
	}
	sA := b.sharedArray("tileA", aBytes, 16)
	sB := b.sharedArray("tileB", 2*sides[1].bufBytes, 16)
	tid, bx, by, bz := b.reg(rU32), b.reg(rU32), b.reg(rU32), b.reg(rU32)
	b.ins("mov.u32", tid, "%tid.x")
	b.ins("mov.u32", bx, "%ctaid.x")
	b.ins("mov.u32", by, "%ctaid.y")
	b.ins("mov.u32", bz, "%ctaid.z")
	lane, warp := b.reg(rU32), b.reg(rU32)
	b.ins("and.b32", lane, tid, "31")
	b.ins("shr.u32", warp, tid, "5")
	m0, n0 := a.mul(by, mmBM), a.mul(bx, 16*mm.rn)
	wgN, mI, nI := mmaWarps(mm.rn)
	bidx := mm.batchIndex(bz)
	offs := []string{"0", "0"}
	for i := range mm.batchShape {
		c := bidx.getCoord(a, i)
		for si, sd := range sides {
			if sd.l.view == nil { // generic operands address their batch themselves
				offs[si] = mm.batchOffset(si, i, c, offs[si])
			}
		}
	}
	offs[0], offs[1] = a.add(offs[0], imm(mm.lhs.off)), a.add(offs[1], imm(mm.rhs.off))
	for i, sd := range sides {
		if sd.l.view != nil {
			// A generic operand's copies address their own buffer: any valid address does here.
			sd.base = mm.ptr[mm.kernelGraph.Inputs()[0]]
		} else if sd.q != nil {
			sd.base = mm.ptr[sd.l.v] // addressed in bytes by quantCopyInit
		} else if sd.base = mm.ptr[sd.l.v]; offs[i] != "0" {
			sd.base = mm.scaledAddr(sd.base, offs[i], eb)
		}
		sd.sh = b.reg(rU32)
	}
	b.ins("mov.u32", sides[0].sh, sA)
	b.ins("mov.u32", sides[1].sh, sB)
	f0s := []string{m0, n0}
	nFrees := []int{mm.M, mm.N}

	// Copy map: copy i of a thread sits at constant distances (df, dk) from its first one (f0,
	// kq), so a pointer, a shared offset and the first coordinates are all that stay live.
	type copyMap struct {
		f0, kq, sh0 string
		df, dk      []int
		ptr         string
	}
	// mapOf lays out side si's copies: each thread's first copy, its shared offset and, for a
	// strided operand, its pointer.
	mapOf := func(si int, sd *mmaSide) copyMap {
		var cm copyMap
		var fl string
		var perRow int
		perRow, cm.df, cm.dk = sd.copies(bk, []int{mmBM, 16 * mm.rn}[si])
		if sd.kContig {
			fl, cm.kq = a.div(tid, perRow), a.mul(a.rem(tid, perRow), sd.chunk)
			cm.sh0 = a.add(sd.sh, a.mul(a.mad(fl, sd.rowH, cm.kq), eb))
		} else {
			cm.kq, fl = a.div(tid, perRow), a.mul(a.rem(tid, perRow), sd.chunk)
			cm.sh0 = a.add(sd.sh, a.mul(a.mad(cm.kq, sd.rowH, fl), eb))
			if sd.rowPad != 0 {
				cm.sh0 = a.add(cm.sh0, a.mul(a.div(cm.kq, 8), sd.rowPad))
			}
		}
		cm.f0 = a.add(f0s[si], fl)
		if si == 0 && mm.conv != nil {
			sd.copyAt = mm.conv.copier(mm, cm.f0, cm.kq, cm.dk, sd.base, eb)
			return cm
		}
		if sd.l.view != nil {
			sd.copyAt = mm.genericCopier(sd.l, cm.f0, cm.kq, cm.df, cm.dk, nFrees[si], bidx, eb, sd.chunk)
			return cm
		}
		off := a.mad(a.clamp(cm.f0, nFrees[si]), sd.l.freeSt, a.mul(cm.kq, sd.l.kSt))
		cm.ptr = b.reg(rU64)
		o := b.reg(rU64)
		b.ins("mul.wide.u32", o, a.reg(off), imm(eb))
		b.ins("add.s64", cm.ptr, sd.base, o)
		return cm
	}
	// A generic side copies 16-byte chunks where its views (a symbolic kernel: the run's sizes)
	// allow (symchunk.go): always, or taking them or the element copies by a uniform branch.
	fast := mm.symChunks(sides, eb)
	maps := make([]copyMap, 2)
	fastMaps := make([]copyMap, 2)
	for si, sd := range sides {
		if sd.q != nil {
			mm.quantCopyInit(sd, tid, n0)
			continue
		}
		maps[si] = mapOf(si, sd)
		if f := fast[si]; f != nil {
			fastMaps[si] = mapOf(si, f.sd)
		}
	}

	// issueSide issues side sd's copies (map cm) of k step k0 into buffer buf, then advances its
	// pointer.
	issueSide := func(si int, sd *mmaSide, cm copyMap, k0, buf string) {
		bufBase := a.mad(buf, sd.bufBytes, cm.sh0)
		kc := a.add(k0, cm.kq)
		for i := range cm.df {
			var src, ok string
			if sd.copyAt != nil {
				src, ok = sd.copyAt(k0, i)
			} else {
				ok = b.reg(rPred)
				b.ins("setp.lt.s32", ok, a.reg(cm.f0), mm.freeBelow(si == 0, nFrees[si], cm.df[i]))
				okK := b.reg(rPred)
				b.ins("setp.lt.s32", okK, a.reg(kc), mm.kBelow(cm.dk[i]))
				b.ins("and.pred", ok, ok, okK)
				src = b.reg(rU64)
				b.ins("add.s64", src, cm.ptr, imm(eb*(cm.df[i]*sd.l.freeSt+cm.dk[i]*sd.l.kSt)))
				b.ins("selp.b64", src, src, sd.base, ok)
			}
			var shOff int
			if sd.kContig {
				shOff = eb * (cm.df[i] * sd.rowH)
			} else {
				shOff = sd.rowAt(cm.dk[i], eb)
			}
			dst := fmt.Sprintf("[%s+%d]", bufBase, shOff)
			if sd.elem {
				// Zero outside the matrix (and in conv2d's padding), as cp.async zero-fills.
				r := b.reg(rU32)
				b.ins("mov.u32", r, "0")
				b.guarded(ok, fmt.Sprintf("ld.global.u%d", 8*eb), r, "["+src+"]")
				b.ins(fmt.Sprintf("st.shared.u%d", 8*eb), dst, r)
				continue
			}
			n := b.reg(rU32)
			b.ins("selp.b32", n, imm(eb*sd.chunk), "0", ok)
			kind := "ca"
			if eb*sd.chunk == 16 {
				kind = "cg" // 16-byte copies bypass L1
			}
			b.ins("cp.async."+kind+".shared.global", dst, "["+src+"]", imm(eb*sd.chunk), n)
		}
		if sd.copyAt == nil {
			b.ins("add.s64", cm.ptr, cm.ptr, imm(eb*bk*sd.l.kSt))
		}
	}
	// issue copies k step k0 of both operands into buffer buf.
	issue := func(k0, buf string) {
		for si, sd := range sides {
			switch f := fast[si]; {
			case sd.q != nil:
				mm.quantIssue(sd, k0, buf, tid, n0)
			case f != nil:
				elems, done := b.label("elem_copies"), b.label("copies_done")
				b.braIf("!"+f.when, elems)
				issueSide(si, f.sd, fastMaps[si], k0, buf)
				b.bra(done)
				b.place(elems)
				issueSide(si, sd, maps[si], k0, buf)
				b.place(done)
			default:
				issueSide(si, sd, maps[si], k0, buf)
			}
		}
		b.ins("cp.async.commit_group")
	}

	// Per-lane ldmatrix addresses (byte offsets in buffer 0). Lane l serves matrix q = l/8,
	// row r = l%8. A's four matrices of a 16×16 fragment are (m, k) = (0,0), (8,0), (0,8), (8,8);
	// B's x4 loads two 8-column tiles: (n, k) = (0,0), (0,8), (8,0), (8,8).
	q, r := a.div(lane, 8), a.rem(lane, 8)
	wm, wn := a.div(warp, wgN), a.rem(warp, wgN)
	frag := func(sd *mmaSide, freeOff, kOff string) string {
		if sd.kContig {
			return a.mul(a.mad(a.add(freeOff, r), sd.rowH, kOff), eb)
		}
		return a.mul(a.mad(a.add(kOff, r), sd.rowH, freeOff), eb)
	}
	aFree := a.add(a.mul(wm, 16*mI), a.mul(a.rem(q, 2), 8))
	aK := a.mul(a.div(q, 2), 16/eb) // the second 16 bytes of k
	bFree := a.add(a.mul(wn, 8*nI), a.mul(a.div(q, 2), 8))
	bK := a.mul(a.rem(q, 2), 16/eb)
	aAddr := a.add(sides[0].sh, frag(sides[0], aFree, aK))
	bAddr := a.add(sides[1].sh, frag(sides[1], bFree, bK))
	// A tf32 operand stored [k][free]: lane (g, t) = (lane/4, lane%4) holds fragment elements
	// (free g or g+8, k t or t+4); its base is word t·rowH + g of the warp's columns. An fp8 one
	// holds bytes k 4t…4t+3 (or 16 on) of free g or g+8; its base is byte 4t·rowH + g.
	g, tg := a.div(lane, 4), a.rem(lane, 4)
	wordFrag := func(sd *mmaSide, warpFree string) string {
		at := a.add(sd.sh, a.mul(a.mad(a.mul(tg, 4/eb), sd.rowH, a.add(warpFree, g)), eb))
		if sd.rowPad != 0 { // rows 4t lie past t/2 groups of 8
			at = a.add(at, a.mul(a.div(tg, 2), sd.rowPad))
		}
		return at
	}
	if eb != 2 && !sides[0].kContig {
		aAddr = wordFrag(sides[0], a.mul(wm, 16*mI))
	}
	if eb != 2 && !sides[1].kContig {
		bAddr = wordFrag(sides[1], a.mul(wn, 8*nI))
	}
	// loadFrag loads the four registers of one x4 fragment: with ldmatrix, or for a tf32 side
	// stored [k][free] with four ld.shared.b32 at (k, free) offsets kOff(j), fOff(j) from base
	// (an fp8 side: four bytes down k each, gatherFP8).
	loadFrag := func(sd *mmaSide, regs []string, base string, off int, kOff, fOff func(j int) int) {
		if eb == 1 && !sd.kContig {
			for j, r := range regs {
				mm.gatherFP8(r, base, off+sd.rowAt(kOff(j), eb)+fOff(j), sd.rowH)
			}
			return
		}
		if eb == 4 && !sd.kContig {
			for j, r := range regs {
				b.ins("ld.shared.b32", r, fmt.Sprintf("[%s+%d]", base, off+eb*(kOff(j)*sd.rowH+fOff(j))))
			}
			return
		}
		b.ins(ldmatrix(!sd.kContig), "{"+joinRegs(regs)+"}", fmt.Sprintf("[%s+%d]", base, off))
	}

	if sides[1].q != nil {
		if err := mm.quantFragInit(sides[1], lane, wn, n0, nI); err != nil {
			return err
		}
	}
	acc := make([]string, 4*mI*nI) // [mi][ni][4]
	for i := range acc {
		acc[i] = b.reg(rF32)
		b.ins("mov.f32", acc[i], immF32(0))
	}
	// tf32 fragments are f32 images: round them to tf32 (nearest, ties away) in place.
	toTF32 := func(regs []string) {
		if eb != 4 {
			return
		}
		for _, r := range regs {
			f := b.reg(rF32)
			b.ins("mov.b32", f, r)
			b.ins("cvt.rna.tf32.f32", r, f)
		}
	}
	compute := func(cur string) error {
		ab := a.mad(cur, sides[0].bufBytes, aAddr)
		bb := a.mad(cur, sides[1].bufBytes, bAddr)
		kHalf := ms.kStep / 2 // a fragment register's second k half (tf32, fp8)
		var quantSlab func(ks int) ([][2]string, [][2]string, error)
		nB := nI / 2 // B fragments ldmatrix loads (none for a quantized B, mma_dequant.go)
		if sides[1].q != nil {
			var err error
			if quantSlab, err = mm.quantStep(sides[1], lane, wn, n0, nI, bk); err != nil {
				return err
			}
			nB = 0
		}
		for ks := 0; ks < bk; ks += ms.kStep {
			// B's fragments for the warp's column tiles first, then A's one row tile at a
			// time, so only 12 fragment registers are live beside the 64 accumulators (of the
			// 128-wide tile).
			bf := make([][]string, nI/2)
			if quantSlab != nil {
				scales, kOK, err := quantSlab(ks)
				if err != nil {
					return err
				}
				bf = mm.quantFrags(sides[1], cur, ks, nI, scales, kOK)
			}
			for nj := range nB {
				bf[nj] = []string{b.reg(rU32), b.reg(rU32), b.reg(rU32), b.reg(rU32)}
				off := eb * (nj*16*sides[1].rowH + ks)
				if !sides[1].kContig {
					off = sides[1].rowAt(ks, eb) + eb*nj*16
				}
				// B registers j: k half j%2, column tile j/2 (b0, b1 of tile 2nj, then of 2nj+1).
				loadFrag(sides[1], bf[nj], bb, off, func(j int) int { return kHalf * (j % 2) }, func(j int) int { return 8 * (j / 2) })
				toTF32(bf[nj])
			}
			for mi := range mI {
				af := []string{b.reg(rU32), b.reg(rU32), b.reg(rU32), b.reg(rU32)}
				off := eb * (mi*16*sides[0].rowH + ks)
				if !sides[0].kContig {
					off = sides[0].rowAt(ks, eb) + eb*mi*16
				}
				// A registers j: rows g or g+8 (j%2), k t or t+4 (j/2).
				loadFrag(sides[0], af, ab, off, func(j int) int { return kHalf * (j / 2) }, func(j int) int { return 8 * (j % 2) })
				toTF32(af)
				for ni := range nI {
					bfr := bf[ni/2][2*(ni%2) : 2*(ni%2)+2]
					c := acc[(mi*nI+ni)*4 : (mi*nI+ni)*4+4]
					b.ins(ms.inst,
						"{"+joinRegs(c)+"}", "{"+joinRegs(af)+"}", "{"+joinRegs(bfr)+"}", "{"+joinRegs(c)+"}")
				}
			}
		}
		return nil
	}

	nk := mm.kSteps(bk)
	issue("0", "0")
	b.ins("cp.async.wait_group", "0")
	b.ins("bar.sync", "0")
	kt := b.reg(rU32)
	b.ins("mov.u32", kt, "0")
	if sides[1].q != nil {
		sides[1].q.kt = kt
	}
	loop, done := b.label("k_loop"), b.label("k_done")
	b.place(loop)
	b.ins(`.pragma "nounroll"`) // unrolled copies of the pipeline overflow 128 registers
	p := b.reg(rPred)
	b.ins("setp.ge.u32", p, kt, nk)
	b.braIf(p, done)
	cur := b.reg(rU32)
	b.ins("and.b32", cur, kt, "1")
	next := b.reg(rU32)
	b.ins("add.s32", next, kt, "1")
	more := b.reg(rPred)
	b.ins("setp.lt.u32", more, next, nk)
	skip := b.label("no_prefetch")
	b.braIf("!"+more, skip)
	nbuf := b.reg(rU32)
	b.ins("xor.b32", nbuf, cur, "1")
	issue(a.mul(next, bk), nbuf)
	b.place(skip)
	if err := compute(cur); err != nil {
		return err
	}
	b.ins("cp.async.wait_group", "0")
	b.ins("bar.sync", "0")
	b.ins("add.s32", kt, kt, "1")
	b.bra(loop)
	b.place(done)

	b.note("epilogue")
	if mm.symStages() { // groups of columns where the run's N allows (symcontract_rhs_store.go)
		return mm.symColsBranch(func() error {
			if mm.mmaStaged() {
				return mm.stagedEpilogue(acc, sides[0].sh, warp, lane, m0, n0, bz, bidx)
			}
			return mm.directEpilogue(acc, wm, wn, lane, m0, n0, bz, bidx)
		}, 4, 2)
	}
	if staged {
		return mm.stagedEpilogue(acc, sides[0].sh, warp, lane, m0, n0, bz, bidx)
	}
	return mm.directEpilogue(acc, wm, wn, lane, m0, n0, bz, bidx)
}

// directEpilogue stores each thread's accumulators from the mma fragments' registers.
func (mm *matmul) directEpilogue(acc []string, wm, wn, lane, m0, n0, bz string, bidx *index) error {
	a := mm.a
	_, mI, nI := mmaWarps(mm.rn)
	// Accumulator c of tile (mi, ni) is row lane/4 (+8 for c ≥ 2), column 2·(lane%4) + c%2 of
	// the tile.
	rowBase := a.add(a.add(m0, a.mul(wm, 16*mI)), a.div(lane, 4))
	colBase := a.add(a.add(n0, a.mul(wn, 8*nI)), a.mul(a.rem(lane, 4), 2))
	linBase := mm.outLin(bz, rowBase, colBase)
	var drs []int
	for mi := range mI {
		drs = append(drs, mi*16, mi*16+8)
	}
	defer mm.symElemBases(linBase, rowBase, colBase, drs)()
	for mi := range mI {
		for ni := range nI {
			// c0,c1 (and c2,c3) are adjacent columns: one paired store when they are adjacent in the result.
			w := 1
			if mm.colGroups(2) && len(mm.batchShape)+2 == mm.dot.Type.Shape.Rank() {
				w = 2
			}
			for c := 0; c < 4; c += w {
				dr, dc := mi*16+(c/2)*8, ni*8+c%2
				accs := make([]val, w)
				for l := range accs {
					accs[l] = val{ir.F32, acc[(mi*nI+ni)*4+c+l]}
				}
				if err := mm.element(rowBase, dr, colBase, dc, linBase, bidx, accs); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// The staged epilogue: a warp's 64×32 tile goes out 16 rows at a time through its own
// 16×32 f32 region of shared memory (rows padded to 40 floats). The mma layout gives a thread
// two adjacent columns of 8 rows, so direct stores of a 16-bit result write 4 bytes per thread
// and a warp's request covers 8 rows × 16 bytes: half of each 32-byte sector. Staged, a matmul
// thread takes 4 consecutive columns of one row and 8 threads a whole 32-column row: 16-bit
// results store 64 contiguous bytes per row (whole sectors), f32 ones 128. A conv2d's rows are
// pixels, contiguous in the NCHW output, so there a thread takes 4 consecutive rows of one
// column and 4 threads 16 pixels of an output channel (32 contiguous bytes of f16).
//
// Word (r, c) of the region sits at r·40 + (c XOR 8·(r/4 mod 4)): the swizzle moves each
// 8-column block by the row's quarter. Writes (st.shared.v2 of the fragment pairs: per
// half-warp 4 rows of one quarter × 8 words, rows 8 banks apart), matmul reads (ld.shared.v4:
// per quarter-warp the 32 words of one row) and conv reads (per warp rows k, k+4, k+8, k+12 ×
// 8 columns, whose blocks the swizzle spreads over all 32 banks) are free of bank conflicts.
// A narrow tile's warp (16 rows × TileN) goes out in passes of up to 32 columns alike: one
// pass of 16 or 32 columns, or two of 32.
const (
	stageRow       = plan.StageRow // floats per staged row
	stageWarpBytes = plan.StageWarpBytes
)

func (mm *matmul) stagedEpilogue(acc []string, sh, warp, lane, m0, n0, bz string, bidx *index) error {
	b, a := mm.e.b, mm.a
	stage := a.reg(a.add(sh, a.mul(warp, stageWarpBytes)))
	xor := func(x string, c int) string {
		r := b.reg(rU32)
		b.ins("xor.b32", r, a.reg(x), imm(c))
		return r
	}
	// Write addresses: fragment pair (ni, h) of a thread is row lane/4 + 8h, columns
	// ni·8 + 2·(lane%4) and the next; the row's quarter is (lane/16 + 2h) mod 4.
	var wAddr [4][2]string
	for h := range 2 {
		rowOff := a.add(stage, a.mul(a.mad(a.add(a.div(lane, 4), imm(8*h)), stageRow, a.mul(a.rem(lane, 4), 2)), 4))
		q := a.mul(a.rem(a.add(a.div(lane, 16), imm(2*h)), 4), 32) // the swizzle in bytes
		for ni := range 4 {
			wAddr[ni][h] = a.reg(a.add(rowOff, xor(q, ni*32)))
		}
	}
	wgN, mI, nI := mmaWarps(mm.rn)
	wm, wn := a.div(warp, wgN), a.rem(warp, wgN)
	var rowBase, colBase, linBase string
	if mm.conv == nil {
		rowBase = a.reg(a.add(a.add(m0, a.mul(wm, 16*mI)), a.div(lane, 8)))
		colBase = a.reg(a.add(a.add(n0, a.mul(wn, 8*nI)), a.mul(a.rem(lane, 8), 4)))
		linBase = a.reg(mm.outLin(bz, rowBase, colBase))
		defer mm.symElemBases(linBase, rowBase, colBase, nil)()
	} else {
		rowBase = a.reg(a.add(a.add(m0, a.mul(wm, 16*mI)), a.mul(a.rem(lane, 4), 4)))
		colBase = a.reg(a.add(a.add(n0, a.mul(wn, 8*nI)), a.div(lane, 4)))
	}
	for pass := range mI * ceilDiv(nI, 4) {
		// Pass (mi, c0): rows mi·16.. and column tiles c0..c0+nw-1 of the warp's part.
		mi, c0 := pass/ceilDiv(nI, 4), 4*(pass%ceilDiv(nI, 4))
		nw := min(4, nI-c0)
		for ni := range nw {
			for h := range 2 {
				c := (mi*nI+c0+ni)*4 + 2*h
				b.ins("st.shared.v2.f32", "["+wAddr[ni][h]+"]", "{"+acc[c]+", "+acc[c+1]+"}")
			}
		}
		b.ins("bar.sync", "0")
		reads := 4
		if mm.conv != nil {
			reads = nw // a conv2d thread reads column 8p + lane/4
		}
		for p := range reads {
			regs := []string{b.reg(rF32), b.reg(rF32), b.reg(rF32), b.reg(rF32)}
			accs := make([]val, 4)
			for l, r := range regs {
				accs[l] = val{ir.F32, r}
			}
			var err error
			if mm.conv == nil {
				// Row lane/8 + 4p (quarter p), columns 4·(lane%8).. of the row.
				col := xor(a.mul(a.rem(lane, 8), 16), 32*p)
				at := a.add(a.add(stage, a.mul(a.div(lane, 8), 4*stageRow)), col)
				b.ins("ld.shared.v4.f32", "{"+joinRegs(regs)+"}", fmt.Sprintf("[%s+%d]", at, 4*4*p*stageRow))
				err = mm.element(rowBase, mi*16+4*p, colBase, 0, linBase, bidx, accs)
			} else {
				// Rows 4·(lane%4) + k (quarter lane%4), column 8p + lane/4.
				blk := a.mul(xor(a.rem(lane, 4), p), 32)
				at := a.add(a.add(stage, a.mul(a.rem(lane, 4), 4*4*stageRow)), a.add(blk, a.mul(a.div(lane, 4), 4)))
				for k, r := range regs {
					b.ins("ld.shared.f32", r, fmt.Sprintf("[%s+%d]", at, 4*k*stageRow))
				}
				if mm.conv.pool != nil {
					col := a.add(colBase, imm(8*(c0+p)))
					err = mm.pooledRows(a.add(rowBase, imm(mi*16)), col, a.mad(bidx.getLin(a), mm.N, col), accs)
				} else {
					err = mm.element(rowBase, mi*16, colBase, 8*(c0+p), "0", bidx, accs)
				}
			}
			if err != nil {
				return err
			}
		}
		b.ins("bar.sync", "0") // the next rows overwrite the stage
	}
	return nil
}

func ldmatrix(trans bool) string {
	if trans {
		return "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
	}
	return "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
}

// scaledAddr is base + off·eb for an element offset of eb-byte elements.
func (mm *matmul) scaledAddr(base, off string, eb int) string {
	b := mm.e.b
	o := b.reg(rU64)
	b.ins("mul.wide.u32", o, mm.a.reg(off), imm(eb))
	r := b.reg(rU64)
	b.ins("add.s64", r, base, o)
	return r
}

// element runs the epilogue for GEMM element (rowBase+dr, colBase+dc) whose f32 accumulator is
// accv, guarded by the bounds, and stores every output. Offsets stay immediates, so the 64
// elements of a thread share three base registers.
func (mm *matmul) element(rowBase string, dr int, colBase string, dc int, linBase string, bidx *index, accs []val) error {
	b, a := mm.e.b, mm.a
	skip := b.label("skip")
	okm, okn, hoisted := mm.symElemChecks(linBase, rowBase, dr, dc)
	if !hoisted {
		okm, okn = b.reg(rPred), b.reg(rPred)
		b.ins("setp.lt.s32", okm, a.reg(rowBase), mm.freeBelow(true, mm.M, dr))
		b.ins("setp.lt.s32", okn, a.reg(colBase), mm.colsBelow(dc))
	}
	ok := b.reg(rPred)
	b.ins("and.pred", ok, okm, okn)
	b.braIf("!"+ok, skip)
	mm.reset()
	for l := range accs {
		accs[l] = mm.e.cast(accs[l], mm.dot.Type.DType)
	}
	row, col := a.add(rowBase, imm(dr)), a.add(colBase, imm(dc))
	shape := mm.dot.Type.Shape
	nb := len(mm.batchShape)
	lin := mm.outOffset(linBase, dr, dc)
	x := newIndexLin(shape, lin)
	if mm.conv != nil {
		// GEMM rows are pixels and columns output channels of the group (blockIdx.z).
		x, lin = mm.conv.outIndex(a, row, a.mad(bidx.getLin(a), mm.N, col))
	} else if mm.rowColShape() {
		for d := range nb {
			x.coord[d] = bidx.getCoord(a, d)
		}
		x.coord[nb], x.coord[nb+1] = row, col
		if shape[nb] == 1 {
			x.coord[nb] = "0"
		}
		if shape[nb+1] == 1 {
			x.coord[nb+1] = "0"
		}
	}
	// Several accumulators are a group of consecutive columns (consecutive pixels for conv2d),
	// stored together.
	lanes := []*index{x}
	switch {
	case len(accs) > 1 && mm.conv != nil:
		lanes = mm.conv.pixelLanes(a, x, row, a.mad(bidx.getLin(a), mm.N, col), len(accs))
	case len(accs) > 1:
		newGroup(a, x, len(accs), false)
		lanes = x.lanes
	}
	accOf := map[*index]val{}
	for l, xl := range lanes {
		accOf[xl] = accs[l]
	}
	mm.bound[mm.dot] = func(x *index) val { return accOf[x] }
	for oi, o := range mm.kernelGraph.Outputs {
		vals := make([]val, len(lanes))
		for l, xl := range lanes {
			v, err := mm.eval(o.Value, xl)
			if err != nil {
				return err
			}
			vals[l] = v
		}
		if len(vals) == 1 {
			mm.store(o.Value, mm.outPtr[oi], lin, vals[0])
		} else {
			mm.vectorStore(o.Value, mm.outPtr[oi], lin, vals)
		}
	}
	mm.reset()
	b.place(skip)
	return nil
}
