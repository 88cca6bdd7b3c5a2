package ptx

// A batched product with a symbolic free dim on the right: q·kᵀ written by hand,
// [b, t, d]·[b, seq, d]ᵀ → [b, t, seq] (N is seq; with t = seq both free dims are symbolic), or
// a product whose right operand's columns follow the sizes. Laid out at the run's sizes, the
// right operand's batch stride follows N, and the result's row stride is N at the run. N at
// the run, evaluated from the dims, bounds the right operand's copies (zero fill past it), the
// epilogue's column checks and the column tiles (grid.x stays the bound's; a tile starting at
// or past N exits), and it is the result's row stride: every store lands where the static
// kernel built at the run's sizes puts it. Stores go in groups of columns where the run's N
// keeps a group in one row, else element by element (symcontract_rhs_store.go). K may be
// static (q·kᵀ) or symbolic.

// symColsPast makes n, N at the run's sizes (a multiple of align at every size), the template's
// N and the result's row stride, and sends the blocks whose column tile starts at or past it to
// the end.
func (mm *matmul) symColsPast(n string, align int) {
	b := mm.e.b
	mm.symN, mm.symNAlign = n, align
	x, past := b.reg(rU32), b.reg(rPred)
	b.ins("mov.u32", x, "%ctaid.x")
	b.ins("mul.lo.u32", x, x, imm(16*mm.rn))
	b.ins("setp.ge.u32", past, x, n)
	if mm.symEnd == "" {
		mm.symEnd = b.label("no_cols")
	}
	b.braIf(past, mm.symEnd)
}

// outLin is the result's element index of row r, column c of batch element bz: the result is
// [batch..., M, N] contiguous, at the run's M and N where they are symbolic.
func (mm *matmul) outLin(bz, r, c string) string {
	if mm.symN == "" {
		return mm.a.mad(mm.outRow(bz, r), mm.N, c)
	}
	o := mm.e.b.reg(rU32)
	mm.e.b.ins("mad.lo.s32", o, mm.a.reg(mm.outRow(bz, r)), mm.symN, mm.a.reg(c))
	return o
}

// outOffset is the element offset of row dr, column dc from an element of the result: dr·N +
// dc, N at the run's sizes when it is symbolic.
func (mm *matmul) outOffset(lin string, dr, dc int) string {
	if mm.symN == "" || dr == 0 {
		return mm.a.add(lin, imm(dr*mm.N+dc))
	}
	if r, ok := mm.symRowLin[dr]; ok && lin == mm.symRowBase {
		return mm.a.add(r, imm(dc))
	}
	o := mm.e.b.reg(rU32)
	mm.e.b.ins("mad.lo.s32", o, mm.symN, imm(dr), mm.a.reg(lin))
	return mm.a.add(o, imm(dc))
}

// colsBelow is the bound a column x is compared with (x < bound) to lie below N − d: N's
// register at the run's sizes less d when it is symbolic, else the immediate.
func (mm *matmul) colsBelow(d int) string {
	if mm.symN == "" {
		return imm(mm.N - d)
	}
	return mm.a.sub(mm.symN, imm(d))
}
