package nvvm

import (
	"fmt"
	"slices"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
)

// Folds over scattered axes, as codegen/ptx's symfold_scatter.go: a symbolic kernel's reduction
// whose axes are its leading symbolic rows and static axes around kept static ones (BatchNorm's
// statistics over [N, C, H, W]'s [0, 2, 3], keeping C) runs the row template over the kept
// elements (one block per channel, the grid static), each element's coordinates put together
// from the channel's and the reduced position's (rowElement). The reduced shape leads with the
// rows ([N, H, W]), so the run's elements are the first N·H·W positions of each channel's
// reduction: the folded count at the run's sizes, the size parameter, ends the loops over the
// reduced elements (the reduction's, and the full-shape outputs' spreading the result back). The
// block is the bound's count's (rowThreads), its warps past the run's count leaving first thing
// (runBlock), and the partials combine in codegen/ptx's order, so the two producers agree bit
// for bit.

// foldsScattered reports whether symbolic kernel k's reduction (plan rp) folds its rows among
// scattered axes.
func foldsScattered(k plan.Kernel, rp plan.Reduction) bool {
	return k.Symbolic && rp.Scattered && slices.Contains(rp.Axes, 0)
}

// rowArgs returns the row template's parameters and work: symReduce's, a symbolic row length's,
// or a scattered fold's
// (its reduced count at the bound the size, at the run's sizes). An online softmax over such
// axes is refused in codegen/ptx's words.
func rowArgs(k plan.Kernel, rp plan.Reduction) ([]plan.Arg, *plan.SymWork, error) {
	if args, w, ok, err := rowLenArgs(k, rp); ok { // a symbolic row length (symrowlen.go)
		return args, w, err
	}
	if !foldsScattered(k, rp) {
		return symReduce(k, rp)
	}
	if len(plan.OnlineSoftmaxPairs(k.Graph, rp.Reduces)) > 0 {
		return nil, nil, fmt.Errorf("an online softmax over scattered axes %v of %s folding the symbolic rows does not run at symbolic sizes yet", rp.Axes, rp.Full)
	}
	return symFoldArgs(k, rp.R)
}

// rowExtent is the end of the row template's loop over rows and of its loops over a row's reduced
// elements: a symbolic kernel's rows at the run's sizes, each reduced whole; a scattered fold's
// every kept element, each reduced over the run's count, in the run's block (kg.run).
func (kg *kgen) rowExtent(k plan.Kernel, rp plan.Reduction) (rows, rEnd value.Value) {
	if foldsScattered(k, rp) {
		kg.run = kg.exitPastRun(kg.size, rp.Threads)
		return ci(rp.A), kg.size
	}
	return kg.units(rp.A), ci(rp.R)
}

// runBlock is a scattered fold's block at the run's count n, as codegen/ptx's: the warps of the
// bound's T threads holding any of a row's first n elements stay (every warp at n = 0), the
// others return first thing; the barriers count the threads that stay, and warp 0's threads
// past them write the identity into the slots of the warps that left, so the block combine
// reads the bound's slots in codegen/ptx's order.
type runBlock struct {
	tid     value.Value
	threads value.Value // 32·⌈n/32⌉ up to T: the barriers' count
	fill    value.Value // whether this thread writes the identity into slot tid
}

// exitPastRun returns the warps of a T-thread block past the run's count n (tid > (n−1) | 31,
// unsigned) and continues with the others; nil for a block of one warp.
func (kg *kgen) exitPastRun(n value.Value, threads int) *runBlock {
	if threads <= 32 {
		return nil
	}
	tid := kg.sreg("tid.x")
	last := kg.b.NewOr(kg.b.NewSub(n, ci(1)), ci(31))
	stay, leave := kg.block("run_block"), kg.block("past_run")
	kg.b.NewCondBr(kg.b.NewICmp(enum.IPredUGT, tid, last), leave, stay)
	leave.NewRet(nil)
	kg.b = stay
	run := &runBlock{tid: tid, threads: kg.b.NewAdd(kg.umin(last, ci(threads-1)), ci(1))}
	past := kg.b.NewICmp(enum.IPredUGE, kg.b.NewShl(tid, ci(5)), run.threads)
	run.fill = kg.b.NewAnd(past, kg.b.NewICmp(enum.IPredULT, tid, ci(threads/32)))
	return run
}

// identity has the fill threads write the identity of dtype accT into their slots: before the
// combine's first barrier, which orders it before every read of the slots.
func (kg *kgen) identity(slots *ir.Global, accT irg.DType, identity float64) {
	run := kg.run
	if run == nil {
		return
	}
	kg.branch(run.fill, "fill", func() {
		kg.b.NewStore(constVal(accT, identity), kg.slot(slots, run.tid, accT)).Align = 8
	})
}

// blockBarrier is the block combine's barrier 0: llvm.nvvm.barrier0, or over the run's block's
// threads in a scattered fold, llvm.nvvm.barrier.sync.cnt (barrier.sync 0, count; libNVVM 11.8
// has no llvm.nvvm.barrier with a count).
func (kg *kgen) blockBarrier() {
	if kg.run == nil {
		kg.barrier()
		return
	}
	kg.b.NewCall(kg.md.declare("llvm.nvvm.barrier.sync.cnt", types.Void, types.I32, types.I32), ci(0), kg.run.threads)
}
