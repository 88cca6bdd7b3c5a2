package nvvm

import (
	"fmt"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/metadata"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
)

// ffmaKernel is codegen/ptx's tiled FFMA contraction (plan.GEMMPlan): a block computes a
// 128×TileN tile of C with 256 threads, each an 8×ColRegs register block at rows
// p·4+RegTileOffset(i) of its thread-grid position (columns p·RegColStep+RegTileOffset(j)); K advances 8 at a time through two shared buffers that cp.async
// fills (zero-filled outside the matrix) while the other is multiplied; every accumulator folds
// its products in ascending k with llvm.fma.f32 (one rounding each, as fma.rn), so results are
// codegen/ptx's bit for bit. The kernel's other ops are the epilogue, applied to each
// accumulator before its one store (or, for a conv2d ending in a pooling, to each pixel of a
// window the thread holds, then pooled).
func (md *module) ffmaKernel(k plan.Kernel, t plan.Target) (*ir.Func, plan.Launch, error) {
	p, err := plan.GEMMPlan(k, t)
	if err != nil {
		return nil, plan.Launch{}, err
	}
	if p.Dot.Type.DType != irg.F32 {
		return nil, plan.Launch{}, fmt.Errorf("the ffma template computes f32, not %s", p.Dot.Type.DType)
	}
	mm, args, work, err := md.newGEMM(k, p, false) // symcontract.go
	if err != nil {
		return nil, plan.Launch{}, err
	}
	kg, p := mm.kg, mm.p
	if err := mm.emit(); err != nil {
		return nil, plan.Launch{}, err
	}
	// codegen/ptx's .maxntid 256 and, with more than one k step, its .minnctapersm (blocks per
	// SM cap the registers).
	md.ann = append(md.ann, md.tuple(kg.f, &metadata.String{Value: "maxntidx"}, md.i32(plan.GEMMThreads)))
	minBlocks := p.MinBlocksPerSM
	if minBlocks > 2 && (p.K+plan.GEMMTileK-1)/plan.GEMMTileK <= 2 {
		// With two K steps LLVM unrolls the main loop and sinks its last FMAs into the
		// epilogue's store branches, keeping partial sums live across them: under three blocks
		// per SM (80 registers) ptxas spilled them (resnet's 1×1 shortcut convolution with two
		// BatchNorms in its epilogue, 20 bytes). Two blocks per SM hold them without spilling.
		minBlocks = 2
	}
	if minBlocks > 0 {
		md.ann = append(md.ann, md.tuple(kg.f, &metadata.String{Value: "minctasm"}, md.i32(int64(minBlocks))))
	}
	return kg.f, plan.Launch{Grid: p.Grid, Block: p.Block, Params: args, Work: work}, nil
}

// gemm builds one tiled contraction kernel.
type gemm struct {
	kg   *kgen
	p    plan.GEMM
	bidx *index // blockIdx.z over the batch shape, coordinates derived in the entry block
	acc  []*ir.InstAlloca
	// rowT and colT are the thread's positions in the 16×16 grid along the tile's rows and
	// columns; m0 and n0 the tile's first row and column.
	rowT, colT, m0, n0, bz value.Value
	// shBase is the 32-bit shared address of each tile, the base of the inline asm's shared
	// operands (a pointer would be 64-bit under the datalayout: an add.s64 and a cvt per use).
	shBase map[*ir.Global]value.Value
	// symM is M at the run's sizes (a symbolic kernel's size parameter), nil at the bound's
	// (symgemm.go).
	symM value.Value
	// symv reads the left operand through its views at the run's sizes (symstride_gemm.go),
	// nil but for a symbolic kernel with sizes.
	symv *symView
	// symK is K at the run's sizes (a symbolic kernel folding its rows), nil at the bound's
	// (symfold.go).
	symK value.Value
	// symN is N at the run's sizes (a symbolic free dim on the right: symcontract_rhs.go), nil
	// at the bound's.
	symN value.Value
	// con is a symbolic batched product contracting a symbolic dim (symcontract.go), nil for
	// another; batchSt holds, per operand and batch dim, a strided operand's batch stride at the
	// run's sizes, nil where it is the bound's.
	con     *contraction
	batchSt [2][]value.Value
}

// tile declares the kernel's shared array name of n elem's and takes its 32-bit address (in the
// block being built: the entry block).
func (mm *gemm) tile(name string, n int, elem types.Type) *ir.Global {
	kg := mm.kg
	gl := kg.md.sharedArray(kg.name+"_"+name, n, elem, 16)
	if mm.shBase == nil {
		mm.shBase = map[*ir.Global]value.Value{}
	}
	mm.shBase[gl] = kg.b.NewPtrToInt(gl, types.I32)
	return gl
}

// shAddr is the 32-bit shared address of byte off of tile, for an inline asm's "r" operand.
func (mm *gemm) shAddr(tile *ir.Global, off value.Value) value.Value {
	return mm.kg.add(mm.shBase[tile], off)
}

// side is one operand's copies into its shared tiles.
type side struct {
	op     plan.GEMMOperand
	d      irg.DType // element type
	rows   int       // free rows of the tile
	df, dk []int     // copy i of the thread is at (f0+df[i], kq+dk[i])
	// idle is set when only threads below the copy map's Threads copy (a tile of fewer
	// elements than threads): true in the others.
	idle   value.Value
	nFree  int
	mSide  bool       // A's free rows, which a symbolic kernel bounds by its M (freeBelow)
	tile   *ir.Global // FFMA: two buffers of GEMMTileK rows of rows+GEMMPad floats
	f0, kq value.Value
	f0tile value.Value
	// copyAt is the global address and validity of copy i at k step k0 (strided operands and
	// conv2d's image); valueAt, for a generic operand, its value (0 outside).
	copyAt  func(k0 value.Value, i int) (src, ok value.Value)
	valueAt func(k0 value.Value, i int) (value.Value, error)
}

// prologue reads the block's position (tile origin m0, n0; batch element blockIdx.z, whose
// coordinates are derived here, in the entry block) and zeroes the 64 accumulators; it returns
// the thread index.
func (mm *gemm) prologue() value.Value {
	kg, p := mm.kg, mm.p
	tid := kg.sreg("tid.x")
	bx, by := kg.sreg("ctaid.x"), kg.sreg("ctaid.y")
	mm.bz = kg.sreg("ctaid.z")
	mm.m0, mm.n0 = kg.mul(by, plan.GEMMTileM), kg.mul(bx, p.TileN)
	mm.bidx = mm.batchIndex() // symcontract_after.go
	for d := range p.Batch {
		kg.coord(mm.bidx, d)
	}
	mm.acc = make([]*ir.InstAlloca, 8*p.ColRegs)
	for i := range mm.acc {
		mm.acc[i] = kg.b.NewAlloca(types.Float)
		kg.b.NewStore(constant.NewFloat(types.Float, 0), mm.acc[i])
	}
	mm.symPrologue()
	return tid
}

func (mm *gemm) emit() error {
	kg, p := mm.kg, mm.p
	tid := mm.prologue()
	tx, ty := kg.rem(tid, 16), kg.div(tid, 16)
	// conv2d's GEMM rows are pixels, contiguous in the NCHW output: threads run along them.
	mm.rowT, mm.colT = ty, tx
	if p.Conv != nil {
		mm.rowT, mm.colT = tx, ty
	}
	a, err := mm.side(p.A, plan.GEMMTileM, p.M, mm.m0, tid, "A")
	if err != nil {
		return err
	}
	b, err := mm.side(p.B, p.TileN, p.N, mm.n0, tid, "B")
	if err != nil {
		return err
	}
	if p.Conv != nil {
		mm.convCopier(a)
	}
	sides := []*side{a, b}
	nk := (p.K + plan.GEMMTileK - 1) / plan.GEMMTileK
	if err := mm.issue(sides, ci(0), ci(0)); err != nil {
		return err
	}
	mm.waitAll()
	kg.barrier()
	if nk == 1 {
		mm.compute(a, b, ci(0))
	} else {
		nkRun := mm.kSteps(plan.GEMMTileK)
		kg.loopTo(ci(0), ci(1), nkRun, func(kt value.Value) {
			cur := kg.b.NewAnd(kt, ci(1))
			next := kg.b.NewAdd(kt, ci(1))
			kg.branch(kg.b.NewICmp(enum.IPredULT, next, nkRun), "prefetch", func() {
				if e := mm.issue(sides, kg.mul(next, plan.GEMMTileK), kg.b.NewXor(cur, ci(1))); e != nil && err == nil {
					err = e
				}
			})
			mm.compute(a, b, cur)
			mm.waitAll()
			kg.barrier()
		})
		if err != nil {
			return err
		}
	}
	if err := mm.epilogue(); err != nil {
		return err
	}
	kg.b.NewRet(nil)
	return nil
}

// side declares operand op's shared tiles and computes the thread's first copy.
func (mm *gemm) side(op plan.GEMMOperand, rows, nFree int, f0tile, tid value.Value, name string) (*side, error) {
	kg := mm.kg
	cm := op.Copies(rows)
	sd := &side{op: op, d: irg.F32, rows: rows, df: cm.DF[:cm.N], dk: cm.DK[:cm.N], nFree: nFree, mSide: name == "A", f0tile: f0tile}
	if cm.Threads < plan.GEMMThreads {
		sd.idle = kg.b.NewICmp(enum.IPredUGE, tid, ci(cm.Threads))
	}
	n := 2 * plan.GEMMTileK * (rows + plan.GEMMPad)
	sd.tile = mm.tile("tile"+name, n, types.Float)
	if cm.AlongK {
		sd.f0, sd.kq = kg.add(f0tile, kg.div(tid, plan.GEMMTileK)), kg.rem(tid, plan.GEMMTileK)
	} else {
		sd.f0, sd.kq = kg.add(f0tile, kg.rem(tid, rows)), kg.div(tid, rows)
	}
	mm.copier(sd)
	return sd, nil
}

// copier sets the copies of a side whose f0, kq, df and dk are set: through the views for a
// generic operand, else at strided addresses.
func (mm *gemm) copier(sd *side) {
	kg, op, nFree := mm.kg, sd.op, sd.nFree
	switch {
	case mm.symCopies(op):
		mm.symCopier(sd) // symstride_gemm.go, a fold's symfold_view.go
		return
	case op.View != nil:
		mm.genericCopier(sd)
		return
	}
	// Strided: element Off + batch offset + clamp(f0)·FreeSt + k·KSt, plus each copy's
	// constant distance.
	base := kg.ptr[op.Buffer]
	var off value.Value = ci(op.Off)
	for i := range mm.p.Batch {
		off = mm.batchOffset(sd, i, kg.coord(mm.bidx, i), off) // symcontract.go
	}
	first := kg.add(off, kg.mul(kg.clamp(sd.f0, nFree), op.FreeSt))
	safe := kg.elemPtr(sd.d, base, off)
	sd.copyAt = func(k0 value.Value, i int) (value.Value, value.Value) {
		kc := kg.add(k0, sd.kq)
		// Signed compares: a bound ≤ 0 means the copy never lies inside.
		ok := kg.b.NewAnd(kg.b.NewICmp(enum.IPredSLT, kc, mm.kBelow(sd.dk[i])),
			kg.b.NewICmp(enum.IPredSLT, sd.f0, mm.freeBelow(sd, sd.df[i])))
		e := kg.add(kg.add(first, kg.mul(kc, op.KSt)), ci(sd.df[i]*op.FreeSt+sd.dk[i]*op.KSt))
		src := kg.b.NewGetElementPtr(memType(sd.d), base, e)
		return kg.b.NewSelect(ok, src, safe), ok
	}
}

// genericCopier evaluates a generic operand's copy i through its views at clamped
// coordinates (so every read stays inside), 0 where the copy lies outside, in register form.
func (mm *gemm) genericCopier(sd *side) {
	kg, op := mm.kg, sd.op
	s := op.View.Type.Shape
	sd.valueAt = func(k0 value.Value, i int) (value.Value, error) {
		f := kg.add(sd.f0, ci(sd.df[i]))
		kk := kg.add(kg.add(k0, sd.kq), ci(sd.dk[i]))
		ok := kg.b.NewAnd(kg.b.NewICmp(enum.IPredSLT, f, ci(sd.nFree)), kg.b.NewICmp(enum.IPredSLT, kk, ci(mm.p.K)))
		f, kk = kg.clamp(f, sd.nFree), kg.clamp(kk, mm.p.K)
		c := make([]value.Value, s.Rank())
		for j, d := range op.BatchDims {
			c[d] = kg.coord(mm.bidx, j)
		}
		for _, grp := range []struct {
			dims []int
			lin  value.Value
		}{{op.FreeDims, f}, {op.ContractDims, kk}} {
			sizes := make(irg.Shape, len(grp.dims))
			for j, d := range grp.dims {
				sizes[j] = s[d]
			}
			x := newIndexLin(sizes, grp.lin)
			for j, d := range grp.dims {
				c[d] = kg.coord(x, j)
			}
		}
		v, err := kg.eval(op.View, newIndexCoords(s, c))
		if err != nil {
			return nil, err
		}
		return kg.b.NewSelect(ok, v, constVal(sd.d, 0)), nil
	}
}

// convCopier addresses conv2d's image side: the pixel of a thread's copies is fixed (the copy
// map runs along pixels), so its coordinates are computed once; taps in the padding or past K
// copy nothing (zero fill).
func (mm *gemm) convCopier(sd *side) {
	kg, cs := mm.kg, mm.p.Conv
	m := kg.clamp(sd.f0, mm.p.M)
	okM := kg.b.NewICmp(enum.IPredSLT, sd.f0, mm.mBelow(0))
	n, oh, ow := mm.pixel(m)
	ih0 := kg.sub(kg.mul(oh, cs.Stride[0]), ci(cs.Pad[0]))
	iw0 := kg.sub(kg.mul(ow, cs.Stride[1]), ci(cs.Pad[1]))
	// The image's channels are all groups'; group z reads channels z·C...
	img := kg.add(kg.mul(n, cs.C*cs.Groups*cs.H*cs.W), kg.mul(mm.bz, cs.C*cs.H*cs.W))
	base := kg.ptr[mm.p.Dot.Args[0]]
	safe := kg.elemPtr(sd.d, base, ci(0))
	sd.copyAt = func(k0 value.Value, i int) (value.Value, value.Value) {
		kk := kg.add(kg.add(k0, sd.kq), ci(sd.dk[i]))
		ok := kg.b.NewAnd(kg.b.NewICmp(enum.IPredSLT, kk, ci(mm.p.K)), okM)
		taps := cs.KH * cs.KW
		c, t := kg.div(kk, taps), kg.rem(kk, taps)
		ih := kg.add(ih0, kg.mul(kg.div(t, cs.KW), cs.Dil[0]))
		iw := kg.add(iw0, kg.mul(kg.rem(t, cs.KW), cs.Dil[1]))
		ok = kg.b.NewAnd(ok, kg.b.NewAnd(kg.inRange(ih, cs.H), kg.inRange(iw, cs.W)))
		off := kg.add(img, kg.add(kg.mul(kg.add(kg.mul(c, cs.H), ih), cs.W), iw))
		src := kg.b.NewGetElementPtr(memType(sd.d), base, off)
		return kg.b.NewSelect(ok, src, safe), ok
	}
}

// pixel is the image and output coordinates of GEMM row m: row-major over [N, OH, OW], or
// window-major when the epilogue pools (the window's pixels consecutive, row-major inside it).
func (mm *gemm) pixel(m value.Value) (n, oh, ow value.Value) {
	kg, cs := mm.kg, mm.p.Conv
	if cs.Pool == nil {
		plane := cs.OH * cs.OW
		r := kg.rem(m, plane)
		return kg.div(m, plane), kg.div(r, cs.OW), kg.rem(r, cs.OW)
	}
	t := kg.rem(m, cs.Win[0]*cs.Win[1])
	n, ph, pw := mm.window(m)
	return n, kg.add(kg.mul(ph, cs.Win[0]), kg.div(t, cs.Win[1])), kg.add(kg.mul(pw, cs.Win[1]), kg.rem(t, cs.Win[1]))
}

// window is the pooled output position (n, ph, pw) of the window holding GEMM row m.
func (mm *gemm) window(m value.Value) (n, ph, pw value.Value) {
	kg, cs := mm.kg, mm.p.Conv
	q := kg.div(m, cs.Win[0]*cs.Win[1])
	pooledW := cs.OW / cs.Win[1]
	plane := cs.OH / cs.Win[0] * pooledW
	r := kg.rem(q, plane)
	return kg.div(q, plane), kg.div(r, pooledW), kg.rem(r, pooledW)
}

// issue starts the copies of k step k0 into buffer buf and commits them as one group.
func (mm *gemm) issue(sides []*side, k0, buf value.Value) error {
	kg := mm.kg
	var err error
	for _, sd := range sides {
		copies := func() {
			rows := sd.rows + plan.GEMMPad
			// shared: buf·bufFloats + (kq+dk)·rows + (f0−f0tile) + df
			first := kg.add(kg.mul(buf, plan.GEMMTileK*rows), kg.add(kg.mul(sd.kq, rows), kg.sub(sd.f0, sd.f0tile)))
			for i := range sd.df {
				at := kg.add(first, ci(sd.dk[i]*rows+sd.df[i]))
				if sd.valueAt != nil {
					v, e := sd.valueAt(k0, i)
					if e != nil {
						err = e
						return
					}
					dst := kg.b.NewGetElementPtr(sd.tile.ContentType, sd.tile, ci(0), at)
					dst.InBounds = true
					kg.b.NewStore(v, dst)
					continue
				}
				src, ok := sd.copyAt(k0, i)
				n := kg.b.NewSelect(ok, ci(4), ci(0))
				kg.asm("cp.async.ca.shared.global [$0], [$1], 4, $2;", "r,l,r,~{memory}", mm.shAddr(sd.tile, kg.mul(at, 4)), src, n)
			}
		}
		if sd.idle == nil {
			copies()
		} else {
			kg.branch(kg.b.NewXor(sd.idle, constant.True), "copy", copies)
		}
		if err != nil {
			return err
		}
	}
	kg.asm("cp.async.commit_group;", "~{memory}")
	return nil
}

// waitAll waits for this thread's cp.async copies.
func (mm *gemm) waitAll() { mm.kg.asm("cp.async.wait_group 0;", "~{memory}") }

// asm calls one PTX instruction that returns nothing as inline assembly (libNVVM 11.8 has
// no intrinsic for it: docs/codegen.md lists each).
func (kg *kgen) asm(text, constraints string, args ...value.Value) {
	kg.asmRet(types.Void, text, constraints, args...)
}

// compute multiplies buffer cur's tiles into the accumulators: per k, two 128-bit loads of
// A's column and of B's row (one load of ColRegs floats for a narrow tile), then the FMAs.
func (mm *gemm) compute(a, b *side, cur value.Value) {
	kg := mm.kg
	rn := mm.p.ColRegs
	// load reads w floats (w-aligned) at h·64 past position pos's first.
	load := func(sd *side, pos value.Value, w, kk, h int) []value.Value {
		rows := sd.rows + plan.GEMMPad
		i := kg.add(kg.mul(cur, plan.GEMMTileK*rows), kg.add(kg.mul(pos, w), ci(kk*rows+h*64)))
		ptr := kg.b.NewGetElementPtr(sd.tile.ContentType, sd.tile, ci(0), i)
		ptr.InBounds = true
		if w == 1 {
			ld := kg.b.NewLoad(types.Float, ptr)
			ld.Align = 4
			return []value.Value{ld}
		}
		vt := types.NewVector(uint64(w), types.Float)
		pv := types.NewPointer(vt)
		pv.AddrSpace = 3
		ld := kg.b.NewLoad(vt, kg.b.NewBitCast(ptr, pv))
		ld.Align = ir.Align(4 * w)
		out := make([]value.Value, w)
		for j := range out {
			out[j] = kg.b.NewExtractElement(ld, ci(j))
		}
		return out
	}
	fma := kg.md.declare("llvm.fma.f32", types.Float, types.Float, types.Float, types.Float)
	cw := plan.RegColStep(rn)
	for kk := range plan.GEMMTileK {
		av := append(load(a, mm.rowT, 4, kk, 0), load(a, mm.rowT, 4, kk, 1)...)
		var bv []value.Value
		for h := range rn / cw {
			bv = append(bv, load(b, mm.colT, cw, kk, h)...)
		}
		for i := range 8 {
			for j := range rn {
				acc := mm.acc[i*rn+j]
				kg.b.NewStore(kg.b.NewCall(fma, av[i], bv[j], kg.b.NewLoad(types.Float, acc)), acc)
			}
		}
	}
}
