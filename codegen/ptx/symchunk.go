package ptx

import (
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// 16-byte copies for the tensor cores' generic operands at the run's sizes. A generic side of
// a symbolic kernel (read through views, or a buffer whose row stride follows the sizes: the
// scores [b, t, seq]) is copied element by element, each copy's coordinates delinearized at the
// run (symview.go). Where a chunk of 16 bytes along the side's contiguous dim (its last: k when
// stored [free][k], else free) is 16 contiguous, 16-byte aligned bytes of the buffer at the run,
// the side copies chunks instead: the same generic address of the chunk's first element, one
// cp.async per 16 bytes. Whether they are depends on sizes that must be multiples of the chunk:
// those of the contiguous dim down the views (through a reshape, both its last sizes), and the
// buffer's last one. Those that are constants decide at build time; the others make a
// predicate computed once per launch from the size parameters, and each k step takes the chunk
// copies or the element copies by a branch uniform over the launch. A chunk starts at a
// multiple of its size in a dim whose size it divides, so it lies wholly inside or wholly past
// the run's K (zero-filled, as the element copies): the shared tiles, and so the products, are
// the element copies' bit for bit. A static build takes the same decision with every size a
// constant: at build time, without a branch (its copier, genericCopier, keeps an out-of-range
// chunk's clamped address aligned).

// symChunk is a generic side's chunk copies: the side copying them, and the predicate (true
// when the run's sizes allow them) that chooses them over the element copies.
type symChunk struct {
	sd   *mmaSide
	when string
}

// symChunks decides, for each side, the chunk copies of a generic side of eb-byte elements
// (16-bit or tf32), in a symbolic kernel or a static one: a side whose chunks are aligned at
// every size copies them instead (nil returned for it); one whose chunks depend on the run gets
// both. Called in the prologue, it hoists a symbolic kernel's generic sides' buffer strides too.
func (mm *matmul) symChunks(sides []*mmaSide, eb int) []*symChunk {
	out := make([]*symChunk, len(sides))
	if eb != 2 && eb != 4 {
		return out
	}
	c := 16 / eb
	for si, sd := range sides {
		if sd.l.view != nil && mm.symv != nil {
			mm.symv.hoist(mm.e.b, sd.l.view)
		}
		// A narrow tile's B buffer holds only the rows its element copies fill (mmaSides).
		if sd.l.view == nil || sd.q != nil || si == 0 && mm.conv != nil || si == 1 && sd.kContig && mm.rn < 8 {
			continue
		}
		conds, ok := mm.symChunkSizes(sd.l, c)
		if !ok {
			continue
		}
		if len(conds) == 0 {
			sd.chunk, sd.elem = c, false
			continue
		}
		f := *sd
		f.chunk, f.elem, f.copyAt = c, false, nil
		out[si] = &symChunk{sd: &f, when: mm.symMultiple(conds, c)}
	}
	return out
}

// symMultiple emits a predicate that every size of conds is a multiple of c (a power of two)
// at the run: the low bits of their bitwise or are zero.
func (mm *matmul) symMultiple(conds []sym.Expr, c int) string {
	b := mm.e.b
	acc := ""
	for _, e := range conds {
		r := mm.symv.eval(b, e)
		if acc == "" {
			acc = r
			continue
		}
		o := b.reg(rU32)
		b.ins("or.b32", o, acc, r)
		acc = o
	}
	low, p := b.reg(rU32), b.reg(rPred)
	b.ins("and.b32", low, acc, imm(c-1))
	b.ins("setp.eq.u32", p, low, "0")
	return p
}

// symChunkSizes is plan.ChunkSizes for generic operand l: its contiguous dim is the last of its
// contracted dims where k is contiguous, else of its free dims.
func (mm *matmul) symChunkSizes(l operandLayout, c int) (conds []sym.Expr, ok bool) {
	var sizes map[*ir.Value][]sym.Expr // a static build's: every size its shape's constant
	if mm.symv != nil {
		sizes = mm.symv.sizes
	}
	grp := l.freeDims
	if l.kSt == 1 {
		grp = l.contractDims
	}
	return plan.ChunkSizes(l.view, grp, sizes, c)
}
