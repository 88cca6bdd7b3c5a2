package nvvm

import (
	"fmt"
	"strings"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
)

// mmaKernel is codegen/ptx's tensor-core contraction (plan.GEMMPlan's MMA): f16/bf16 through
// mma.sync m16n8k16, f32 under --tf32 through m16n8k8.tf32 (fragments rounded with cvt.rna),
// f32 accumulators. 8 warps in a 2×4 grid each compute a 64×32 part of the 128×128 tile (a
// narrow conv2d tile: 8×1 warps of 16×TileN, the plan's WarpsN, MI and NI);
// K advances BK at a time through two shared buffers per side, filled by cp.async in chunks
// of the plan's size (16-bit element copies through registers where no chunk fits);
// fragments come from shared memory with ldmatrix (.trans where a side is stored
// free-contiguous; tf32 sides stored so, word by word). Each accumulator takes its mma in
// codegen/ptx's order, so results are its bit for bit. libNVVM 11.8 has no intrinsic for
// mma.sync, ldmatrix, cp.async or cvt.rna.tf32: each is one instruction of inline assembly.
func (md *module) mmaKernel(k plan.Kernel, t plan.Target) (*ir.Func, plan.Launch, error) {
	p, err := plan.GEMMPlan(k, t)
	if err != nil {
		return nil, plan.Launch{}, err
	}
	mm, args, work, err := md.newGEMM(k, p, true) // symcontract.go, symcontract_mma.go
	if err != nil {
		return nil, plan.Launch{}, err
	}
	if err := mm.emitMMA(); err != nil {
		return nil, plan.Launch{}, err
	}
	return mm.kg.f, plan.Launch{Grid: p.Grid, Block: p.Block, Params: args, Work: work}, nil
}

// tcSide is one side of the tensor-core tiles: the shared tile (bytes) and the copies.
type tcSide struct {
	*side
	plan plan.MMASide
	sh0  value.Value // byte offset of the thread's first copy in buffer 0
}

func (mm *gemm) emitMMA() error {
	kg, p, q := mm.kg, mm.p, mm.p.MMA
	d := p.Dot.Args[0].Type.DType
	eb, bk := q.EB, q.BK
	tid := mm.prologue() // accumulators [mi][ni][4]
	lane, warp := kg.rem(tid, 32), kg.div(tid, 32)
	aBytes := 2 * q.Sides[0].BufBytes
	if q.Staged {
		aBytes = max(aBytes, plan.GEMMThreads/32*plan.StageWarpBytes)
	}
	tiles := [2]*ir.Global{mm.tile("tileA", aBytes, types.I8), mm.tile("tileB", 2*q.Sides[1].BufBytes, types.I8)}
	f0s := []value.Value{mm.m0, mm.n0}
	nFrees := []int{p.M, p.N}
	ops := []plan.GEMMOperand{p.A, p.B}
	sides := make([]*tcSide, 2)
	// A generic side whose chunks the run decides gets a chunk side too (fast) and a
	// launch-uniform predicate choosing it (when): symchunk.go.
	fast, when := make([]*tcSide, 2), make([]value.Value, 2)
	newSide := func(si int, pl plan.MMASide, chunked bool) *tcSide {
		sd := &tcSide{side: &side{op: ops[si], d: d, df: pl.DF, dk: pl.DK, nFree: nFrees[si], mSide: si == 0, f0tile: f0s[si], tile: tiles[si]}, plan: pl}
		var fl value.Value
		if pl.KContig {
			fl, sd.kq = kg.div(tid, pl.PerRow), kg.mul(kg.rem(tid, pl.PerRow), pl.Chunk)
			sd.sh0 = kg.mul(kg.add(kg.mul(fl, pl.RowH), sd.kq), eb)
		} else {
			sd.kq, fl = kg.div(tid, pl.PerRow), kg.mul(kg.rem(tid, pl.PerRow), pl.Chunk)
			sd.sh0 = kg.mul(kg.add(kg.mul(sd.kq, pl.RowH), fl), eb)
		}
		sd.f0 = kg.add(f0s[si], fl)
		mm.copier(sd.side)
		if si == 0 && p.Conv != nil {
			mm.convCopier(sd.side)
		}
		if chunked {
			mm.symChunkCopier(sd.side)
		}
		return sd
	}
	var qs *quantSide // a quantized weight's byte tile (qmma.go)
	for si := range sides {
		if si == 1 && q.Quant != nil {
			qs = mm.newQuantSide(tid, tiles[1])
			sides[si] = &tcSide{side: &side{op: ops[si], tile: tiles[si]}, plan: q.Sides[si]}
			continue
		}
		pl, conds, chunked := mm.symChunkSide(si, ops[si], q.Sides[si], eb) // symchunk.go
		if chunked && len(conds) > 0 {
			sides[si] = newSide(si, q.Sides[si], false)
			fast[si], when[si] = newSide(si, pl, true), mm.symMultiple(conds, pl.Chunk)
			continue
		}
		sides[si] = newSide(si, pl, chunked)
	}

	issueSide := func(sd *tcSide, k0, buf value.Value) error {
		pl := sd.plan
		first := kg.add(kg.mul(buf, pl.BufBytes), sd.sh0)
		for i := range sd.df {
			off := eb * sd.dk[i] * pl.RowH
			if pl.KContig {
				off = eb * sd.df[i] * pl.RowH
			}
			at := kg.add(first, ci(off))
			dst := mm.shPtr(sd.tile, at, memType(d))
			if sd.valueAt != nil {
				v, err := sd.valueAt(k0, i)
				if err != nil {
					return err
				}
				kg.b.NewStore(kg.toMem(d, v), dst)
				continue
			}
			src, ok := sd.copyAt(k0, i)
			if pl.Elem {
				// Zero outside the matrix (and in conv2d's padding), as cp.async zero-fills.
				ld := kg.b.NewLoad(memType(d), src)
				ld.Align = ir.Align(eb)
				kg.b.NewStore(kg.b.NewSelect(ok, ld, memConst(d, 0)), dst)
				continue
			}
			size := eb * pl.Chunk
			kind := "ca"
			if size == 16 {
				kind = "cg" // 16-byte copies bypass L1
			}
			n := kg.b.NewSelect(ok, ci(size), ci(0))
			kg.asm(fmt.Sprintf("cp.async.%s.shared.global [$0], [$1], %d, $2;", kind, size), "r,l,r,~{memory}", mm.shAddr(sd.tile, at), src, n)
		}
		return nil
	}
	issue := func(k0, buf value.Value) error {
		for si, sd := range sides {
			var err error
			if si == 1 && qs != nil {
				mm.quantIssue(qs, k0, buf, tid)
				continue
			}
			if f := fast[si]; f != nil {
				err = mm.symChunkIssue(when[si], func() error { return issueSide(f, k0, buf) }, func() error { return issueSide(sd, k0, buf) })
			} else {
				err = issueSide(sd, k0, buf)
			}
			if err != nil {
				return err
			}
		}
		kg.asm("cp.async.commit_group;", "~{memory}")
		return nil
	}

	// Per-lane ldmatrix addresses (byte offsets in buffer 0). Lane l serves matrix l/8, row
	// l%8. A's four matrices of a 16×16 fragment are (m, k) = (0,0), (8,0), (0,8), (8,8); B's x4
	// loads two 8-column tiles: (n, k) = (0,0), (0,8), (8,0), (8,8).
	qd, r := kg.div(lane, 8), kg.rem(lane, 8)
	wm, wn := kg.div(warp, q.WarpsN), kg.rem(warp, q.WarpsN)
	frag := func(sd *tcSide, freeOff, kOff value.Value) value.Value {
		if sd.plan.KContig {
			return kg.mul(kg.add(kg.mul(kg.add(freeOff, r), sd.plan.RowH), kOff), eb)
		}
		return kg.mul(kg.add(kg.mul(kg.add(kOff, r), sd.plan.RowH), freeOff), eb)
	}
	aFree := kg.add(kg.mul(wm, 16*q.MI), kg.mul(kg.rem(qd, 2), 8))
	aK := kg.mul(kg.div(qd, 2), 16/eb) // the second 16 bytes of k
	bFree := kg.add(kg.mul(wn, 8*q.NI), kg.mul(kg.div(qd, 2), 8))
	bK := kg.mul(kg.rem(qd, 2), 16/eb)
	addrs := []value.Value{frag(sides[0], aFree, aK), frag(sides[1], bFree, bK)}
	// A tf32 side stored [k][free]: lane (g, t) = (lane/4, lane%4) holds fragment elements
	// (free g or g+8, k t or t+4); its base is word t·rowH + g of the warp's columns.
	g, tg := kg.div(lane, 4), kg.rem(lane, 4)
	for si, warpFree := range []value.Value{kg.mul(wm, 16*q.MI), kg.mul(wn, 8*q.NI)} {
		if eb == 4 && !sides[si].plan.KContig {
			addrs[si] = kg.mul(kg.add(kg.mul(tg, sides[si].plan.RowH), kg.add(warpFree, g)), eb)
		}
	}
	if qs != nil {
		if err := mm.quantFragInit(qs, lane, wn, q.NI, bk); err != nil {
			return err
		}
	}
	i32 := types.I32
	ldm := "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {$0, $1, $2, $3}, [$4];"
	loadFrag := func(sd *tcSide, base value.Value, off int, kOff, fOff func(j int) int) []value.Value {
		regs := make([]value.Value, 4)
		if eb == 4 && !sd.plan.KContig {
			for j := range regs {
				ld := kg.b.NewLoad(i32, mm.shPtr(sd.tile, kg.add(base, ci(off+eb*(kOff(j)*sd.plan.RowH+fOff(j)))), i32))
				ld.Align = 4
				regs[j] = ld
			}
			return regs
		}
		text := ldm
		if !sd.plan.KContig {
			text = strings.Replace(text, ".x4.", ".x4.trans.", 1)
		}
		ret := types.NewStruct(i32, i32, i32, i32)
		res := kg.asmRet(ret, text, "=r,=r,=r,=r,r,~{memory}", mm.shAddr(sd.tile, kg.add(base, ci(off))))
		for j := range regs {
			regs[j] = kg.b.NewExtractValue(res, uint64(j))
		}
		return regs
	}
	// tf32 fragments are f32 images: round them to tf32 (nearest, ties away).
	toTF32 := func(regs []value.Value) {
		if eb != 4 {
			return
		}
		for j, x := range regs {
			regs[j] = kg.asmRet(i32, "cvt.rna.tf32.f32 $0, $1;", "=r,f", kg.b.NewBitCast(x, types.Float))
		}
	}
	f4 := types.NewStruct(types.Float, types.Float, types.Float, types.Float)
	mmaText := q.Inst + " {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};"
	compute := func(kt, cur value.Value) error {
		ab := kg.add(kg.mul(cur, sides[0].plan.BufBytes), addrs[0])
		bb := kg.add(kg.mul(cur, sides[1].plan.BufBytes), addrs[1])
		var quantSlab func(ks int) ([][2]value.Value, [][2]value.Value, error)
		nB := q.NI / 2 // B fragments ldmatrix loads (none for a quantized B: qmma.go)
		if qs != nil {
			quantSlab, nB = mm.quantStep(qs, kt, lane, wn, q.NI, bk), 0
		}
		for ks := 0; ks < bk; ks += q.KStep {
			// B's fragments for the warp's column tiles first, then A's one row tile at a time.
			bf := make([][]value.Value, q.NI/2)
			if quantSlab != nil {
				scales, kOK, err := quantSlab(ks)
				if err != nil {
					return err
				}
				bf = mm.quantFrags(qs, cur, ks, q.NI, scales, kOK)
			}
			for nj := range nB {
				off := eb * (nj*16*sides[1].plan.RowH + ks)
				if !sides[1].plan.KContig {
					off = eb * (ks*sides[1].plan.RowH + nj*16)
				}
				// B registers j: k half j%2, column tile j/2.
				bf[nj] = loadFrag(sides[1], bb, off, func(j int) int { return 4 * (j % 2) }, func(j int) int { return 8 * (j / 2) })
				toTF32(bf[nj])
			}
			for mi := range q.MI {
				off := eb * (mi*16*sides[0].plan.RowH + ks)
				if !sides[0].plan.KContig {
					off = eb * (ks*sides[0].plan.RowH + mi*16)
				}
				// A registers j: rows g or g+8 (j%2), k t or t+4 (j/2).
				af := loadFrag(sides[0], ab, off, func(j int) int { return 4 * (j / 2) }, func(j int) int { return 8 * (j % 2) })
				toTF32(af)
				for ni := range q.NI {
					bfr := bf[ni/2][2*(ni%2) : 2*(ni%2)+2]
					c := mm.acc[(mi*q.NI+ni)*4 : (mi*q.NI+ni)*4+4]
					in := append(append([]value.Value{}, af...), bfr...)
					for _, a := range c {
						in = append(in, kg.b.NewLoad(types.Float, a))
					}
					res := kg.asmRet(f4, mmaText, "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f", in...)
					for j, a := range c {
						kg.b.NewStore(kg.b.NewExtractValue(res, uint64(j)), a)
					}
				}
			}
		}
		return nil
	}

	nk := mm.kSteps(bk)
	if err := issue(ci(0), ci(0)); err != nil {
		return err
	}
	mm.waitAll()
	kg.barrier()
	var err error
	kg.loopTo(ci(0), ci(1), nk, func(kt value.Value) {
		cur := kg.b.NewAnd(kt, ci(1))
		next := kg.b.NewAdd(kt, ci(1))
		kg.branch(kg.b.NewICmp(enum.IPredULT, next, nk), "prefetch", func() {
			if e := issue(kg.mul(next, bk), kg.b.NewXor(cur, ci(1))); e != nil && err == nil {
				err = e
			}
		})
		if e := compute(kt, cur); e != nil && err == nil {
			err = e
		}
		mm.waitAll()
		kg.barrier()
	})
	if err != nil {
		return err
	}
	accs := make([]value.Value, len(mm.acc))
	for i, a := range mm.acc {
		accs[i] = kg.b.NewLoad(types.Float, a)
	}
	if q.Staged {
		err = mm.stagedEpilogue(accs, tiles[0], warp, lane)
	} else {
		err = mm.fragmentEpilogue(accs, warp, lane)
	}
	if err != nil {
		return err
	}
	kg.b.NewRet(nil)
	return nil
}

// shPtr is a pointer to an element of type t at byte offset off of shared byte array tile.
func (mm *gemm) shPtr(tile *ir.Global, off value.Value, t types.Type) value.Value {
	kg := mm.kg
	p := kg.b.NewGetElementPtr(tile.ContentType, tile, ci(0), off)
	p.InBounds = true
	pt := types.NewPointer(t)
	pt.AddrSpace = 3
	return kg.b.NewBitCast(p, pt)
}

// asmRet calls one PTX instruction as inline assembly that returns ret (a struct for several
// registers); side effects are declared where the constraints clobber memory.
func (kg *kgen) asmRet(ret types.Type, text, constraints string, args ...value.Value) value.Value {
	var params []types.Type
	for _, a := range args {
		params = append(params, a.Type())
	}
	f := ir.NewInlineAsm(types.NewPointer(types.NewFunc(ret, params...)), text, constraints)
	f.SideEffect = strings.Contains(constraints, "~{memory}")
	return kg.b.NewCall(f, args...)
}

// fragmentEpilogue stores each accumulator from the mma layout: accumulator c of tile
// (mi, ni) is row lane/4 (+8 for c ≥ 2), column 2·(lane%4) + c%2 of the tile; adjacent column
// pairs are stored together where the result's rows hold whole pairs.
func (mm *gemm) fragmentEpilogue(accs []value.Value, warp, lane value.Value) error {
	kg, p, q := mm.kg, mm.p, mm.p.MMA
	rowBase := kg.add(kg.add(mm.m0, kg.mul(kg.div(warp, q.WarpsN), 16*q.MI)), kg.div(lane, 4))
	colBase := kg.add(kg.add(mm.n0, kg.mul(kg.rem(warp, q.WarpsN), 8*q.NI)), kg.mul(kg.rem(lane, 4), 2))
	w := 1
	if p.ColPairs {
		w = 2
	}
	for mi := range q.MI {
		for ni := range q.NI {
			for c := 0; c < 4; c += w {
				dr, dc := mi*16+(c/2)*8, ni*8+c%2
				i := (mi*q.NI+ni)*4 + c
				if err := mm.element(rowBase, dr, colBase, dc, accs[i:i+w]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// element runs the epilogue for the len(accs) GEMM elements from (rowBase+dr, colBase+dc)
// (consecutive columns, or pixels of a conv2d) and stores every output.
func (mm *gemm) element(rowBase value.Value, dr int, colBase value.Value, dc int, accs []value.Value) error {
	kg := mm.kg
	ok := kg.b.NewAnd(kg.b.NewICmp(enum.IPredSLT, rowBase, mm.mBelow(dr)), kg.b.NewICmp(enum.IPredSLT, colBase, mm.nBelow(dc)))
	var err error
	kg.branch(ok, "store", func() {
		err = mm.bindAndStore(mm.lanesAt(kg.add(rowBase, ci(dr)), kg.add(colBase, ci(dc)), len(accs)), accs)
	})
	return err
}

// stagedEpilogue is codegen/ptx's: a warp's 64×32 part goes out 16 rows at a time through its
// own 16×32 f32 region of the A tile (rows of plan.StageRow floats, 8-column blocks swizzled by
// the row's quarter against bank conflicts), so a matmul thread stores 4 consecutive columns of
// one row and a conv2d thread 4 consecutive pixels of one channel (whole pooling windows). A
// narrow tile's warp part (16×TileN) goes out in passes of up to 4 column tiles alike.
func (mm *gemm) stagedEpilogue(accs []value.Value, tile *ir.Global, warp, lane value.Value) error {
	kg, p, mq := mm.kg, mm.p, mm.p.MMA
	const row = plan.StageRow
	stage := kg.mul(warp, plan.StageWarpBytes)
	v2, v4 := types.NewVector(2, types.Float), types.NewVector(4, types.Float)
	// Write addresses: fragment pair (ni, h) of a thread is row lane/4 + 8h, columns
	// ni·8 + 2·(lane%4) and the next; the row's quarter is (lane/16 + 2h) mod 4.
	var wAddr [4][2]value.Value
	for h := range 2 {
		rowOff := kg.add(stage, kg.mul(kg.add(kg.mul(kg.add(kg.div(lane, 4), ci(8*h)), row), kg.mul(kg.rem(lane, 4), 2)), 4))
		sw := kg.mul(kg.rem(kg.add(kg.div(lane, 16), ci(2*h)), 4), 32) // the swizzle in bytes
		for ni := range 4 {
			wAddr[ni][h] = kg.add(rowOff, kg.b.NewXor(sw, ci(ni*32)))
		}
	}
	wm, wn := kg.div(warp, mq.WarpsN), kg.rem(warp, mq.WarpsN)
	var rowBase, colBase value.Value
	if p.Conv == nil {
		rowBase = kg.add(kg.add(mm.m0, kg.mul(wm, 16*mq.MI)), kg.div(lane, 8))
		colBase = kg.add(kg.add(mm.n0, kg.mul(wn, 8*mq.NI)), kg.mul(kg.rem(lane, 8), 4))
	} else {
		rowBase = kg.add(kg.add(mm.m0, kg.mul(wm, 16*mq.MI)), kg.mul(kg.rem(lane, 4), 4))
		colBase = kg.add(kg.add(mm.n0, kg.mul(wn, 8*mq.NI)), kg.div(lane, 4))
	}
	passes := (mq.NI + 3) / 4
	for pass := range mq.MI * passes {
		// Pass (mi, c0): rows mi·16.. and column tiles c0..c0+nw-1 of the warp's part.
		mi, c0 := pass/passes, 4*(pass%passes)
		nw := min(4, mq.NI-c0)
		for ni := range nw {
			for h := range 2 {
				c := (mi*mq.NI+c0+ni)*4 + 2*h
				var v value.Value = constant.NewUndef(v2)
				v = kg.b.NewInsertElement(v, accs[c], ci(0))
				v = kg.b.NewInsertElement(v, accs[c+1], ci(1))
				st := kg.b.NewStore(v, mm.shPtr(tile, wAddr[ni][h], v2))
				st.Align = 8
			}
		}
		kg.barrier()
		reads := 4
		if p.Conv != nil {
			reads = nw // a conv2d thread reads column 8q + lane/4
		}
		for q := range reads {
			regs := make([]value.Value, 4)
			var err error
			if p.Conv == nil {
				// Row lane/8 + 4q (quarter q), columns 4·(lane%8).. of the row.
				col := kg.b.NewXor(kg.mul(kg.rem(lane, 8), 16), ci(32*q))
				at := kg.add(kg.add(stage, kg.mul(kg.div(lane, 8), 4*row)), col)
				ld := kg.b.NewLoad(v4, mm.shPtr(tile, kg.add(at, ci(4*4*q*row)), v4))
				ld.Align = 16
				for j := range regs {
					regs[j] = kg.b.NewExtractElement(ld, ci(j))
				}
				err = mm.element(rowBase, mi*16+4*q, colBase, 0, regs)
			} else {
				// Rows 4·(lane%4) + k (quarter lane%4), column 8q + lane/4.
				blk := kg.mul(kg.b.NewXor(kg.rem(lane, 4), ci(q)), 32)
				at := kg.add(kg.add(stage, kg.mul(kg.rem(lane, 4), 4*4*row)), kg.add(blk, kg.mul(kg.div(lane, 4), 4)))
				for j := range regs {
					ld := kg.b.NewLoad(types.Float, mm.shPtr(tile, kg.add(at, ci(4*j*row)), types.Float))
					ld.Align = 4
					regs[j] = ld
				}
				if p.Conv.Pool != nil {
					col := kg.add(colBase, ci(8*(c0+q)))
					err = mm.pooledRows(kg.add(rowBase, ci(mi*16)), col, kg.add(kg.mul(mm.bz, p.N), col), regs)
				} else {
					err = mm.element(rowBase, mi*16, colBase, 8*(c0+q), regs)
				}
			}
			if err != nil {
				return err
			}
		}
		kg.barrier() // the next rows overwrite the stage
	}
	return nil
}
