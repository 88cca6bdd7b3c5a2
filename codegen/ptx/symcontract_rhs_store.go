package ptx

import "fmt"

// The result's stores of a product with a symbolic N (symcontract_rhs.go). Its row stride is N
// at the run, so a group of four columns starting at a multiple of four lies in one row, 16-byte
// aligned (for 4-byte elements; 8-byte for 16-bit ones), exactly when the run's N is a multiple
// of four: then the epilogue takes the static kernel's groups (one vector store per group and
// vector loads of epilogue tensors of the result's sizes; on tensor cores the staged epilogue
// through shared memory); on tensor cores pairs where N is even only (as the static kernel at
// such an N), else it goes element by element. Where N's expression is a multiple of the width
// at every size that is decided at build time; otherwise branches uniform over the launch
// choose. Both epilogues compute the same values from the same accumulators: only the
// width of the accesses differs.

// symColsBranch emits epi, the epilogue, for a product with a symbolic N once per width w of
// ws (decreasing powers of two) with groups of w columns (mm.symCols = w), taken where the run's
// N is a multiple of w and of no wider one, and once element by element, taken otherwise: a
// chain of branches uniform over the launch. A width that N's expression is a multiple of at
// every size ends the chain there. Registers that every epilogue needs must be computed before.
func (mm *matmul) symColsBranch(epi func() error, ws ...int) error {
	b := mm.e.b
	done := ""
	defer func() { mm.symCols = 0 }()
	for _, w := range ws {
		mm.symCols = w
		if mm.symNAlign%w == 0 {
			break
		}
		if done == "" {
			done = b.label("cols_done")
		}
		low, p := b.reg(rU32), b.reg(rPred)
		b.ins("and.b32", low, mm.symN, imm(w-1))
		b.ins("setp.ne.u32", p, low, "0")
		next := b.label(fmt.Sprintf("cols_not%d", w))
		b.braIf(p, next)
		if err := epi(); err != nil {
			return err
		}
		b.bra(done)
		b.place(next)
		mm.symCols = 0
	}
	if err := epi(); err != nil {
		return err
	}
	if done != "" {
		b.place(done)
	}
	return nil
}

// symStages reports whether a tensor-core product with a symbolic N stages its epilogue
// through shared memory where the run's N is a multiple of four (mmaStaged then): the A tile's
// space must hold the stage.
func (mm *matmul) symStages() bool {
	return mm.symN != "" && mm.conv == nil && len(mm.batchShape)+2 == mm.dot.Type.Shape.Rank()
}

// symElemBases hoists, for the direct tensor-core epilogue of a symbolic N, what each element
// would otherwise compute at the run's sizes: the columns left in the row from colBase (N −
// colBase, compared with an element's column offset; the rows left below rowBase alike when M
// is symbolic) and the linear index of each row offset dr in drs (linBase + dr·N, to which an
// element adds its column offset). It returns the undo.
func (mm *matmul) symElemBases(linBase, rowBase, colBase string, drs []int) func() {
	if mm.symN == "" {
		return func() {}
	}
	b, a := mm.e.b, mm.a
	left := func(n, base string) string {
		r := b.reg(rU32)
		b.ins("sub.s32", r, n, a.reg(base))
		return r
	}
	mm.symColsLeft = left(mm.symN, colBase)
	if mm.symM != "" {
		mm.symRowsLeft = left(mm.symM, rowBase)
	}
	rows := map[int]string{}
	for _, dr := range drs {
		if _, ok := rows[dr]; !ok {
			rows[dr] = a.reg(mm.outOffset(linBase, dr, 0))
		}
	}
	mm.symRowBase, mm.symRowLin = linBase, rows
	return func() { mm.symColsLeft, mm.symRowsLeft, mm.symRowBase, mm.symRowLin = "", "", "", nil }
}

// symElemChecks makes the predicates that element (dr, dc) from the hoisted bases lies below
// M and N: okm and okn, hoisted false where symElemBases has not run for linBase.
func (mm *matmul) symElemChecks(linBase, rowBase string, dr, dc int) (okm, okn string, hoisted bool) {
	if mm.symColsLeft == "" || linBase != mm.symRowBase {
		return "", "", false
	}
	b := mm.e.b
	okm, okn = b.reg(rPred), b.reg(rPred)
	if mm.symRowsLeft != "" {
		b.ins("setp.gt.s32", okm, mm.symRowsLeft, imm(dr)) // rowBase + dr < M
	} else {
		b.ins("setp.lt.s32", okm, mm.a.reg(rowBase), mm.freeBelow(true, mm.M, dr))
	}
	b.ins("setp.gt.s32", okn, mm.symColsLeft, imm(dc)) // colBase + dc < N
	return okm, okn, true
}
