package nvvm

import (
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// 16-byte copies for the tensor cores' generic operands at the run's sizes, as codegen/ptx's
// symchunk.go, in the case decided at build time. A generic side of a symbolic kernel (read
// through views: a fold's operand merging attention's heads back) is copied element by element
// (symCopier). Where every size along the side's contiguous dim down its views to the buffer
// (through a reshape, both its last sizes; the buffer's last) is a multiple of the chunk at
// every size of the run, a chunk of 16 bytes is 16 contiguous, 16-byte aligned bytes of the
// buffer: the side copies chunks instead, one cp.async of the chunk's first element's address
// through the views each, with the copy map of chunks codegen/ptx lays out. A chunk starts at a
// multiple of its size in a dim whose size it divides, so it lies wholly inside or wholly past
// the run's K and M (zero-filled, reading nothing, as the element copies): the shared tiles,
// and so the products, are the element copies' bit for bit. Sizes that only the run decides
// keep the element copies here (codegen/ptx branches on a launch-uniform predicate), and so
// do tf32 sides (codegen/ptx copies 4 floats a chunk).

// symChunkSide returns side si's plan with chunk copies when its generic operand op allows them
// at every run's size, and whether it does.
func (mm *gemm) symChunkSide(si int, op plan.GEMMOperand, pl plan.MMASide, eb int) (plan.MMASide, bool) {
	if mm.symv == nil || op.View == nil || eb != 2 || !mm.symCopies(op) {
		return pl, false
	}
	if si == 0 && mm.p.Conv != nil || si == 1 && pl.KContig && mm.p.ColRegs < 8 {
		return pl, false // conv2d's image; a narrow tile's B buffer holds only its element copies' rows
	}
	c := 16 / eb
	if !symChunkable(op, pl.KContig, mm.symv.sizes, c) {
		return pl, false
	}
	pl.Chunk, pl.Elem = c, false
	pl.PerRow, pl.DF, pl.DK = chunkCopies(pl.KContig, mm.p.MMA.BK, c, []int{plan.GEMMTileM, mm.p.TileN}[si])
	return pl, true
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

// symChunkable reports whether chunks of c elements along operand op's contiguous dim (k when
// kContig, else its last free dim) are contiguous and aligned in its buffer at every size of
// the run: each size along that dim down the views is a multiple of c at every size.
func symChunkable(op plan.GEMMOperand, kContig bool, sizes map[*irg.Value][]sym.Expr, c int) bool {
	v := op.View
	s := plan.SymSizes(v, sizes)
	grp := op.FreeDims
	if kContig {
		grp = op.ContractDims
	}
	d := len(s) - 1
	if len(grp) == 0 || grp[len(grp)-1] != d {
		return false
	}
	divides := func(e sym.Expr) bool { return symAlign(e)%c == 0 }
	if !divides(s[d]) {
		return false
	}
	for {
		out := plan.SymSizes(v, sizes)
		switch v.Op {
		case irg.OpInput, irg.OpParam:
			// Every stride but the last is a multiple of the last size.
			return d == len(out)-1 && divides(out[d])
		}
		in := plan.SymSizes(v.Args[0], sizes)
		switch v.Op {
		case "transpose":
			d = v.Attrs.Ints("perm")[d]
		case "slice":
			start, step := v.Attrs.Ints("start"), v.Attrs.Ints("stride")
			if step != nil && step[d] != 1 || start[d]%c != 0 {
				return false
			}
		case "broadcast_in_dim":
			from := -1
			for i, o := range v.Attrs.Ints("dims") {
				if o == d && !plan.IsOne(in[i]) {
					from = i
				}
			}
			if from < 0 {
				return false
			}
			d = from
		case "reshape":
			// Linear indices: c consecutive ones from a multiple of c stay in one row of the
			// input's last dim when c divides it.
			if d != len(out)-1 || len(in) == 0 || !divides(out[d]) || !divides(in[len(in)-1]) {
				return false
			}
			d = len(in) - 1
		default:
			return false
		}
		v = v.Args[0]
	}
}

// symAlign is the largest n dividing e at every size: the gcd of its coefficients.
func symAlign(e sym.Expr) int {
	c, ms, _ := e.Monomials()
	g := max(c, -c)
	for _, m := range ms {
		a, b := g, max(m.Coef, -m.Coef)
		for b != 0 {
			a, b = b, a%b
		}
		g = a
	}
	return int(g)
}
