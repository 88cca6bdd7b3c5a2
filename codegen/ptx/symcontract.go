package ptx

import (
	"fmt"
	"slices"

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
// run's sizes on the same template. M and N are static, and so is every batch dim but the first:
// the result is static when the batch is, else its rows are the batch (grid.z follows it).

// symContract declares the parameters of a symbolic batched product whose contracting sizes
// (k.Sizes) are symbolic: the dims they name, and a symbolic batch's count; nothing for another.
func (mm *matmul) symContract(k Kernel, b *builder, args *[]Arg) (bool, *SymWork, error) {
	if !k.Symbolic || k.Sizes == nil || mm.conv != nil || mm.quant != nil || len(mm.batchShape) == 0 {
		return false, nil, nil
	}
	at := mm.dot.Attrs
	lb, rb := at.Ints("lhs_batch"), at.Ints("rhs_batch")
	lc, rc := at.Ints("lhs_contract"), at.Ints("rhs_contract")
	ls, rs := SymSizes(mm.dot.Args[0], k.Sizes), SymSizes(mm.dot.Args[1], k.Sizes)
	kl, kr := symProduct(ls, lc), symProduct(rs, rc)
	if isConst(kl) && isConst(kr) {
		return false, nil, nil
	}
	if !kl.Equal(kr) {
		return true, nil, fmt.Errorf("a batched product contracting %s by %s does not run at symbolic sizes", kl, kr)
	}
	for i, d := range lb {
		if !ls[d].Equal(rs[rb[i]]) || i > 0 && !isConst(ls[d]) {
			return true, nil, fmt.Errorf("a batched product contracting a symbolic dim, batched over %s, runs at symbolic sizes only with a symbolic batch leading its static ones", symJoin(symPick(ls, lb)))
		}
	}
	for _, side := range []struct {
		s            []sym.Expr
		batch, contr []int
	}{{ls, lb, lc}, {rs, rb, rc}} {
		for d, e := range side.s {
			if !isConst(e) && !slices.Contains(side.batch, d) && !slices.Contains(side.contr, d) {
				return true, nil, fmt.Errorf("a batched product contracting a symbolic dim, with a symbolic free dim (%s), does not run at symbolic sizes yet", e)
			}
		}
	}
	var err error
	if mm.lhs, err = genericLayout(mm.dot.Args[0], lb, lc); err != nil {
		return true, nil, err
	}
	if mm.rhs, err = genericLayout(mm.dot.Args[1], rb, rc); err != nil {
		return true, nil, err
	}
	mm.symv = &symView{dims: symViewLoad(k, b, args, k.Sizes), sizes: k.Sizes}
	for _, v := range mm.dot.Args {
		if err := mm.symv.check(b, v); err != nil {
			return true, nil, err
		}
	}
	if _, err := symEval(func() string { return b.reg(rU32) }, func(string, ...string) {}, mm.symv.dims, kl); err != nil {
		return true, nil, err
	}
	mm.symK = mm.symv.eval(b, kl)
	if isConst(ls[lb[0]]) {
		return true, nil, nil // a static result: the bound's grid
	}
	w, err := mm.symBatch(k, b, args)
	return true, w, err
}

// symProduct is the product of s's entries at dims.
func symProduct(s []sym.Expr, dims []int) sym.Expr {
	p := sym.Const(1)
	for _, d := range dims {
		p = sym.Mul(p, s[d])
	}
	return p
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
