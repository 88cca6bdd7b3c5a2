package nvvm

import (
	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// 16-byte copies for the tensor cores' generic operands at the run's sizes, as codegen/ptx's
// symchunk.go. A generic side of a symbolic kernel (read through views: a fold's operand
// merging attention's heads back, the scores [b, t, seq]) is copied element by element
// (symCopier). Where every size along the side's contiguous dim down its views to the buffer
// (through a reshape, both its last sizes; the buffer's last) is a multiple of the chunk at the
// run, a chunk of 16 bytes is 16 contiguous, 16-byte aligned bytes of the buffer: the side
// copies chunks instead, one cp.async of the chunk's first element's address through the views
// each, with the copy map of chunks codegen/ptx lays out. Sizes that are multiples of the chunk
// at every size decide at build time; the others make a predicate computed once per launch from
// the dims' parameters, and each k step takes the chunk copies or the element copies by a
// branch uniform over the launch (symChunkIssue). A chunk starts at a multiple of its size in a
// dim whose size it divides, so it lies wholly inside or wholly past the run's K and M
// (zero-filled, reading nothing, as the element copies): the shared tiles, and so the
// products, are the element copies' bit for bit. tf32 sides (f32 under --tf32) take chunks
// of 4 floats alike, as codegen/ptx's.

// symChunkSide returns side si's plan with chunk copies when its generic operand op allows them
// at some run's sizes, whether it does, and the sizes that must be multiples of the chunk at the
// run for it (none: at every run).
func (mm *gemm) symChunkSide(si int, op plan.GEMMOperand, pl plan.MMASide, eb int) (plan.MMASide, []sym.Expr, bool) {
	if mm.symv == nil || op.View == nil || eb != 2 && eb != 4 || !mm.symCopies(op) {
		return pl, nil, false
	}
	if si == 0 && mm.p.Conv != nil || si == 1 && pl.KContig && mm.p.ColRegs < 8 {
		return pl, nil, false // conv2d's image; a narrow tile's B buffer holds only its element copies' rows
	}
	c := 16 / eb
	conds, ok := symChunkSizes(op, pl.KContig, mm.symv.sizes, c)
	if !ok {
		return pl, nil, false
	}
	pl.Chunk, pl.Elem = c, false
	pl.PerRow, pl.DF, pl.DK = chunkCopies(pl.KContig, mm.p.MMA.BK, c, []int{plan.GEMMTileM, mm.p.TileN}[si])
	return pl, conds, true
}

// symMultiple is whether every size of conds is a multiple of c (a power of two) at the run,
// as codegen/ptx's: the low bits of their bitwise or are zero (modulo 2^32).
func (mm *gemm) symMultiple(conds []sym.Expr, c int) value.Value {
	b := mm.kg.b
	var acc value.Value
	for _, e := range conds {
		r := mm.symv.eval(e)
		if acc == nil {
			acc = r
			continue
		}
		acc = b.NewOr(acc, r)
	}
	return b.NewICmp(enum.IPredEQ, b.NewAnd(acc, ci(c-1)), ci(0))
}

// symChunkIssue issues a k step's copies of a side whose chunks the run decides: the chunk
// copies where when holds, the element copies otherwise, by a branch uniform over the launch
// (blocks chunk_copies and elem_copies, as codegen/ptx's labels).
func (mm *gemm) symChunkIssue(when value.Value, chunks, elems func() error) error {
	kg := mm.kg
	fast, slow, done := kg.block("chunk_copies"), kg.block("elem_copies"), kg.block("copies_done")
	kg.b.NewCondBr(when, fast, slow)
	var err error
	for _, arm := range []struct {
		b    *ir.Block
		body func() error
	}{{fast, chunks}, {slow, elems}} {
		kg.b = arm.b
		kg.cache = map[cacheKey]value.Value{}
		if e := arm.body(); e != nil && err == nil {
			err = e
		}
		kg.b.NewBr(done)
	}
	kg.cache = map[cacheKey]value.Value{}
	kg.b = done
	return err
}

// chunkCopies is codegen/ptx's copy map of a side of chunks of c elements for k steps of bk: a
// tile row (free when k is contiguous, else k) is perRow chunks; copy i of a thread sits (df[i],
// dk[i]) from its first, those past the tile's rows free rows skipped.
func chunkCopies(kContig bool, bk, c, rows int) (perRow int, df, dk []int) {
	per := plan.GEMMTileM * bk / c / plan.GEMMThreads
	if kContig {
		perRow = bk / c
		for i := range per {
			if r := i * plan.GEMMThreads / perRow; r < rows {
				df, dk = append(df, r), append(dk, 0)
			}
		}
		return perRow, df, dk
	}
	perRow = plan.GEMMTileM / c
	for i := range per {
		df, dk = append(df, 0), append(dk, i*plan.GEMMThreads/perRow)
	}
	return perRow, df, dk
}

// symChunkCopier sets side sd's copies to chunks: copy i's address is its first element's
// through the views (symAt), its validity the element copy's.
func (mm *gemm) symChunkCopier(sd *side) {
	kg := mm.kg
	sd.valueAt = nil
	sd.copyAt = func(k0 value.Value, i int) (value.Value, value.Value) {
		ok, buf, lin := mm.symAt(sd, k0, i)
		return kg.elemPtr(sd.op.View.Type.DType, kg.ptr[buf], lin), ok
	}
}

// symChunkSizes is plan.ChunkSizes for operand op: its contiguous dim is the last of its
// contracted dims when kContig, else of its free dims.
func symChunkSizes(op plan.GEMMOperand, kContig bool, sizes map[*irg.Value][]sym.Expr, c int) (conds []sym.Expr, ok bool) {
	grp := op.FreeDims
	if kContig {
		grp = op.ContractDims
	}
	return plan.ChunkSizes(op.View, grp, sizes, c)
}
