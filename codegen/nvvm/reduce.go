package nvvm

import (
	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/ptx"
	irg "github.com/gcomp/gcomp/ir"
)

// rowReduce is codegen/ptx's row reduction template (ptx.ReducePlan "row"): one block per row
// (block-stride over rows); thread t folds elements t, t+T, ... of the row into an accumulator
// (ptx.Accumulator), the warp combines by butterfly shuffles (16, 8, 4, 2, 1), lane 0 of each
// warp leaves its partial in shared memory and every thread folds the partials in warp order:
// the same order as codegen/ptx, so exact reductions give the same bits. Reduces run one after
// the other, each one pass over the row (softmax's max and sum are two passes here, where
// codegen/ptx folds them online in one); full-shape outputs are stored by a last pass, per-row
// ones by thread 0.
func (md *module) rowReduce(k ptx.Kernel, plan ptx.RowPlan) (*ir.Func, ptx.Launch, error) {
	g := k.Graph
	args := ptx.Params(g)
	kg := md.newKernel(k, args)
	T := plan.Threads
	warps := T / 32
	slots := md.m.NewGlobalDef(k.Name+"_partials", constant.NewUndef(types.NewArray(uint64(warps), types.I64)))
	slots.Linkage = enum.LinkageInternal
	slots.AddrSpace = 3
	slots.Typ.AddrSpace = 3
	slots.Align = 8
	tid := kg.sreg("tid.x")
	lane := kg.b.NewAnd(tid, ci(31))
	warp := kg.b.NewLShr(tid, ci(5))
	accs := map[*irg.Value]*ir.InstAlloca{}
	for _, red := range plan.Reduces {
		accT, _, _ := ptx.Accumulator(red)
		accs[red] = kg.b.NewAlloca(regType(accT))
	}
	var err error
	keep := func(e error) {
		if e != nil && err == nil {
			err = e
		}
	}
	kg.loop(kg.sreg("ctaid.x"), kg.sreg("nctaid.x"), plan.Rows, func(row value.Value) {
		fullAt := kg.rowElement(plan, row)
		kg.bound = map[*irg.Value]value.Value{}
		for _, red := range plan.Reduces {
			accT, combine, identity := ptx.Accumulator(red)
			acc := accs[red]
			kg.b.NewStore(constVal(accT, identity), acc)
			kg.loop(tid, ci(T), plan.R, func(r value.Value) {
				x, e := kg.eval(red.Args[0], fullAt(r))
				if e != nil {
					keep(e)
					return
				}
				y, e := kg.binary(combine, accT, kg.b.NewLoad(regType(accT), acc), kg.cast(red.Args[0].Type.DType, x, accT))
				keep(e)
				if e == nil {
					kg.b.NewStore(y, acc)
				}
			})
			total, e := kg.blockCombine(accT, combine, kg.b.NewLoad(regType(accT), acc), lane, warp, slots, warps)
			keep(e)
			if e == nil {
				kg.bound[red] = kg.cast(accT, total, red.Type.DType)
			}
		}
		var fullOuts, rowOuts []int
		for i, o := range g.Outputs {
			if o.Value.Type.Shape.Equal(plan.Full) {
				fullOuts = append(fullOuts, i)
			} else {
				rowOuts = append(rowOuts, i)
			}
		}
		if len(fullOuts) > 0 {
			kg.loop(tid, ci(T), plan.R, func(r value.Value) {
				x := fullAt(r)
				for _, i := range fullOuts {
					o := g.Outputs[i]
					v, e := kg.eval(o.Value, x)
					if e != nil {
						keep(e)
						return
					}
					kg.store(o.Value.Type.DType, kg.outPtr[i], kg.lin(x), v)
				}
			})
		}
		if len(rowOuts) > 0 {
			first, rest := kg.block("thread0"), kg.block("rowdone")
			kg.b.NewCondBr(kg.b.NewICmp(enum.IPredEQ, tid, ci(0)), first, rest)
			kg.b = first
			kg.cache = map[cacheKey]value.Value{}
			for _, i := range rowOuts {
				o := g.Outputs[i]
				v, e := kg.eval(o.Value, newIndexLin(o.Value.Type.Shape, row))
				if e != nil {
					keep(e)
					break
				}
				kg.store(o.Value.Type.DType, kg.outPtr[i], row, v)
			}
			kg.cache = map[cacheKey]value.Value{}
			kg.b.NewBr(rest)
			kg.b = rest
		}
		kg.bound = nil
	})
	kg.b.NewRet(nil)
	if err != nil {
		return nil, ptx.Launch{}, err
	}
	return kg.f, ptx.Launch{Grid: plan.Grid, Block: [3]int{T, 1, 1}, Params: args}, nil
}

// rowElement maps position r of row's reduced elements to the operand's index: row·R + r when
// the reduced axes are trailing, else coordinates put together from the row's kept coordinates
// (derived once, here) and r's reduced ones.
func (kg *kgen) rowElement(plan ptx.RowPlan, row value.Value) func(r value.Value) *index {
	if !plan.Scattered {
		rowLin := kg.mul(row, plan.R)
		return func(r value.Value) *index { return newIndexLin(plan.Full, kg.add(rowLin, r)) }
	}
	kept, red := plan.RowShapes()
	kx := newIndexLin(kept, row)
	keptCoord := make([]value.Value, len(kept))
	for d := range kept {
		keptCoord[d] = kg.coord(kx, d)
	}
	return func(r value.Value) *index {
		rx := newIndexLin(red, r)
		redCoord := make([]value.Value, len(red))
		for d := range red {
			redCoord[d] = kg.coord(rx, d)
		}
		return newIndexCoords(plan.Full, ptx.RowCoords(plan.Axes, keptCoord, redCoord))
	}
}

// blockCombine folds every thread's partial acc into the block's total, which every thread
// gets: butterfly shuffles within the warp, then the warps' partials through shared memory in
// warp order. The barriers are llvm.nvvm.barrier0 (bar.sync 0).
func (kg *kgen) blockCombine(accT irg.DType, combine string, acc, lane, warp value.Value, slots *ir.Global, warps int) (value.Value, error) {
	for off := 16; off >= 1; off /= 2 {
		o := kg.shuffleXor(accT, acc, off)
		y, err := kg.binary(combine, accT, acc, o)
		if err != nil {
			return nil, err
		}
		acc = y
	}
	pt := types.NewPointer(regType(accT))
	pt.AddrSpace = 3
	slot := func(w value.Value) value.Value {
		p := kg.b.NewGetElementPtr(slots.ContentType, slots, ci(0), w)
		p.InBounds = true
		return kg.b.NewBitCast(p, pt)
	}
	first, rest := kg.block("lane0"), kg.block("stored")
	kg.b.NewCondBr(kg.b.NewICmp(enum.IPredEQ, lane, ci(0)), first, rest)
	kg.b = first
	kg.b.NewStore(acc, slot(warp)).Align = 8
	kg.b.NewBr(rest)
	kg.b = rest
	barrier := kg.md.declare("llvm.nvvm.barrier0", types.Void)
	kg.b.NewCall(barrier)
	var total value.Value
	for w := range warps {
		ld := kg.b.NewLoad(regType(accT), slot(ci(w)))
		ld.Align = 8
		if total == nil {
			total = ld
			continue
		}
		y, err := kg.binary(combine, accT, total, ld)
		if err != nil {
			return nil, err
		}
		total = y
	}
	kg.b.NewCall(barrier) // the next reduce reuses the slots
	return total, nil
}

// shuffleXor is lane^off's value of x (llvm.nvvm.shfl.sync.bfly, all lanes; 64-bit values as
// two 32-bit halves).
func (kg *kgen) shuffleXor(d irg.DType, x value.Value, off int) value.Value {
	b := kg.b
	shfl := func(name string, t types.Type, v value.Value) value.Value {
		return b.NewCall(kg.md.declare(name, t, types.I32, t, types.I32, types.I32),
			constant.NewInt(types.I32, -1), v, ci(off), ci(0x1f))
	}
	switch regType(d) {
	case types.Float:
		return shfl("llvm.nvvm.shfl.sync.bfly.f32", types.Float, x)
	case types.I32:
		return shfl("llvm.nvvm.shfl.sync.bfly.i32", types.I32, x)
	}
	t := regType(d)
	w := x
	if t == types.Double {
		w = b.NewBitCast(x, types.I64)
	}
	lo := shfl("llvm.nvvm.shfl.sync.bfly.i32", types.I32, b.NewTrunc(w, types.I32))
	hi := shfl("llvm.nvvm.shfl.sync.bfly.i32", types.I32, b.NewTrunc(b.NewLShr(w, constant.NewInt(types.I64, 32)), types.I32))
	r := b.NewOr(b.NewZExt(lo, types.I64), b.NewShl(b.NewZExt(hi, types.I64), constant.NewInt(types.I64, 32)))
	if t == types.Double {
		return b.NewBitCast(r, types.Double)
	}
	return r
}
