package nvvm

import (
	"fmt"

	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
)

// The tiled templates (FFMA and mma.sync, dot_general and conv2d) at symbolic sizes, as
// codegen/ptx's symgemm.go: the kernel's rows are the product's M side (a dot's left free dims,
// a conv2d's images), so M at the run's sizes is the size parameter that bounds grid.y (tiles of
// GEMMTileM rows) and every edge check of M; the left operand's clamped reads stay the bound's.
// A batched product whose rows are its batch runs the bound's code on the first batch
// elements: grid.z follows the batch, and a block past it exits.

// symGEMM returns a tiled kernel's parameters and work: plan.Params and no work for a static
// kernel; with the size after them for a symbolic one.
func symGEMM(k plan.Kernel, p plan.GEMM) ([]plan.Arg, *plan.SymWork, error) {
	if !k.Symbolic {
		return plan.Params(k.Graph), nil, nil
	}
	if args, w, ok, err := symFoldK(k, p); ok { // symfold.go
		return args, w, err
	}
	switch {
	case p.A.View != nil && k.Sizes != nil && p.B.View == nil && len(p.Batch) == 0 && p.Conv == nil:
		// The left operand read through views at the run's sizes (symstride_gemm.go).
		args, scale, err := symStrideArgs(k, p.M, "row count")
		return args, symWork(scale, plan.GEMMTileM, 1, (p.M+plan.GEMMTileM-1)/plan.GEMMTileM), err
	case p.A.View != nil || p.B.View != nil && len(p.Batch) > 0:
		return nil, nil, fmt.Errorf("a GEMM whose symbolic operand is read through a view does not run at symbolic sizes yet")
	case len(p.Batch) > 0 && p.Conv == nil:
		batch := p.Batch.NumElements()
		args, scale, err := symArgs(k, batch, "row count")
		return args, symWork(scale, 1, 2, batch), err
	}
	args, scale, err := symArgs(k, p.M, "row count")
	return args, symWork(scale, plan.GEMMTileM, 1, (p.M+plan.GEMMTileM-1)/plan.GEMMTileM), err
}

// symPrologue ends the prologue of a symbolic kernel (after the accumulators' allocas, which
// stay in the entry block): a batched product's block past the run's batch exits; any other
// takes M from the size parameter, and a block whose tile starts past M (the one block row of
// a run of no rows) exits, so that it reads nothing: an element copy (MMASide.Elem) loads its
// operand's first element when the copy lies outside, which such a run never wrote.
func (mm *gemm) symPrologue() {
	kg, p := mm.kg, mm.p
	if mm.con != nil {
		mm.contractPrologue() // symcontract.go
		return
	}
	if kg.size == nil {
		return
	}
	if foldsK(plan.Kernel{Symbolic: true}, p) { // a symbolic batch's fold has con
		mm.symK = kg.size // symfold.go: K is the rows; M and the batch are the bound's
		return
	}
	first := mm.bz
	if len(p.Batch) == 0 || p.Conv != nil {
		mm.symM, first = kg.size, mm.m0
	}
	in, past := kg.block("rows"), kg.block("no_rows")
	kg.b.NewCondBr(kg.b.NewICmp(enum.IPredULT, first, kg.size), in, past)
	past.NewRet(nil)
	kg.b = in
}

// mBelow is the bound a GEMM row is compared with (row < bound, signed or unsigned) to lie
// below M − d: M's parameter less d at symbolic sizes, else the immediate.
func (mm *gemm) mBelow(d int) value.Value {
	if mm.symM == nil {
		return ci(mm.p.M - d)
	}
	return mm.kg.sub(mm.symM, ci(d))
}

// freeBelow is mBelow for side sd's free coordinate: the immediate nFree − d but on the M side
// of a symbolic kernel.
func (mm *gemm) freeBelow(sd *side, d int) value.Value {
	if !sd.mSide && mm.symN != nil {
		return mm.nBelow(d) // the right operand's columns at the run (symcontract_rhs.go)
	}
	if !sd.mSide {
		return ci(sd.nFree - d)
	}
	return mm.mBelow(d)
}
