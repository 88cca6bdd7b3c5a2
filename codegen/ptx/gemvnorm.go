package ptx

import (
	"github.com/gcomp/gcomp/codegen/gemv"
	"github.com/gcomp/gcomp/ir"
)

// The GEMV template's row prologue (gemv.RowPrologue): a LayerNorm or RMSNorm whose only user is
// the product's lhs runs in the GEMV kernel. Before its k loop every block reduces its M rows
// over the full K, as the row template does (the same strided loop over 256 threads and the same
// warp-then-block combine, so the statistics have the row kernel's bits wherever K ≥ 256), and
// evaluates the per-row values the lhs broadcasts (the mean, 1/sqrt(var+eps)) once per row.
// The k loop then normalizes each lhs element as it loads it: the norm's output never goes to
// memory and its kernel disappears. The rows are small (768–2048 elements in LLM decoding) and
// every block reads them from L2, once per reduction; the cost model counts that traffic.

// gemvRowPrologue emits the prologue of dot's lhs, whose reductions are reds, and returns the
// function that selects the row (0 ≤ m < p.M) the bound per-row values stand for: the k loop
// calls it before it evaluates row m's lhs. Every thread of the block must run it.
func (gn *gen) gemvRowPrologue(dot *ir.Value, reds []*ir.Value, p gemv.Plan, tid string) (func(m int), error) {
	b, a := gn.e.b, gn.a
	lhs := dot.Args[0]
	k := p.K
	warps := gemv.Threads / 32
	part := b.sharedArray("prologue_partials", 8*warps, 8)
	lane, warp := a.rem(tid, 32), a.div(tid, 32)
	partBase := b.reg(rU32)
	b.ins("mov.u32", partBase, part)
	slot := a.reg(a.mad(warp, 8, partBase))
	cur := 0
	rowVals := map[*ir.Value][]val{}
	bind := func(v *ir.Value) {
		gn.bound[v] = func(*index) val { return rowVals[v][cur] }
	}
	for _, red := range reds {
		b.note("row prologue: %s over %d rows", gn.kernelGraph.Format(red), p.M)
		accT, combine, identity := accumulator(red)
		accs := make([]string, p.M)
		for m := range accs {
			accs[m] = b.reg(classOf(accT))
			gn.accMove(accs[m], gn.e.constVal(accT, identity))
		}
		gn.loopFrom(tid, imm(gemv.Threads), k, func(r string) error {
			for m := range p.M {
				cur = m
				x, err := gn.eval(red.Args[0], newIndexLin(red.Args[0].Type.Shape, a.add(r, imm(m*k))))
				if err != nil {
					return err
				}
				y, err := gn.e.binary(combine, val{accT, accs[m]}, gn.e.cast(x, accT))
				if err != nil {
					return err
				}
				gn.accMove(accs[m], y)
			}
			return nil
		})
		vals := make([]val, p.M)
		for m := range accs {
			vals[m] = gn.e.cast(gn.blockCombine(val{accT, accs[m]}, combine, lane, slot, partBase, warps), red.Type.DType)
		}
		rowVals[red] = vals
		bind(red)
	}
	// The per-row values the lhs spreads over its rows (laid out as they are: gemv.RowPrologue),
	// once per row.
	for _, v := range gn.kernelGraph.Values {
		s := v.Type.Shape
		if v.Op != "broadcast_in_dim" || s.Rank() == 0 || s[s.Rank()-1] != k || s.NumElements() != p.M*k {
			continue
		}
		src := v.Args[0]
		if rs := src.Type.Shape; rs.NumElements() != p.M || rs.Rank() != s.Rank() || rs[rs.Rank()-1] != 1 || rowVals[src] != nil || !identityDims(v.Attrs.Ints("dims")) {
			continue
		}
		if !reaches(v, lhs, map[*ir.Value]bool{}) {
			continue
		}
		vals := make([]val, p.M)
		for m := range vals {
			cur = m
			gn.reset()
			x, err := gn.eval(src, newIndexLin(src.Type.Shape, imm(m)))
			if err != nil {
				return nil, err
			}
			vals[m] = x
		}
		rowVals[src] = vals
		bind(src)
	}
	gn.reset()
	return func(m int) { cur = m }, nil
}

func identityDims(dims []int) bool {
	for i, d := range dims {
		if d != i {
			return false
		}
	}
	return true
}

// reaches reports whether to is v or is computed from it; seen holds the values already found
// not to be.
func reaches(v, to *ir.Value, seen map[*ir.Value]bool) bool {
	if v == to {
		return true
	}
	if seen[to] {
		return false
	}
	seen[to] = true
	for _, a := range to.Args {
		if reaches(v, a, seen) {
			return true
		}
	}
	return false
}

// NormPrologue reports whether g is a GEMV kernel with a row prologue: one dot_general that the
// GEMV template takes, whose lhs is a norm (gemv.RowPrologue) computed from buffers, and no
// reduction outside that norm.
func NormPrologue(g *ir.Graph) bool {
	kinds, count := contractionKinds(g)
	if len(kinds) != 2 || kinds[0] != "matmul" || kinds[1] != "reduce" || count["matmul"] != 1 {
		return false
	}
	for _, v := range live(g) {
		if v.Op == "dot_general" {
			_, ok := gemv.Of(v)
			return ok && len(gemv.RowPrologue(v)) == count["reduce"]
		}
	}
	return false
}
