package ptx

import (
	"fmt"

	"github.com/gcomp/gcomp/codegen/gemv"
	"github.com/gcomp/gcomp/ir"
)

// The GEMM templates (FFMA and mma.sync, dot_general and conv2d) at symbolic sizes: the kernel's
// rows are the product's M side (a dot's left free dims, a conv2d's images), so M at the run's
// sizes is a parameter that bounds the grid's y (tiles of mmBM rows) and every edge check of M;
// the code is otherwise the bound's. The left operand is read directly (no view), so its first
// M rows at the run's sizes are those at the bound. A batched product whose rows are its batch
// (both operands lead with it) runs the bound's code on the first batch elements: grid.z follows
// the batch, nothing else changes.

// symbolic declares a symbolic kernel's M parameter and returns how its grid follows; nothing for
// a static kernel.
func (mm *matmul) symbolic(k Kernel, b *builder, args *[]Arg, tensorCores bool) (*SymWork, error) {
	if !k.Symbolic {
		return nil, nil
	}
	if folds, w, err := mm.symFoldK(k, b, args, tensorCores); folds {
		return w, err
	}
	if contracts, w, err := mm.symContract(k, b, args, tensorCores); contracts { // symcontract.go
		return w, err
	}
	if err := mm.symViewLHS(k); err != nil {
		return nil, err
	}
	if mm.lhs.view != nil && k.Sizes != nil && mm.rhs.view == nil && len(mm.batchShape) == 0 && mm.conv == nil {
		mm.symv = &symView{dims: symViewLoad(k, b, args, k.Sizes), sizes: k.Sizes} // symview.go
		if err := mm.symv.check(b, mm.lhs.view); err != nil {
			return nil, err
		}
	}
	switch {
	case mm.lhs.view != nil && mm.symv == nil || mm.rhs.view != nil && len(mm.batchShape) > 0:
		return nil, fmt.Errorf("a GEMM whose symbolic operand is read through a view does not run at symbolic sizes yet")
	case len(mm.batchShape) > 0 && mm.conv == nil:
		// Batched: the rows are the batch (the compiler checks both operands lead with it), one
		// grid.z block row per batch element; M, N and K stay the bound's.
		return mm.symBatch(k, b, args)
	}
	m, w, err := symRows(k, b, args, mm.M, mmBM, 1, ceilDiv(mm.M, mmBM))
	mm.symM = m
	return w, err
}

// symBatch declares a batched product's batch count at the run's sizes, the rows of its
// symbolic values: grid.z follows it, and a block past it exits.
func (mm *matmul) symBatch(k Kernel, b *builder, args *[]Arg) (*SymWork, error) {
	batch := mm.batchShape.NumElements()
	n, w, err := symRows(k, b, args, batch, 1, 2, batch)
	if err != nil {
		return nil, err
	}
	// A run of no batch elements still launches one block row: it exits.
	z, past := b.reg(rU32), b.reg(rPred)
	b.ins("mov.u32", z, "%ctaid.z")
	b.ins("setp.ge.u32", past, z, n)
	if mm.symEnd == "" {
		mm.symEnd = b.label("no_batch")
	}
	b.braIf(past, mm.symEnd)
	return w, nil
}

// symViewLHS makes the left operand of a symbolic kernel with sizes (Kernel.Sizes) generic when
// it is strided at the bound: the compiler found views moving the symbolic dims, so it is read
// through them at the run's sizes (symview.go). GEMMPlan applies it too, so that the NVVM
// producer's plan has this template's copies.
func (mm *matmul) symViewLHS(k Kernel) error {
	if !k.Symbolic || k.Sizes == nil || mm.lhs.view != nil || mm.conv != nil || len(mm.batchShape) > 0 {
		return nil
	}
	l, err := genericLayout(mm.dot.Args[0], nil, mm.dot.Attrs.Ints("lhs_contract"))
	if err != nil {
		return err
	}
	mm.lhs = l
	return nil
}

// freeBelow is the bound a free coordinate x is compared with (x < bound) to lie below
// size − d: on the M side (m) of a symbolic kernel, M's parameter less d; else the immediate.
func (mm *matmul) freeBelow(m bool, size, d int) string {
	if !m && mm.symN != "" { // the right operand's columns at the run (symcontract_rhs.go)
		return mm.a.sub(mm.symN, imm(d))
	}
	if !m || mm.symM == "" {
		return imm(size - d)
	}
	return mm.a.sub(mm.symM, imm(d))
}

// symGEMV is a symbolic GEMV's M at the run's sizes: the size parameter m, the label a run of
// no rows jumps to, and, per row i ≥ 1, whether it lies at or past m. The template keeps the
// bound's rows in registers; its k loop is emitted once per row count, and a run takes the one
// for m (symgemv.go), so every k step reads and computes the run's rows only; the lane sums and
// partials skip the rows from m on (a branch uniform over the launch), and only rows below m are
// stored. Its grid (column tiles, k slices) does not depend on M: the work's axis is z, one
// block.
type symGEMV struct {
	m, empty string
	past     []string
	rowsDone string
}

// gemvSymbolic declares a symbolic GEMV's M parameter; nothing for a static kernel.
func gemvSymbolic(k Kernel, b *builder, args *[]Arg, dot *ir.Value, p gemv.Plan, w gemvWeight) (*symGEMV, *SymWork, error) {
	if !k.Symbolic {
		return nil, nil, nil
	}
	if foldsRows(k, dot.Attrs.Ints("lhs_contract")) {
		return nil, nil, fmt.Errorf("a GEMV whose K is the symbolic rows does not run at symbolic sizes yet")
	}
	if p.Batch > 1 || w.quant != nil {
		return nil, nil, fmt.Errorf("a batched or quantized GEMV does not run at symbolic sizes yet")
	}
	m, work, err := symRows(k, b, args, p.M, p.M, 2, 1)
	if err != nil {
		return nil, nil, err
	}
	s := &symGEMV{m: m, empty: b.label("no_rows"), past: make([]string, p.M), rowsDone: b.label("rows_done")}
	z := b.reg(rPred)
	b.ins("setp.eq.u32", z, m, "0")
	b.braIf(z, s.empty)
	for i := 1; i < p.M; i++ {
		s.past[i] = b.reg(rPred)
		b.ins("setp.le.u32", s.past[i], m, imm(i))
	}
	return s, work, nil
}

// gemvRowGuard skips the k step's rows from row i on when i is past M (i ≥ 1).
func gemvRowGuard(b *builder, s *symGEMV, i int) {
	if s != nil && i > 0 {
		b.braIf(s.past[i], s.rowsDone)
	}
}

// gemvRowsEnd places the label after the rows gemvRowGuard skips, and takes a new one for the
// next rows guarded.
func gemvRowsEnd(b *builder, s *symGEMV) {
	if s != nil {
		b.place(s.rowsDone)
		s.rowsDone = b.label("rows_done")
	}
}

// gemvRowsBelow narrows has (a thread finishes an element of row m) to the rows below M.
func gemvRowsBelow(b *builder, has, m string, s *symGEMV) {
	if s == nil {
		return
	}
	in := b.reg(rPred)
	b.ins("setp.lt.u32", in, m, s.m)
	b.ins("and.pred", has, has, in)
}

// gemvSymbolicEnd places the label of a run with no rows.
func gemvSymbolicEnd(b *builder, s *symGEMV) {
	if s != nil {
		b.place(s.empty)
	}
}
