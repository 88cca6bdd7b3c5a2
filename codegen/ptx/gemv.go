package ptx

import (
	"fmt"
	"slices"

	"github.com/gcomp/gcomp/codegen/gemv"
	"github.com/gcomp/gcomp/ir"
)

// The GEMV template: a dot_general whose lhs has at most gemv.MaxM rows (decoding's x·W), with
// the kernel's other ops as an epilogue. Package gemv plans the launch: blocks of 256 threads,
// each computing gemv.Cols result columns of every row for one batch element over one slice of
// K, so a product with few columns still launches about two blocks per SM.
//
// The weight (rhs) streams through 128-bit loads in either stored order:
//   - free-dim contiguous (x·W with W as [K,N]): V = 16/size columns per thread, Cols/V threads
//     across a row and the rest of the block down k; a warp's lanes on one column sum by
//     butterfly shuffles, then the 8 warps' partials in warp order through shared memory;
//   - k contiguous (x·Wᵀ with W as [N,K]): 8 threads per column, each V consecutive k at a
//     time, summed by butterfly shuffles.
//
// A weight whose views are not strided, or whose dims or offsets are not multiples of V, is
// read element by element in the same arrangement. The lhs is evaluated element by element
// through the kernel graph (a few rows, cached). Products accumulate in f32 with fma.rn.f32.
// With K split across blocks each block writes its per-column partials to scratch and takes an
// integer ticket; the tile's last block sums the partials in slice order, zeroes them and its
// counter, and runs the epilogue: the same bits on every run.

// gemvWeight is how the template reads the weight: along k (kContig) or along the columns,
// V elements per load, and the strided layout when V > 1.
type gemvWeight struct {
	kContig bool
	v       int
	l       operandLayout
	quant   *ir.Value // a dequantize read as packed integers (l is its q's layout), or nil
	out     ir.DType  // the weight's dtype: quant's, or that of the cast of it the product reads
}

func gemvWeightOf(dot *ir.Value, p gemv.Plan) gemvWeight {
	n, k := p.N, p.K
	rhs := dot.Args[1]
	if w, ok := quantWeightOf(dot, p); ok {
		return w
	}
	l, err := layoutOf(rhs, dot.Attrs.Ints("rhs_batch"), dot.Attrs.Ints("rhs_contract"))
	if err != nil || l.view != nil {
		rc := dot.Attrs.Ints("rhs_contract")
		last := rhs.Type.Shape.Rank() - 1
		w := gemvWeight{v: 1}
		for _, d := range rc {
			w.kContig = w.kContig || d == last
		}
		return w
	}
	w := gemvWeight{kContig: l.kSt == 1 && l.freeSt != 1, v: 1, l: l}
	v := 16 / rhs.Type.DType.Size()
	ok := l.off%v == 0
	for _, s := range l.batchStrides {
		ok = ok && s%v == 0
	}
	if w.kContig {
		ok = ok && k%v == 0 && (n == 1 || l.freeSt%v == 0)
	} else {
		ok = ok && l.freeSt == 1 && n%v == 0 && (k == 1 || l.kSt%v == 0)
	}
	if ok {
		w.v = v
	}
	return w
}

// gemvKernel generates k, whose one contraction dot the GEMV template takes with plan p.
// With pdl (a PDL target) its first k step of parameter weights is loaded before waiting for
// the previous kernel (pdl.go).
func gemvKernel(k Kernel, dot *ir.Value, p gemv.Plan, pdl bool, globals *[]string) (string, Launch, error) {
	b := newBuilder(k.Name)
	b.perf = fmt.Sprintf(".maxntid %d, 1, 1", gemv.Threads)
	gn, args := header(k, b, globals)
	a := gn.a
	var scratch string
	if p.Splits > 1 {
		sp := b.param("u64", fmt.Sprintf("%s_param_%d", k.Name, len(args)))
		args = append(args, Arg{Kind: ArgScratch, Bytes: p.ScratchBytes()})
		scratch = b.reg(rU64)
		b.ins("ld.param.u64", scratch, "["+sp+"]")
		b.ins("cvta.to.global.u64", scratch, scratch)
	}
	w := gemvWeightOf(dot, p)
	symM, work, err := gemvSymbolic(k, b, &args, dot, p, w)
	if err != nil {
		return "", Launch{}, err
	}
	order := "columns"
	if w.kContig {
		order = "k"
	}
	b.note("gemv: %d×%d·%d×%d (batch %d): %d columns per block, k in %d slices of %d; weight read along %s, %d per load",
		p.M, p.K, p.K, p.N, p.Batch, gemv.Cols, p.Splits, p.KPer, order, w.v)
	tid, bx, by, bz := b.reg(rU32), b.reg(rU32), b.reg(rU32), b.reg(rU32)
	b.ins("mov.u32", tid, "%tid.x")
	b.ins("mov.u32", bx, "%ctaid.x")
	b.ins("mov.u32", by, "%ctaid.y")
	b.ins("mov.u32", bz, "%ctaid.z")
	n0 := a.mul(bx, gemv.Cols)
	kBeg := a.mul(by, p.KPer)
	kEnd := b.reg(rU32)
	b.ins("add.s32", kEnd, kBeg, imm(p.KPer))
	b.ins("min.u32", kEnd, kEnd, imm(p.K))

	// The thread's columns and first k: free-contiguous weights put Cols/V threads across the
	// row, k-contiguous ones 8 threads on a column.
	var ci, kq string
	var vecCols, lanesK, kStep, kFirst int // columns per thread, lanes per column in a warp, k step
	if w.kContig {
		ci, kq = a.div(tid, 8), a.rem(tid, 8)
		vecCols, lanesK, kStep, kFirst = 1, 8, 8*w.v, w.v
	} else {
		tn := gemv.Cols / w.v
		ci, kq = a.rem(tid, tn), a.div(tid, tn)
		vecCols, lanesK, kStep, kFirst = w.v, 32/tn, gemv.Threads/tn, 1
	}
	col := a.add(n0, a.mul(ci, vecCols))
	shape := dot.Type.Shape
	// Result indexes of the thread's rows (for the lhs) and columns (for a weight read element
	// by element), their coordinates derived outside the k loop.
	rowX := make([]*index, p.M)
	setRowX := func(rows int) {
		for m := range rows {
			rowX[m] = newIndexLin(shape, a.mul(a.mad(bz, p.M, imm(m)), p.N))
			for d := range shape {
				rowX[m].getCoord(a, d)
			}
		}
	}
	if symM == nil {
		setRowX(p.M) // a symbolic GEMV's k loop for r rows derives its own (gemvKLoops)
	}
	var colX *index
	if w.v == 1 {
		colX = newIndexLin(shape, a.add(a.mul(bz, p.M*p.N), a.clamp(col, p.N)))
		for d := range shape {
			colX.getCoord(a, d)
		}
	}
	// Strided weights: the element offset of (k = 0, col) in the buffer.
	var colOff string
	if w.v > 1 {
		bidx := newIndexLin(batchShapeOf(dot), bz)
		colOff = imm(w.l.off)
		for i, s := range w.l.batchStrides {
			colOff = a.mad(bidx.getCoord(a, i), s, colOff)
		}
		colOff = a.mad(col, w.l.freeSt, colOff)
	}
	nAcc := p.M * vecCols
	if w.kContig {
		nAcc = p.M
	}
	acc := make([]string, nAcc)
	for i := range acc {
		acc[i] = b.reg(rF32)
		b.ins("mov.f32", acc[i], immF32(0))
	}
	var colQuant [][2]string // a quantized [K,N] weight: each column's scale and biased zero
	weightAt := func(kk string) ([]val, error) {
		if w.v == 1 {
			_, rhsAt, ks := gn.dotOperands(dot, colX)
			v, err := rhsAt(newIndexLin(ks, kk))
			return []val{v}, err
		}
		if w.quant != nil && w.kContig {
			return gn.quantVector(w, kk, col, colOff)
		}
		if w.quant != nil {
			return gn.quantColumns(w, kk, colOff, colQuant), nil
		}
		d := dot.Args[1].Type.DType
		ad := gn.addr(gn.ptr[w.l.v], a.mad(kk, w.l.kSt, colOff), d.Size())
		if d == ir.F32 {
			regs := make([]string, 4)
			for i := range regs {
				regs[i] = b.reg(rF32)
			}
			b.ins("ld.global.v4.f32", "{"+joinRegs(regs)+"}", ad)
			vs := make([]val, 4)
			for i, r := range regs {
				vs[i] = val{ir.F32, r}
			}
			return vs, nil
		}
		words := make([]string, 4)
		for i := range words {
			words[i] = b.reg(rU32)
		}
		b.ins("ld.global.v4.b32", "{"+joinRegs(words)+"}", ad)
		var vs []val
		for _, wd := range words {
			lo, hi := b.reg(rB16), b.reg(rB16)
			b.ins("mov.b32", "{"+lo+", "+hi+"}", wd)
			vs = append(vs, gn.e.widenHalf(d, lo), gn.e.widenHalf(d, hi))
		}
		return vs, nil
	}
	lhsAt := make([]func(*index) (val, error), p.M)
	var ks ir.Shape
	setLHS := func(rows int) {
		for m := range rows {
			lhsAt[m], _, ks = gn.dotOperands(dot, rowX[m])
		}
	}
	if symM == nil {
		setLHS(p.M)
	}
	quantLHS := gn.quantLHS(dot, w, p)
	fma := func(acc string, x, y val) {
		b.ins("fma.rn.f32", acc, gn.e.reg(gn.e.cast(x, ir.F32)), gn.e.reg(gn.e.cast(y, ir.F32)), acc)
	}

	// A PDL target: the first k step's weights before the wait (pdl.go), unless the weight is
	// read element by element or from buffers kernels write; then the wait comes first.
	var pre []val
	var preOK string
	colPrologue := w.quant != nil && !w.kContig
	if pdl && paramWeight(k, w) {
		kk0 := b.reg(rU32)
		b.ins("mad.lo.s32", kk0, a.reg(kq), imm(kFirst), kBeg)
		var prologue func() error
		if colPrologue {
			prologue = func() (err error) {
				colQuant, err = gn.quantColumnPrologue(w, col)
				return err
			}
			colPrologue = false
		}
		if pre, preOK, err = gemvPreload(gn, w, col, p.N, kk0, kEnd, weightAt, prologue); err != nil {
			return "", Launch{}, err
		}
	} else if pdl {
		b.ins(depWait)
	}

	setRow := func(int) {}
	if reds := gemv.RowPrologue(dot); len(reds) > 0 {
		var err error
		if setRow, err = gn.gemvRowPrologue(dot, reds, p, tid, symM); err != nil {
			return "", Launch{}, err
		}
		if err := gn.gemvRowOutputs(k.Graph, dot, p, tid, bx, by, bz, symM); err != nil {
			return "", Launch{}, err
		}
		symRowsPast(b, symM)
	}

	b.note("k loop")
	noCols := b.label("no_columns")
	outside := b.reg(rPred)
	b.ins("setp.ge.u32", outside, a.reg(col), imm(p.N))
	b.braIf(outside, noCols)
	if colPrologue {
		var err error
		if colQuant, err = gn.quantColumnPrologue(w, col); err != nil {
			return "", Launch{}, err
		}
	}
	// The k loop over rows rows (p.M; a symbolic GEMV has one per row count, symgemv.go).
	kLoop := func(rows int) error {
		kk := b.reg(rU32)
		b.ins("mad.lo.s32", kk, a.reg(kq), imm(kFirst), kBeg)
		head, done := b.label("k_loop"), b.label("k_done")
		b.place(head)
		end := b.reg(rPred)
		b.ins("setp.ge.u32", end, kk, kEnd)
		b.braIf(end, done)
		gn.reset()
		var wv []val
		var err error
		if pre != nil {
			wv, err = gemvLoaded(gn, pre, preOK, kk, weightAt)
		} else {
			wv, err = weightAt(kk)
		}
		if err != nil {
			return err
		}
		for m := range rows {
			setRow(m)
			if w.kContig {
				var xs []val
				if quantLHS != nil {
					xs = quantLHS(m, kk)
				}
				for j, y := range wv {
					if xs != nil {
						fma(acc[m], xs[j], y)
						continue
					}
					x, err := lhsAt[m](newIndexLin(ks, a.add(kk, imm(j))))
					if err != nil {
						return err
					}
					fma(acc[m], x, y)
				}
				continue
			}
			x, err := lhsAt[m](newIndexLin(ks, kk))
			if err != nil {
				return err
			}
			for j, y := range wv {
				fma(acc[m*vecCols+j], x, y)
			}
		}
		gn.reset()
		b.ins("add.s32", kk, kk, imm(kStep))
		b.bra(head)
		b.place(done)
		return nil
	}
	if symM == nil {
		err = kLoop(p.M)
	} else {
		err = gemvKLoops(gn, symM, p.M, func(rows int) error {
			setRowX(rows)
			setLHS(rows)
			return kLoop(rows)
		})
	}
	if err != nil {
		return "", Launch{}, err
	}
	b.place(noCols)

	// Sum a column's lanes of a warp by butterfly shuffles (lanes with the same column differ in
	// the bits from 32/lanesK up, or below lanesK for k-contiguous weights), then the lanes that
	// hold a column's first partial write it to shared memory.
	lane, warp := a.rem(tid, 32), a.div(tid, 32)
	if lanesK > 1 {
		b.note("sum a column's lanes")
		first, stop := 32/lanesK, 32
		if w.kContig {
			first, stop = 1, lanesK
		}
		t := b.reg(rF32)
		if symM != nil {
			gemvRowShuffles(b, symM, acc, vecCols, first, stop, t)
		} else {
			for off := first; off < stop; off *= 2 {
				for _, r := range acc {
					b.ins("shfl.sync.bfly.b32", t, r, imm(off), "0x1f", "0xffffffff")
					b.ins("add.f32", r, r, t)
				}
			}
		}
	}
	slots := gemv.Threads / 32 // warps' partials, free-contiguous weights
	if w.kContig {
		slots = 1
	}
	red := b.sharedArray("gemv_partials", 4*slots*p.M*gemv.Cols, 16)
	redBase := b.reg(rU32)
	b.ins("mov.u32", redBase, red)
	writer := b.reg(rPred)
	if w.kContig {
		b.ins("setp.eq.u32", writer, a.reg(kq), "0")
	} else {
		b.ins("setp.lt.u32", writer, a.reg(lane), imm(32/lanesK))
	}
	skipW := b.label("not_writer")
	b.braIf("!"+writer, skipW)
	slot := warp
	if w.kContig {
		slot = "0"
	}
	// shared [slot][m][column in tile]
	colInTile := a.mul(ci, vecCols)
	for m := range p.M {
		gemvRowGuard(b, symM, m) // rows from M on are never read
		for j := range vecCols {
			at := a.mad(a.add(a.mad(slot, p.M*gemv.Cols, imm(m*gemv.Cols)), colInTile), 4, redBase)
			b.ins("st.shared.f32", fmt.Sprintf("[%s+%d]", a.reg(at), 4*j), acc[m*vecCols+j])
		}
	}
	gemvRowsEnd(b, symM)
	b.place(skipW)
	b.ins("bar.sync", "0")

	// Thread t < M·Cols finishes row t/Cols, column t%Cols of the tile.
	b.note("finish: one thread per (row, column) of the tile")
	g := k.Graph
	active := p.M * gemv.Cols
	m, c := warp, lane // Cols = 32: warp m holds row m
	n := a.add(n0, c)
	has := b.reg(rPred)
	inRow := b.reg(rPred)
	b.ins("setp.lt.u32", has, tid, imm(active))
	b.ins("setp.lt.u32", inRow, n, imm(p.N))
	b.ins("and.pred", has, has, inRow)
	gemvRowsBelow(b, has, m, symM)
	sum := b.reg(rF32)
	b.ins("mov.f32", sum, immF32(0))
	skipSum := b.label("no_sum")
	b.braIf("!"+has, skipSum)
	for s := range slots {
		x := b.reg(rF32)
		at := a.mad(a.add(a.mul(m, gemv.Cols), c), 4, redBase)
		b.ins("ld.shared.f32", x, fmt.Sprintf("[%s+%d]", a.reg(at), 4*s*p.M*gemv.Cols))
		if s == 0 {
			b.ins("mov.f32", sum, x)
		} else {
			b.ins("add.f32", sum, sum, x)
		}
	}
	b.place(skipSum)
	rowOuts := rowOutputs(g, dot)
	epilogue := func(total string) error {
		gn.reset()
		lin := a.mad(a.mad(bz, p.M, m), p.N, n)
		x := newIndexLin(shape, lin)
		res := gn.e.cast(val{ir.F32, total}, dot.Type.DType)
		gn.bound[dot] = func(*index) val { return res }
		defer delete(gn.bound, dot)
		for oi, o := range g.Outputs {
			if slices.Contains(rowOuts, oi) {
				continue // written by the prologue (gemvnormout.go)
			}
			v, err := gn.eval(o.Value, x)
			if err != nil {
				return err
			}
			gn.store(o.Value, gn.outPtr[oi], lin, v)
		}
		gn.reset()
		return nil
	}
	fin := b.label("finished")
	if p.Splits == 1 {
		b.braIf("!"+has, fin)
		if err := epilogue(sum); err != nil {
			return "", Launch{}, err
		}
	} else if err := gemvSplitFinish(gn, p, scratch, tid, bx, by, bz, m, c, has, sum, fin, epilogue); err != nil {
		return "", Launch{}, err
	}
	b.place(fin)
	gemvSymbolicEnd(b, symM)
	if gn.err != nil {
		return "", Launch{}, gn.err
	}
	l := Launch{Grid: p.Grid(), Block: [3]int{gemv.Threads, 1, 1}, Params: args, Work: work}
	return b.text(), l, nil
}

// gemvSplitFinish publishes the block's partial of (row m, column c) and lets the tile's last
// block (an integer ticket) sum the slices in order, zero them and the counter, and run the
// epilogue.
func gemvSplitFinish(gn *gen, p gemv.Plan, scratch, tid, bx, by, bz, m, c, has, sum, fin string, epilogue func(string) error) error {
	b, a := gn.e.b, gn.a
	tile := a.mad(bz, p.Tiles, bx)
	// partial (tile, slice, m, c) at ((tile·Splits + slice)·M + m)·Cols + c
	rowCol := a.add(a.mul(m, gemv.Cols), c)
	part := a.add(a.mul(a.mad(tile, p.Splits, by), p.M*gemv.Cols), rowCol)
	skip := b.label("unpublished")
	b.braIf("!"+has, skip)
	b.ins("st.global.f32", gn.addr(scratch, a.reg(part), 4), sum)
	b.place(skip)
	b.ins("fence.acq_rel.gpu")
	b.ins("bar.sync", "0")
	counter := gn.addr(scratch, a.reg(a.add(tile, imm(p.PartialFloats()))), 4)
	t0 := b.reg(rPred)
	b.ins("setp.eq.u32", t0, tid, "0")
	notT0 := b.label("ticketed")
	b.braIf("!"+t0, notT0)
	lastBlock(b, counter, p.Splits, notT0, fin)
	b.note("the tile's last block: sum the slices in order")
	b.ins("fence.acq_rel.gpu")
	notFirst := b.label("counter_kept")
	b.braIf("!"+t0, notFirst)
	b.ins("st.global.u32", counter, "0") // ready for the next launch
	b.place(notFirst)
	b.braIf("!"+has, fin)
	total := b.reg(rF32)
	b.ins("mov.f32", total, immF32(0))
	first := a.add(a.mul(a.mul(tile, p.Splits), p.M*gemv.Cols), rowCol)
	gn.loopFrom("0", "1", p.Splits, func(s string) error {
		ad := gn.addr(scratch, a.reg(a.mad(s, p.M*gemv.Cols, first)), 4)
		x := b.reg(rF32)
		b.ins("ld.global.cg.f32", x, ad)
		b.ins("st.global.f32", ad, immF32(0)) // the scratch is left zero
		b.ins("add.f32", total, total, x)
		return nil
	})
	return epilogue(total)
}

// batchShapeOf is the sizes of dot's batch dims.
func batchShapeOf(dot *ir.Value) ir.Shape {
	var s ir.Shape
	for _, d := range dot.Attrs.Ints("lhs_batch") {
		s = append(s, dot.Args[0].Type.Shape[d])
	}
	return s
}
