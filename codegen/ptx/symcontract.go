package ptx

import (
	"fmt"
	"slices"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// Batched products contracting a symbolic dim that is not the rows: per batch element,
// x[b, seq, d]ᵀ·y[b, seq, e] → [b, d, e], or scores·V by hand, [b, t, seq]·[b, seq, d] → [b, t, d].
// Laid out contiguously at the run's sizes, an operand's batch stride and (for the scores) its
// row stride follow seq, so neither is the bound's: both operands are read through the generic
// copier, which delinearizes each copy's batch, free and k coordinates over the operand's sizes
// at the run and follows its views to the buffer (symview.go), so a view below an operand (the
// heads merged back) is read the same way. K at the run bounds the k loop (ceil(K/bk) steps)
// and zero-fills the copies at or past it, so the sum runs in the static kernel's order at the
// run's sizes on the same template. N is static; the result is static when the batch and M are,
// else its rows are the batch (grid.z follows it, split into batch coordinates at the run's sizes
// when a symbolic batch dim follows a static one: symcontract_after.go).
// M may be symbolic too (scores·V with t symbolic, one free dim on each side): M at the run,
// evaluated from the dims, bounds the left operand's copies, the epilogue's edge checks and the
// row tiles (grid.y stays the bound's; a tile past M exits), and the result's batch stride.

// symContract declares the parameters of a symbolic batched product whose contracting sizes
// (k.Sizes) are symbolic: the dims they name, and a symbolic batch's count; nothing for another.
func (mm *matmul) symContract(k Kernel, b *builder, args *[]Arg, tensorCores bool) (bool, *SymWork, error) {
	if !k.Symbolic || k.Sizes == nil || mm.conv != nil || mm.quant != nil || len(mm.batchShape) == 0 {
		return false, nil, nil
	}
	at := mm.dot.Attrs
	lb, rb := at.Ints("lhs_batch"), at.Ints("rhs_batch")
	lc, rc := at.Ints("lhs_contract"), at.Ints("rhs_contract")
	ls, rs := SymSizes(mm.dot.Args[0], k.Sizes), SymSizes(mm.dot.Args[1], k.Sizes)
	kl, kr := plan.SymProduct(ls, lc), plan.SymProduct(rs, rc)
	m, n := plan.SymFree(ls, lb, lc), plan.SymFree(rs, rb, rc)
	if isConst(kl) && isConst(kr) && isConst(n) { // a symbolic N: symcontract_rhs.go
		return false, nil, nil
	}
	if !kl.Equal(kr) {
		return true, nil, fmt.Errorf("a batched product contracting %s by %s does not run at symbolic sizes", kl, kr)
	}
	for i, d := range lb {
		if !ls[d].Equal(rs[rb[i]]) {
			return true, nil, fmt.Errorf("a batched product contracting a symbolic dim, batched over %s by %s, does not run at symbolic sizes", symJoin(symPick(ls, lb)), symJoin(symPick(rs, rb)))
		}
	}
	for _, f := range []sym.Expr{m, n} {
		if !isConst(f) && !mm.rowColShape() {
			return true, nil, fmt.Errorf("a batched product with a symbolic free dim (%s) runs at symbolic sizes only with one free dim on each side", f)
		}
	}
	mm.symOut = true
	mm.symv = &symView{dims: symViewLoad(k, b, args, k.Sizes), sizes: k.Sizes}
	// A block past the run's M or N exits first, before the prologue's other work.
	if !isConst(m) {
		if _, err := symEval(func() string { return b.reg(rU32) }, func(string, ...string) {}, mm.symv.dims, m); err != nil {
			return true, nil, err
		}
		mm.symRowsPast(mm.symv.eval(b, m))
	}
	if !isConst(n) {
		if _, err := symEval(func() string { return b.reg(rU32) }, func(string, ...string) {}, mm.symv.dims, n); err != nil {
			return true, nil, err
		}
		mm.symColsPast(mm.symv.eval(b, n), plan.Align(n)) // symcontract_rhs.go
	}
	if err := mm.symBroadcasts(k, b); err != nil { // symcontract_bcast.go
		return true, nil, err
	}
	for i, l := range []*operandLayout{&mm.lhs, &mm.rhs} {
		v, batch, contract := mm.dot.Args[i], [][]int{lb, rb}[i], [][]int{lc, rc}[i]
		if st := mm.symStrided(v, *l, batch, tensorCores && !isConst(kl)); st != nil {
			// Strided: the bound's copies, the batch strides at the run's sizes.
			mm.symBatchSt[i] = make([]string, len(batch))
			for j, e := range st {
				if !isConst(e) {
					mm.symBatchSt[i][j] = mm.symv.eval(b, e)
					l.batchStrides[j] = plan.Align(e) // what mmaSides's alignment checks see
				}
			}
			continue
		}
		var err error
		if *l, err = genericLayout(v, batch, contract); err != nil {
			return true, nil, err
		}
		if err := mm.symv.check(b, v); err != nil {
			return true, nil, err
		}
	}
	if _, err := symEval(func() string { return b.reg(rU32) }, func(string, ...string) {}, mm.symv.dims, kl); err != nil {
		return true, nil, err
	}
	if !isConst(kl) {
		mm.symK = mm.symv.eval(b, kl)
	}
	if err := mm.symBatchAfter(b, symPick(ls, lb)); err != nil { // symcontract_after.go
		return true, nil, err
	}
	var w *SymWork
	if !isConst(plan.SymProduct(ls, lb)) {
		var err error
		if w, err = mm.symBatch(k, b, args); err != nil {
			return true, nil, err
		}
	}
	return true, w, nil // a static batch: the bound's grid
}

// symRowsPast makes m, M at the run's sizes, the template's M (every edge check of the rows,
// the generic copier's, the output's batch stride M·N), and sends the blocks whose row tile
// starts at or past it (grid.y stays the bound's) to the end.
func (mm *matmul) symRowsPast(m string) {
	b := mm.e.b
	mm.symM = m
	y, past := b.reg(rU32), b.reg(rPred)
	b.ins("mov.u32", y, "%ctaid.y")
	b.ins("mul.lo.u32", y, y, imm(mmBM))
	b.ins("setp.ge.u32", past, y, m)
	if mm.symEnd == "" {
		mm.symEnd = b.label("no_rows")
	}
	b.braIf(past, mm.symEnd)
}

// outRow is row r of batch element bz of the result, [batch..., M, N] contiguous: bz·M + r,
// with M at the run's sizes when it is symbolic.
func (mm *matmul) outRow(bz, r string) string {
	if mm.symM == "" || !mm.symOut {
		return mm.a.mad(bz, mm.M, r)
	}
	o := mm.e.b.reg(rU32)
	mm.e.b.ins("mad.lo.s32", o, bz, mm.symM, mm.a.reg(r))
	return o
}

// symStrided returns the batch strides at the run's sizes of operand v (layout l at the bound)
// when v is a buffer whose other strides are the bound's at every size ([b, seq, d] contracting
// seq: only its batch stride seq·d follows the sizes), so the template's strided copies (16-byte
// chunks on tensor cores) read it with the batch offset from the run's stride; nil when it is
// read through the generic copier. With symK (tensor cores, K symbolic) a contiguous K is not
// strided: its chunks would cross the run's K.
func (mm *matmul) symStrided(v *ir.Value, l operandLayout, batch []int, symK bool) []sym.Expr {
	if v.Op != ir.OpInput && v.Op != ir.OpParam || l.view != nil || symK && l.kSt == 1 {
		return nil
	}
	st := symContiguous(SymSizes(v, mm.symv.sizes))
	for d, e := range st {
		if !slices.Contains(batch, d) && !isConst(e) {
			return nil
		}
	}
	out := make([]sym.Expr, len(batch))
	for j, d := range batch {
		out[j] = st[d]
		if _, err := symEval(func() string { return "" }, func(string, ...string) {}, mm.symv.dims, st[d]); err != nil {
			return nil
		}
	}
	return out
}

// batchOffset is off plus batch coordinate c of operand si's batch dim i times its stride: the
// run's stride's register for a symbolic product's strided operand, else the bound's immediate.
func (mm *matmul) batchOffset(si, i int, c, off string) string {
	if st := mm.symBatchSt[si]; st != nil && st[i] != "" {
		if c == "0" {
			return off
		}
		r := mm.e.b.reg(rU32)
		mm.e.b.ins("mad.lo.s32", r, st[i], c, off)
		return r
	}
	return mm.a.mad(c, []operandLayout{mm.lhs, mm.rhs}[si].batchStrides[i], off)
}

func symPick(s []sym.Expr, dims []int) []sym.Expr {
	out := make([]sym.Expr, len(dims))
	for i, d := range dims {
		out[i] = s[d]
	}
	return out
}

func symJoin(s []sym.Expr) string {
	t := "["
	for i, e := range s {
		if i > 0 {
			t += ","
		}
		t += e.String()
	}
	return t + "]"
}
