package ptx

// A GEMV's row prologue (gemvnorm.go) and row outputs (gemvnormout.go) at symbolic sizes: the
// kernel's rows are the product's M (a decode step's batch), so the prologue reduces, stages,
// holds and writes rows 0..m−1 of the run only, behind the same launch-uniform row branches as
// the k loop's lane sums (symgemv.go); the whole block takes them, so the barriers of a skipped
// row's block reduction are skipped by every thread. Each row's arithmetic is the static
// kernel's, so a run at m rows gives the bits of the static kernel of m rows with the same plan.

// gemvRowElems is the loop end over a prologue value of n elements laid out as the plan's M
// rows: n, or for a symbolic GEMV (s) the run's m rows' elements, n/M per row.
func gemvRowElems(b *builder, s *symGEMV, n, rows int) string {
	if s == nil {
		return imm(n)
	}
	end := b.reg(rU32)
	b.ins("mul.lo.u32", end, s.m, imm(n/rows))
	return end
}

// symRowsEnd ends the rows symRowGuard skips (gemvRowsEnd) and forgets the values computed
// in them, which the code after the branch target may not read.
func (gn *gen) symRowsEnd(s *symGEMV) {
	if s != nil {
		gemvRowsEnd(gn.e.b, s)
		gn.reset()
	}
}

// symRowGuard is gemvRowGuard testing row i against m afresh: the prologue's rows do not keep
// the k loops' predicates live through its reductions (with its own, they spill on sm_90).
func symRowGuard(b *builder, s *symGEMV, i int) {
	if s != nil && i > 0 {
		past := b.reg(rPred)
		b.ins("setp.le.u32", past, s.m, imm(i))
		b.braIf(past, s.rowsDone)
	}
}

// symRowsPast gives s the predicates of the rows from 1 on anew (gemvSymbolic's), for the code
// after the prologue: the first ones are dead by then.
func symRowsPast(b *builder, s *symGEMV) {
	if s == nil {
		return
	}
	for i := 1; i < len(s.past); i++ {
		s.past[i] = b.reg(rPred)
		b.ins("setp.le.u32", s.past[i], s.m, imm(i))
	}
}
