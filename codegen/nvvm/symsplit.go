package nvvm

import (
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
)

// The split full reduction over a symbolic count, as codegen/ptx's symsplit.go: a symbolic
// kernel folding every element of its operand, rows included, into one value, split where the
// plan splits it at the bound. The count at the run's sizes is the size parameter (after the
// scratch) and the block count the launch's (%nctaid.x): the work's tile of Threads·8 elements
// along x, at most the bound's blocks, gives the static kernel's grid at the run's count, so the
// shares, the ticket and the combine are its order there. The scratch is laid out at the bound.

// splitSize is where the split reduction's loops end: constants in a static kernel, values from
// the size parameter and the launch's grid in a symbolic one.
type splitSize struct {
	end, stride  value.Value // the share loop: elements, and the grid-stride step blocks·threads
	blocks, last value.Value // partials to combine, and the last block's ticket
}

// splitArgs returns the split reduction's parameters (the buffers, the scratch, then a symbolic
// kernel's count) and work.
func splitArgs(k plan.Kernel, rp plan.Reduction) ([]plan.Arg, *plan.SymWork, error) {
	args := append(plan.Params(k.Graph), plan.Arg{Kind: plan.ArgScratch, Bytes: rp.ScratchBytes})
	if !k.Symbolic {
		return args, nil, nil
	}
	scale, err := symScale(k.Rows, rp.R, "reduced count")
	if err != nil {
		return nil, nil, err
	}
	return append(args, plan.Arg{Kind: plan.ArgSize}), symWork(scale, rp.Threads*8, 0, rp.Grid[0]), nil
}

// splitSizes returns the loops' ends of kernel kg of plan rp.
func (kg *kgen) splitSizes(rp plan.Reduction) splitSize {
	T, blocks := rp.Threads, rp.Grid[0]
	if kg.size == nil {
		return splitSize{end: ci(rp.R), stride: ci(blocks * T), blocks: ci(blocks), last: ci(blocks - 1)}
	}
	nb := kg.sreg("nctaid.x")
	return splitSize{end: kg.size, stride: kg.mul(nb, T), blocks: nb, last: kg.sub(nb, ci(1))}
}
