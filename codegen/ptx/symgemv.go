package ptx

// gemvRowShuffles sums a symbolic GEMV's partials across the lanes that share a column (the
// butterfly offsets first, 2·first, ... below stop), row by row, skipping the rows from M on as
// the k loop does (a branch uniform over the launch, so every shuffle still runs with the whole
// warp): at half the bound the butterflies of the rows past M were most of the instructions
// the symbolic template added (docs/perf.md).
func gemvRowShuffles(b *builder, s *symGEMV, acc []string, vecCols, first, stop int, t string) {
	for m := range len(acc) / vecCols {
		gemvRowGuard(b, s, m)
		for off := first; off < stop; off *= 2 {
			for _, r := range acc[m*vecCols : (m+1)*vecCols] {
				b.ins("shfl.sync.bfly.b32", t, r, imm(off), "0x1f", "0xffffffff")
				b.ins("add.f32", r, r, t)
			}
		}
	}
	gemvRowsEnd(b, s)
}

// gemvKLoops emits a symbolic GEMV's k loop once per row count r = 1..M (kLoop(r) computes rows
// 0..r−1) and branches, once before them, to the one for the run's m (at least 1 here: a run
// of no rows has left): each k step then computes exactly the run's rows with no test per row,
// as the static template at m rows does, for M copies of the loop in the code.
func gemvKLoops(gn *gen, s *symGEMV, rows int, kLoop func(rows int) error) error {
	b := gn.e.b
	done := b.label("k_loops_done")
	at := make([]string, rows+1)
	for r := 1; r < rows; r++ {
		at[r] = b.label("k_rows")
		b.braIf(s.past[r], at[r]) // m <= r, and m > r-1 by the branches before
	}
	for r := rows; r >= 1; r-- {
		if r < rows {
			b.place(at[r])
		}
		gn.reset()
		if err := kLoop(r); err != nil {
			return err
		}
		if r > 1 {
			b.bra(done)
		}
	}
	b.place(done)
	gn.reset()
	return nil
}
