package ptx

import (
	"fmt"
	"slices"

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
// every block reads them from L2, once per reduction, or once when they are staged in shared
// memory (gemv.StagedRows: LayerNorm's variance reads them again); the cost model counts that
// traffic.

// gemvRowPrologue emits the prologue of dot's lhs, whose reductions are reds, and returns the
// function that selects the row (0 ≤ m < p.M) the bound per-row values stand for: the k loop
// calls it before it evaluates row m's lhs. Every thread of the block must run it. A symbolic
// GEMV (s) computes, reads and holds the run's rows only (symgemvnorm.go).
func (gn *gen) gemvRowPrologue(dot *ir.Value, reds []*ir.Value, p gemv.Plan, tid string, s *symGEMV) (func(m int), error) {
	b, a := gn.e.b, gn.a
	k := p.K
	warps := gemv.Threads / 32
	part := b.sharedArray("prologue_partials", 8*warps, 8)
	// Registers of the prologue's own, not the index arithmetic's shared ones: the finish
	// computes lane and warp too, and reusing these would keep them live through the k loop.
	lane, warp, partBase, slot := b.reg(rU32), b.reg(rU32), b.reg(rU32), b.reg(rU32)
	b.ins("and.b32", lane, tid, "31")
	b.ins("shr.u32", warp, tid, "5")
	b.ins("mov.u32", partBase, part)
	b.ins("mad.lo.u32", slot, warp, "8", partBase)
	if st := gemv.StagedRows(dot); st != nil {
		gn.stageRows(st, tid, p, s)
	}
	// The per-row values live in shared memory as f32 (exact for f16 and bf16 values), one slot
	// per (value, row), written by thread 0: registers would hold 2·M of them through the k loop,
	// beside its accumulators and vector loads, and spill.
	held := append(slices.Clone(reds), rowOperands(dot, p)...)
	rowsBase := b.sharedArray("prologue_rows", 4*p.M*len(held), 4) // addressed by symbol: no register
	t0 := b.reg(rPred)
	b.ins("setp.eq.u32", t0, tid, "0")
	cur := 0
	hold := func(i int, v *ir.Value, vals []val) {
		for m, x := range vals {
			symRowGuard(b, s, m)
			b.guarded(t0, "st.shared.f32", fmt.Sprintf("[%s+%d]", rowsBase, 4*(i*p.M+m)), gn.e.reg(gn.e.cast(x, ir.F32)))
		}
		gn.symRowsEnd(s)
		b.ins("bar.sync", "0")
		gn.bound[v] = func(*index) val {
			r := b.reg(rF32)
			b.ins("ld.shared.f32", r, fmt.Sprintf("[%s+%d]", rowsBase, 4*(i*p.M+cur)))
			return gn.e.cast(val{ir.F32, r}, v.Type.DType)
		}
	}
	for i, red := range reds {
		b.note("row prologue: %s over %d rows", gn.kernelGraph.Format(red), p.M)
		accT, combine, identity := accumulator(red)
		accs := make([]string, p.M)
		for m := range accs {
			accs[m] = b.reg(classOf(accT))
			gn.accMove(accs[m], gn.e.constVal(accT, identity))
		}
		gn.loopFrom(tid, imm(gemv.Threads), k, func(r string) error {
			defer gn.symRowsEnd(s)
			for m := range p.M {
				symRowGuard(b, s, m)
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
			symRowGuard(b, s, m) // uniform over the launch: the whole block skips the barriers
			vals[m] = gn.e.cast(gn.blockCombine(val{accT, accs[m]}, combine, lane, slot, partBase, warps), red.Type.DType)
		}
		gn.symRowsEnd(s)
		hold(i, red, vals)
	}
	b.note("row prologue: the per-row values the lhs broadcasts")
	for i, src := range held[len(reds):] {
		vals := make([]val, p.M)
		for m := range vals {
			symRowGuard(b, s, m)
			cur = m
			gn.reset()
			x, err := gn.eval(src, newIndexLin(src.Type.Shape, imm(m)))
			if err != nil {
				return nil, err
			}
			vals[m] = x
		}
		gn.symRowsEnd(s)
		hold(len(reds)+i, src, vals)
	}
	gn.reset()
	return func(m int) { cur = m }, nil
}

// stageRows evaluates s (gemv.StagedRows) once into shared memory as f32, every thread of the
// block a strided share of its elements, and binds it there: the reductions after the first and
// the k loop read it from shared memory, not through its buffers in L2 again. Exact for f16 and
// bf16, whose values f32 holds. A symbolic GEMV (sym) stages the run's rows only.
func (gn *gen) stageRows(s *ir.Value, tid string, p gemv.Plan, sym *symGEMV) {
	b, a := gn.e.b, gn.a
	n := s.Type.Shape.NumElements()
	b.note("row prologue: %s staged in shared memory", gn.kernelGraph.Format(s))
	stage := b.sharedArray("prologue_stage", 4*n, 16)
	base := b.reg(rU32)
	b.ins("mov.u32", base, stage)
	at := func(lin string) string {
		if c, ok := a.num(lin); ok {
			return fmt.Sprintf("[%s+%d]", stage, 4*c)
		}
		addr := b.reg(rU32)
		b.ins("mad.lo.u32", addr, lin, "4", base)
		return "[" + addr + "]"
	}
	gn.loopTo(tid, imm(gemv.Threads), gemvRowElems(b, sym, n, p.M), func(r string) error {
		x, err := gn.eval(s, newIndexLin(s.Type.Shape, r))
		if err != nil {
			return err
		}
		b.ins("st.shared.f32", at(r), gn.e.reg(gn.e.cast(x, ir.F32)))
		return nil
	})
	b.ins("bar.sync", "0")
	gn.reset()
	gn.bound[s] = func(x *index) val {
		r := b.reg(rF32)
		b.ins("ld.shared.f32", r, at(x.getLin(a)))
		return gn.e.cast(val{ir.F32, r}, s.Type.DType)
	}
}

// rowOperands lists the per-row values dot's lhs spreads over its rows (gemv.RowPrologue lays
// them out [..., 1], broadcast with identity dims), other than reductions, in graph order.
func rowOperands(dot *ir.Value, p gemv.Plan) []*ir.Value {
	var out []*ir.Value
	seen := map[*ir.Value]bool{}
	var walk func(v *ir.Value)
	walk = func(v *ir.Value) {
		if seen[v] {
			return
		}
		seen[v] = true
		for _, a := range v.Args {
			walk(a)
		}
		s := v.Type.Shape
		if v.Op != "broadcast_in_dim" || s.Rank() == 0 || s[s.Rank()-1] != p.K || s.NumElements() != p.M*p.K || !identityDims(v.Attrs.Ints("dims")) {
			return
		}
		src := v.Args[0]
		if rs := src.Type.Shape; rs.NumElements() != p.M || rs.Rank() != s.Rank() || rs[rs.Rank()-1] != 1 || src.Op == "reduce_sum" || slices.Contains(out, src) {
			return
		}
		out = append(out, src)
	}
	walk(dot.Args[0])
	return out
}

func identityDims(dims []int) bool {
	for i, d := range dims {
		if d != i {
			return false
		}
	}
	return true
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
