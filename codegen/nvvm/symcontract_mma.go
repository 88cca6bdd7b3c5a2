package nvvm

import (
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir/sym"
)

// Batched products at symbolic sizes on tensor cores (mma.go), as codegen/ptx's tensor-core
// template runs them: contracting a symbolic dim (scores·V, xᵀ·y per batch element) or with a
// symbolic free dim on the right (q·kᵀ by hand). The kernel is the static template's with the
// run's sizes where symcontract*.go put them on FFMA: K at the run bounds the k steps and
// zero-fills the copies at or past it, M and N at the run bound the copies, the edge checks and
// the tiles, and the result is laid out at the run's sizes. What differs from FFMA is the shared
// tiles' layout: codegen/plan's MMA sides are codegen/ptx's for the operands at the bound, and
// symContract re-lays the operands out (generic, or strided with the run's batch stride), so
// mmaContract re-plans each side as codegen/ptx's mmaSides does for the layout its template
// reads. A generic side copies element by element (16-byte chunks where symchunk.go allows, by
// a launch-uniform branch where the run's sizes decide); a strided side copies chunks aligned
// at every size (a symbolic batch stride counts as the largest number dividing it at every
// size); with K symbolic a contiguous K is read through the generic copier (symStrided), since
// a chunk could cross the run's K. With N symbolic the
// epilogue stores element by element from the fragments (a pair or a staged group of columns
// could straddle the run's row end). An epilogue reading a buffer of the run's sizes through a
// broadcast or another view reads it as FFMA's does (symcontract_bcast.go). The accumulators
// take their mma in the static template's order, so results are codegen/ptx's bit for bit.

// mmaContract returns tensor-core plan p with its sides planned for symbolic product c's
// operand layouts, and its epilogue codegen/ptx's for them.
func mmaContract(p plan.GEMM, c *contraction) plan.GEMM {
	q := *p.MMA
	for si, op := range []plan.GEMMOperand{p.A, p.B} {
		q.Sides[si] = mmaSide(p, si, op, c.batchSt[si])
	}
	if c.symN {
		p.ColPairs, q.Staged = false, false
	}
	p.MMA = &q
	return p
}

// mmaSide is codegen/ptx's mmaSides for side si (operand op, its batch strides at the run st,
// nil for a generic operand) of a dot's tensor-core plan p: the shared rows, the copies'
// chunk and the copy map.
func mmaSide(p plan.GEMM, si int, op plan.GEMMOperand, st []sym.Expr) plan.MMASide {
	eb, bk := p.MMA.EB, p.MMA.BK
	pad := 16 / eb // 16 bytes of padding per shared row
	sd := plan.MMASide{KContig: op.KSt == 1}
	switch {
	case sd.KContig:
		sd.RowH = bk + pad
		sd.BufBytes = plan.GEMMTileM * sd.RowH * eb
	case eb == 4:
		sd.RowH = plan.GEMMTileM + 8 // tf32 [k][free] rows read one word per fragment register
		sd.BufBytes = bk * sd.RowH * eb
	default:
		sd.RowH = plan.GEMMTileM + pad
		sd.BufBytes = bk * sd.RowH * eb
	}
	if op.View != nil {
		sd.Chunk, sd.Elem = 1, eb != 4
	} else {
		contig := p.M
		if si == 1 {
			contig = p.N
		}
		if sd.KContig {
			contig = p.K
		}
		strides := []int{op.FreeSt, op.KSt}
		for j, s := range op.BatchStrides {
			if st != nil && !isConst(st[j]) {
				s = plan.Align(st[j])
			}
			strides = append(strides, s)
		}
		// A chunk starts aligned wherever it lies: the offset and every stride but the
		// contiguous one are multiples of it.
		aligned := func(n int) bool {
			if contig%n != 0 || op.Off%n != 0 {
				return false
			}
			for _, s := range strides {
				if s != 1 && s%n != 0 {
					return false
				}
			}
			return true
		}
		switch {
		case aligned(16 / eb):
			sd.Chunk = 16 / eb
		case aligned(4 / eb):
			sd.Chunk = 4 / eb
		default:
			sd.Chunk, sd.Elem = 1, true
		}
	}
	rows := plan.GEMMTileM
	if si == 1 {
		rows = p.TileN
		if sd.KContig && p.ColRegs < 8 {
			sd.BufBytes = max(16*p.ColRegs, plan.GEMMThreads*sd.Chunk/bk) * sd.RowH * eb
		}
	}
	sd.PerRow, sd.DF, sd.DK = chunkCopies(sd.KContig, bk, sd.Chunk, rows)
	return sd
}
