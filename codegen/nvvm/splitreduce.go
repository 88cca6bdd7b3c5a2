package nvvm

import (
	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
)

// splitReduce is codegen/ptx's split full reduction (plan.ReducePlan "split"): every block folds
// a grid-stride share (element i at thread i of the grid) and thread 0 writes the block's
// partial to the scratch buffer, then takes a ticket from the integer counter after it (an
// atomic add; llvm.nvvm.membar.gl on both sides). The block with the last ticket folds the
// partials in block order (volatile loads: the other blocks' stores are not in its L1), zeroing
// them, writes the outputs and resets the counter for the next launch. No float atomics: the
// result is the same bits every run, and codegen/ptx's.
func (md *module) splitReduce(k plan.Kernel, rp plan.Reduction) (*ir.Func, plan.Launch, error) {
	g := k.Graph
	red := rp.Reduces[0]
	args, work, err := splitArgs(k, rp) // symsplit.go
	if err != nil {
		return nil, plan.Launch{}, err
	}
	args = viewDims(k, rp, args) // symfold_reduce_view.go
	kg := md.newKernel(k, args)
	if readsViews(k, rp) {
		if err := kg.bindReduceViews(k, args); err != nil {
			return nil, plan.Launch{}, err
		}
		defer func() { kg.at = nil }()
	}
	T, blocks := rp.Threads, rp.Grid[0]
	sz := kg.splitSizes(rp)
	slots := md.sharedSlots(k.Name, T/32)
	tid := kg.sreg("tid.x")
	lane := kg.b.NewAnd(tid, ci(31))
	warp := kg.b.NewLShr(tid, ci(5))
	bid := kg.sreg("ctaid.x")
	accs := kg.accumulators([]*irg.Value{red})
	acc2 := kg.b.NewAlloca(accs[red].ElemType)
	accT, combine, identity := plan.Accumulator(red)
	rt := regType(accT)
	partial := func(i value.Value) value.Value {
		p := kg.b.NewGetElementPtr(types.I64, kg.scratch, i)
		p.InBounds = true
		pt := types.NewPointer(rt)
		pt.AddrSpace = 1
		return kg.b.NewBitCast(p, pt)
	}
	counter := kg.b.NewBitCast(kg.b.NewGetElementPtr(types.I64, kg.scratch, ci(blocks)), func() types.Type {
		pt := types.NewPointer(types.I32)
		pt.AddrSpace = 1
		return pt
	}())
	keep := func(e error) {
		if e != nil && err == nil {
			err = e
		}
	}
	keep(kg.foldTo(red, accs[red], kg.add(kg.mul(bid, T), tid), sz.stride, sz.end, func(i value.Value) *index {
		return newIndexLin(rp.Full, i)
	}))
	total, e := kg.blockCombine(accT, combine, kg.b.NewLoad(rt, accs[red]), lane, warp, slots, T/32)
	keep(e)
	t0 := kg.b.NewICmp(enum.IPredEQ, tid, ci(0))
	kg.lastTicket(t0, counter, sz.last, func() {
		kg.b.NewStore(total, partial(bid)).Align = 8
		kg.membar()
	}, func() {
		kg.b.NewStore(constVal(accT, identity), acc2)
		kg.loopTo(tid, ci(T), sz.blocks, func(i value.Value) {
			x := kg.b.NewLoad(rt, partial(i))
			x.Align, x.Volatile = 8, true
			// The plan's scratch area is shared by every split kernel, each with its counter
			// after its own partials (another's counter may sit where this partial was): leave
			// it all zero, as codegen/ptx's does.
			z := kg.b.NewGetElementPtr(types.I64, kg.scratch, i)
			z.InBounds = true
			kg.b.NewStore(constant.NewInt(types.I64, 0), z).Align = 8
			y, e := kg.binary(combine, accT, kg.b.NewLoad(rt, acc2), x)
			keep(e)
			if e == nil {
				kg.b.NewStore(y, acc2)
			}
		})
		res, e := kg.blockCombine(accT, combine, kg.b.NewLoad(rt, acc2), lane, warp, slots, T/32)
		keep(e)
		if e != nil {
			return
		}
		kg.bound = map[*irg.Value]value.Value{red: kg.cast(accT, res, red.Type.DType)}
		kg.branch(kg.b.NewICmp(enum.IPredEQ, tid, ci(0)), "write", func() {
			outs := make([]int, len(g.Outputs))
			for i := range outs {
				outs[i] = i
			}
			keep(kg.storeRowOutputs(outs, ci(0)))
			kg.b.NewStore(ci(0), counter).Align = 4 // ready for the next launch
		})
		kg.bound = nil
	})
	kg.b.NewRet(nil)
	if err != nil {
		return nil, plan.Launch{}, err
	}
	return kg.f, plan.Launch{Grid: rp.Grid, Block: [3]int{T, 1, 1}, Params: args, Work: work}, nil
}

func (kg *kgen) membar() { kg.b.NewCall(kg.md.declare("llvm.nvvm.membar.gl", types.Void)) }

// lastBlock has thread 0 (t0), after publish, take a ticket from counter (an integer atomic add)
// and tells the block through shared memory whether it was the last of n; the last block runs
// last after llvm.nvvm.membar.gl. Every thread must call it.
func (kg *kgen) lastBlock(t0, counter value.Value, n int, publish, last func()) {
	kg.lastTicket(t0, counter, ci(n-1), publish, last)
}

// lastTicket is lastBlock with the last block's number a value: the launch's block count less
// one in a symbolic split (symsplit.go).
func (kg *kgen) lastTicket(t0, counter, lastNum value.Value, publish, last func()) {
	flag := kg.md.m.NewGlobalDef(kg.name+"_is_last", constant.NewUndef(types.I32))
	flag.Linkage = enum.LinkageInternal
	flag.AddrSpace, flag.Typ.AddrSpace, flag.Align = 3, 3, 4
	kg.branch(t0, "publish", func() {
		if publish != nil {
			publish()
		}
		ticket := kg.b.NewAtomicRMW(enum.AtomicOpAdd, counter, ci(1), enum.AtomicOrderingMonotonic)
		isLast := kg.b.NewZExt(kg.b.NewICmp(enum.IPredEQ, ticket, lastNum), types.I32)
		kg.b.NewStore(isLast, flag).Align = 4
	})
	kg.barrier()
	ld := kg.b.NewLoad(types.I32, flag)
	ld.Align = 4
	kg.branch(kg.b.NewICmp(enum.IPredNE, ld, ci(0)), "last", func() {
		kg.membar()
		last()
	})
}
