package nvvm

import (
	"fmt"

	"github.com/llir/llvm/ir"

	"github.com/gcomp/gcomp/codegen/plan"
)

// The row reduction and the contractions other than the tiles at symbolic sizes: a row kernel
// (plan.Kernel.Rows) runs the bound's code on the first rows of its buffers, the size parameter
// bounding its grid-stride loop over rows (or over result elements).

// symRowReduce is the row reduction at symbolic sizes: one block per row, rows bounded by the
// size parameter. A reduction over inner axes of the rows takes the static build's template: the
// column one with its tiles the size (symcolumn.go) or the scattered row one over the kept
// elements, and a plan splitting one long row over blocks (a bound of one row) runs as a row
// reduction.
func (md *module) symRowReduce(k plan.Kernel) (*ir.Func, plan.Launch, error) {
	rp, err := plan.ReducePlan(k)
	if err != nil {
		return nil, plan.Launch{}, err
	}
	if foldsReduction(k, rp) && rp.Kind == "split" {
		return md.splitReduce(k, rp) // over the run's count (symsplit.go)
	}
	if foldsReduction(k, rp) {
		return md.symColReduce(k, rp) // symfold.go
	}
	switch rp.Kind {
	case "column":
		return md.colReduce(k, rp) // symcolumn.go
	case "split":
		rp.Kind, rp.Threads, rp.ScratchBytes = "row", rowThreads(rp.R), 0
		rp.Grid = [3]int{max(1, min(rp.A, plan.MaxLoopBlocks)), 1, 1}
	}
	return md.rowReduce(k, rp)
}

// rowThreads is the row template's block for rows of r elements: a power of two from 32 to 256,
// at least r where it can be (codegen/ptx's).
func rowThreads(r int) int {
	t := 32
	for t < 256 && t < r {
		t *= 2
	}
	return t
}

// symReduce returns a row reduction's parameters and work: plan.Params and none for a static
// kernel; with its row count after them, one row per block along x, for a symbolic one.
func symReduce(k plan.Kernel, rp plan.Reduction) ([]plan.Arg, *plan.SymWork, error) {
	if !k.Symbolic {
		return plan.Params(k.Graph), nil, nil
	}
	args, scale, err := symArgs(k, rp.A, "row count")
	return args, symWork(scale, 1, 0, rp.Grid[0]), err
}

// symContraction is a symbolic kernel's one dot_general or conv2d: the tiles codegen/ptx's
// plan gives it, or, for its GEMV and what the tiles do not take, the direct template (this
// package's GEMV) over the run's result elements.
func (md *module) symContraction(k plan.Kernel, t plan.Target) (*ir.Func, plan.Launch, error) {
	c, err := plan.ContractionPlan(k, t)
	if err != nil {
		return nil, plan.Launch{}, err
	}
	switch c.Kind {
	case "ffma":
		return md.ffmaKernel(k, t)
	case "tensor core":
		return md.mmaKernel(k, t)
	case "gemv":
		return md.directKernel(k, plan.DirectFallback(c))
	case "direct": // what the tiles do not take, as codegen/ptx's symdirect.go
		return md.directKernel(k, c)
	}
	return nil, plan.Launch{}, fmt.Errorf("the %s contraction template does not run at symbolic sizes", c.Kind)
}

// symDirect returns the direct template's parameters and work: plan.Params and none for a
// static kernel; for a symbolic one its result elements after them, a loop's work of one
// element per work item; a folding conv's size is its taps instead (symconv.go).
func symDirect(k plan.Kernel, c plan.Contraction) ([]plan.Arg, *plan.SymWork, error) {
	if !k.Symbolic {
		return plan.Params(k.Graph), nil, nil
	}
	if args, w, ok, err := symConvFold(k, c.Dot); ok { // a conv's weight gradient: its taps
		return args, w, err
	}
	args, scale, err := symArgs(k, c.Dot.Type.Shape.NumElements(), "element count")
	return args, &plan.SymWork{Vector: 1, Block: c.Block[0], MaxBlocks: plan.MaxLoopBlocks, Scale: scale}, err
}
