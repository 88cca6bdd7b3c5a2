package nvvm

import (
	"fmt"
	"slices"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/value"
)

// Batched products contracting a symbolic dim that is not the rows, as codegen/ptx's
// symcontract.go, on the FFMA template: per batch element x[b, seq, d]ᵀ·y[b, seq, e] → [b, d, e],
// or scores·V by hand, [b, t, seq]·[b, seq, d] → [b, t, d]. Laid out at the run's sizes, an
// operand's batch stride (and the scores' row stride) follows seq: a buffer whose other strides
// are the bound's at every size is copied strided with its batch stride at the run, any other
// operand through the generic copier at the run's sizes (symCopier). K at the run bounds the k
// steps and zero-fills the copies at or past it, so the sum runs in the static kernel's order.
// The dims' parameters follow the buffers; a symbolic batch (the rows) adds the batch count,
// grid.z following it, split at the run's batch sizes when a symbolic batch dim follows a static
// one (symcontract_after.go). M may be symbolic (one free dim on each
// side): M at the run bounds the left operand's copies, the edge checks, the row tiles (a tile
// past it exits) and the result's batch stride.

// contraction is a symbolic batched product's sizes at the run: K, M (symM: M is symbolic),
// each operand's batch strides (nil for a generic operand; a constant one is the bound's) and
// whether its batch is symbolic (the size parameter).
type contraction struct {
	k, m, n    sym.Expr
	symM, symN bool
	batchSt    [2][]sym.Expr
	symBatch   bool
	batchAt    []sym.Expr // the run's batch sizes when a symbolic one follows another (symcontract_after.go)
}

// symContract recognizes a symbolic batched product contracting a symbolic dim (nil, p and no
// error for another kernel), checks it in codegen/ptx's words, and returns it with p's operands
// laid out as codegen/ptx's template reads them (on tensor cores, tc, with the shared tiles and
// copies codegen/ptx plans for them: symcontract_mma.go).
func symContract(k plan.Kernel, p plan.GEMM, tc bool) (*contraction, plan.GEMM, error) {
	if !k.Symbolic || k.Sizes == nil || p.Conv != nil || len(p.Batch) == 0 || foldsK(k, p) {
		return nil, p, nil // a fold of the rows batched over static dims is symfold.go's, as codegen/ptx's
	}
	at := p.Dot.Attrs
	lb, rb := at.Ints("lhs_batch"), at.Ints("rhs_batch")
	lc, rc := at.Ints("lhs_contract"), at.Ints("rhs_contract")
	ls, rs := plan.SymSizes(p.Dot.Args[0], k.Sizes), plan.SymSizes(p.Dot.Args[1], k.Sizes)
	kl, kr := plan.SymProduct(ls, lc), plan.SymProduct(rs, rc)
	n := plan.SymFree(rs, rb, rc)
	if isConst(kl) && isConst(kr) && isConst(n) {
		return nil, p, nil
	}
	if !kl.Equal(kr) {
		return nil, p, fmt.Errorf("a batched product contracting %s by %s does not run at symbolic sizes", kl, kr)
	}
	for i, d := range lb {
		if !ls[d].Equal(rs[rb[i]]) {
			return nil, p, fmt.Errorf("a batched product contracting a symbolic dim, batched over [%s] by [%s], does not run at symbolic sizes", exprs(ls, lb), exprs(rs, rb))
		}
	}
	c := &contraction{k: kl, m: plan.SymFree(ls, lb, lc), n: n, symBatch: !isConst(plan.SymProduct(ls, lb)), batchAt: batchAfter(ls, lb)}
	c.symM, c.symN = !isConst(c.m), !isConst(n)
	for _, f := range []sym.Expr{c.m, n} {
		if !isConst(f) && !p.RowCol {
			return nil, p, fmt.Errorf("a batched product with a symbolic free dim (%s) runs at symbolic sizes only with one free dim on each side", f)
		}
	}
	if c.symN {
		p.ColGroups = false // a group could straddle the run's row end (symcontract_rhs.go)
	}
	for i, op := range []*plan.GEMMOperand{&p.A, &p.B} {
		v, batch, contract := p.Dot.Args[i], [][]int{lb, rb}[i], [][]int{lc, rc}[i]
		if st := symStrided(v, *op, batch, k.Sizes, tc && !isConst(kl)); st != nil {
			c.batchSt[i] = st
			continue
		}
		g, err := genericOperand(v, batch, contract)
		if err != nil {
			return nil, p, err
		}
		*op = g
	}
	if tc {
		p = mmaContract(p, c) // symcontract_mma.go
	}
	return c, p, nil
}

// newGEMM declares tiled kernel k of plan p (on tensor cores: tc) and its parameters and work: a
// symbolic batched product contracting a symbolic dim laid out as codegen/ptx reads it
// (symContract), with the dims its sizes name; any other symbolic GEMM's left operand's views
// bound (symstride_gemm.go).
func (md *module) newGEMM(k plan.Kernel, p plan.GEMM, tc bool) (*gemm, []plan.Arg, *plan.SymWork, error) {
	con, p, err := symContract(k, p, tc)
	if err != nil {
		return nil, nil, nil, err
	}
	args, work, err := symGEMM(k, p)
	if con != nil {
		args, work, err = symContractArgs(k, p)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	kg := md.newKernel(k, args)
	symv, err := kg.gemmView(k, args, p)
	if con != nil {
		symv = kg.newSymView(k, args)
		err = con.check(symv, p)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	mm := &gemm{kg: kg, p: p, symv: symv, con: con}
	if con != nil { // FFMA's and tensor cores' epilogue views at the run's sizes
		if err := mm.symViews(); err != nil { // symcontract_bcast.go
			return nil, nil, nil, err
		}
	}
	return mm, args, work, nil
}

// symContractArgs is such a product's parameters and work: the dims' after the buffers, then a
// symbolic batch's count (grid.z follows it); no work for a static batch (the bound's grid).
func symContractArgs(k plan.Kernel, p plan.GEMM) ([]plan.Arg, *plan.SymWork, error) {
	args := append(plan.Params(k.Graph), symDimArgs(k.Sizes)...)
	if !isConst(plan.SymProduct(plan.SymSizes(p.Dot.Args[0], k.Sizes), p.Dot.Attrs.Ints("lhs_batch"))) {
		batch := p.Batch.NumElements()
		scale, err := symScale(k.Rows, batch, "row count")
		return append(args, plan.Arg{Kind: plan.ArgSize}), symWork(scale, 1, 2, batch), err
	}
	return args, nil, nil
}

// symStrided returns the batch strides at the run's sizes of operand v (op at the bound) when v
// is a buffer whose other strides are the bound's at every size ([b, seq, d] contracting seq),
// so the strided copies read it with the run's batch offset; nil when it is read through the
// generic copier. With symK (tensor cores, K symbolic) a contiguous K is not strided: its
// chunks would cross the run's K.
func symStrided(v *irg.Value, op plan.GEMMOperand, batch []int, sizes map[*irg.Value][]sym.Expr, symK bool) []sym.Expr {
	if v.Op != irg.OpInput && v.Op != irg.OpParam || op.View != nil || symK && op.KSt == 1 {
		return nil
	}
	st := plan.SymContiguous(plan.SymSizes(v, sizes))
	for d, e := range st {
		if !slices.Contains(batch, d) && !isConst(e) {
			return nil
		}
	}
	out := make([]sym.Expr, len(batch))
	for j, d := range batch {
		out[j] = st[d]
		if _, _, ok := st[d].Monomials(); !ok {
			return nil // a floor division: read through the generic copier
		}
	}
	return out
}

// genericOperand is operand v read through its views: codegen/ptx's generic layout.
func genericOperand(v *irg.Value, batch, contract []int) (plan.GEMMOperand, error) {
	for u := v; u.Op != irg.OpInput && u.Op != irg.OpParam; u = u.Args[0] {
		switch u.Op {
		case "transpose", "slice", "broadcast_in_dim", "reshape":
		default:
			return plan.GEMMOperand{}, fmt.Errorf("dot_general operand %s is computed inside the kernel (%s); only views of buffers are a supported fusion", v.Type, u.Op)
		}
	}
	s := v.Type.Shape
	o := plan.GEMMOperand{View: v, BatchDims: batch, ContractDims: contract, Free: 1, K: 1}
	for d := range s.Rank() {
		switch {
		case slices.Contains(batch, d):
		case slices.Contains(contract, d):
			o.K *= s[d]
		default:
			o.FreeDims = append(o.FreeDims, d)
			o.Free *= s[d]
		}
	}
	if s.Rank() > 0 && slices.Contains(contract, s.Rank()-1) {
		o.KSt = 1
	} else {
		o.FreeSt = 1
	}
	return o, nil
}

// check binds the product's dims (sv: the kernel's) and checks every size it evaluates.
func (c *contraction) check(sv *symView, p plan.GEMM) error {
	all := append([]sym.Expr{c.k, c.m, c.n}, c.batchAt...)
	for _, st := range c.batchSt {
		all = append(all, st...)
	}
	for _, e := range all {
		if err := sv.valid(e); err != nil {
			return err
		}
	}
	for _, op := range []plan.GEMMOperand{p.A, p.B} {
		if op.View != nil {
			if err := sv.check(op.View); err != nil {
				return err
			}
		}
	}
	return nil
}

// contractPrologue evaluates K, the batch strides, M and N at the run's sizes, and sends a
// block past the run's batch (a symbolic batch), or whose row tile starts at or past M or
// column tile at or past N (symcontract_rhs.go), to the end.
func (mm *gemm) contractPrologue() {
	kg, c, sv := mm.kg, mm.con, mm.symv
	for i, st := range c.batchSt {
		if st == nil {
			continue
		}
		mm.batchSt[i] = make([]value.Value, len(st))
		for j, e := range st {
			if !isConst(e) {
				mm.batchSt[i][j] = sv.eval(e)
			}
		}
	}
	if !isConst(c.k) {
		mm.symK = sv.eval(c.k)
	}
	var past value.Value
	exit := func(first, size value.Value) {
		p := kg.b.NewICmp(enum.IPredUGE, first, size)
		if past == nil {
			past = p
		} else {
			past = kg.b.NewOr(past, p)
		}
	}
	if c.symBatch {
		exit(mm.bz, kg.size)
	}
	if c.symM {
		mm.symM = sv.eval(c.m)
		exit(mm.m0, mm.symM)
	}
	if c.symN {
		mm.symN = sv.eval(c.n)
		exit(mm.n0, mm.symN)
	}
	if past != nil {
		in, out := kg.block("rows"), kg.block("no_rows")
		kg.b.NewCondBr(past, out, in)
		out.NewRet(nil)
		kg.b = in
	}
}

// batchOffset is off plus batch coordinate x of side sd's batch dim i times its stride: at the
// run's sizes for a symbolic product's strided operand, else the bound's.
func (mm *gemm) batchOffset(sd *side, i int, x, off value.Value) value.Value {
	si := 1
	if sd.mSide {
		si = 0
	}
	if st := mm.batchSt[si]; st != nil && st[i] != nil {
		return mm.kg.add(mm.kg.b.NewMul(x, st[i]), off)
	}
	return mm.kg.add(mm.kg.mul(x, sd.op.BatchStrides[i]), off)
}

// outRows is the result's rows before batch element bz: bz·M, M at the run's sizes in a
// symbolic product with a symbolic M (whose row stride is N at the run: outLin).
func (mm *gemm) outRows(bz value.Value) value.Value {
	if mm.con != nil && mm.con.symM {
		return mm.kg.b.NewMul(bz, mm.symM)
	}
	return mm.kg.mul(bz, mm.p.M)
}

func isConst(e sym.Expr) bool { _, ok := e.IsConst(); return ok }
