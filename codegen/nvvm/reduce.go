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

// rowReduce is codegen/ptx's row reduction template (plan.ReducePlan "row"): one block per row
// (block-stride over rows); thread t folds elements t, t+T, ... of the row into an accumulator
// (plan.Accumulator), the warp combines by butterfly shuffles (16, 8, 4, 2, 1), lane 0 of each
// warp leaves its partial in shared memory and every thread folds the partials in warp order:
// the same order as codegen/ptx, so exact reductions give the same bits. Reduces run one after
// the other, each one pass over the row (softmax's max and sum are two passes here, where
// codegen/ptx folds them online in one); full-shape outputs are stored by a last pass, per-row
// ones by thread 0.
func (md *module) rowReduce(k plan.Kernel, rp plan.Reduction) (*ir.Func, plan.Launch, error) {
	g := k.Graph
	args, work, err := rowArgs(k, rp) // symfold_scatter.go
	if err != nil {
		return nil, plan.Launch{}, err
	}
	args = viewDims(k, rp, args) // symfold_reduce_view.go
	kg := md.newKernel(k, args)
	if readsViews(k, rp) {
		if err := kg.bindReduceViews(k, args); err != nil { // reset with kg.bound after the row
			return nil, plan.Launch{}, err
		}
	}
	rows, rEnd := kg.rowExtent(k, rp)
	rowLen, err := kg.rowLenAt(k, rp, args) // symrowlen.go
	if err != nil {
		return nil, plan.Launch{}, err
	}
	if rowLen != nil {
		rEnd = rowLen
	}
	T := rp.Threads
	warps := T / 32
	slots := md.sharedSlots(k.Name, warps)
	tid := kg.sreg("tid.x")
	lane := kg.b.NewAnd(tid, ci(31))
	warp := kg.b.NewLShr(tid, ci(5))
	accs := kg.accumulators(rp.Reduces)
	keep := func(e error) {
		if e != nil && err == nil {
			err = e
		}
	}
	kg.loopTo(kg.sreg("ctaid.x"), kg.sreg("nctaid.x"), rows, func(row value.Value) {
		fullAt := kg.rowElement(rp, row)
		if rowLen != nil {
			fullAt = kg.rowAtRun(rp, row, rowLen, &err)
			keep(kg.bindReduceViews(k, args)) // the tops of views it reads, if any (symfold_reduce_view.go)
		}
		kg.bound = map[*irg.Value]value.Value{}
		for _, red := range rp.Reduces {
			accT, combine, identity := plan.Accumulator(red)
			acc := accs[red]
			kg.identity(slots, accT, identity) // symfold_scatter.go
			keep(kg.foldTo(red, acc, tid, ci(T), rEnd, fullAt))
			total, e := kg.blockCombine(accT, combine, kg.b.NewLoad(regType(accT), acc), lane, warp, slots, warps)
			keep(e)
			if e == nil {
				kg.bound[red] = kg.cast(accT, total, red.Type.DType)
			}
		}
		var fullOuts, rowOuts []int
		for i, o := range g.Outputs {
			if o.Value.Type.Shape.Equal(rp.Full) {
				fullOuts = append(fullOuts, i)
			} else {
				rowOuts = append(rowOuts, i)
			}
		}
		if len(fullOuts) > 0 {
			kg.loopTo(tid, ci(T), rEnd, func(r value.Value) { keep(kg.storeOutputs(fullOuts, fullAt(r))) })
		}
		if len(rowOuts) > 0 {
			kg.branch(kg.b.NewICmp(enum.IPredEQ, tid, ci(0)), "thread0", func() {
				keep(kg.storeRowOutputs(rowOuts, row))
			})
		}
		kg.bound, kg.at = nil, nil
	})
	kg.b.NewRet(nil)
	if err != nil {
		return nil, plan.Launch{}, err
	}
	return kg.f, plan.Launch{Grid: rp.Grid, Block: [3]int{T, 1, 1}, Params: args, Work: work}, nil
}

// storeOutputs evaluates the kernel's outputs outs at full-shape element x and stores them.
func (kg *kgen) storeOutputs(outs []int, x *index) error {
	for _, i := range outs {
		o := kg.g.Outputs[i]
		v, err := kg.eval(o.Value, x)
		if err != nil {
			return err
		}
		kg.store(o.Value.Type.DType, kg.outPtr[i], kg.lin(x), v)
	}
	return nil
}

// storeRowOutputs evaluates and stores the per-row outputs outs at linear index lin.
func (kg *kgen) storeRowOutputs(outs []int, lin value.Value) error {
	for _, i := range outs {
		o := kg.g.Outputs[i]
		v, err := kg.eval(o.Value, newIndexLin(o.Value.Type.Shape, lin))
		if err != nil {
			return err
		}
		kg.store(o.Value.Type.DType, kg.outPtr[i], lin, v)
	}
	return nil
}

// fold folds red's operand at elements at(r), r = start, start+step, ... < end, into the
// accumulator acc, starting from the identity.
func (kg *kgen) fold(red *irg.Value, acc *ir.InstAlloca, start, step value.Value, end int, at func(r value.Value) *index) error {
	return kg.foldTo(red, acc, start, step, ci(end), at)
}

// foldTo is fold with an end computed at run time.
func (kg *kgen) foldTo(red *irg.Value, acc *ir.InstAlloca, start, step, end value.Value, at func(r value.Value) *index) error {
	accT, combine, identity := plan.Accumulator(red)
	kg.b.NewStore(constVal(accT, identity), acc)
	var err error
	kg.loopTo(start, step, end, func(r value.Value) {
		x, e := kg.eval(red.Args[0], at(r))
		if e == nil {
			var y value.Value
			if y, e = kg.binary(combine, accT, kg.b.NewLoad(regType(accT), acc), kg.cast(red.Args[0].Type.DType, x, accT)); e == nil {
				kg.b.NewStore(y, acc)
			}
		}
		if e != nil && err == nil {
			err = e
		}
	})
	return err
}

// accumulators allocates one accumulator per reduce (in the entry block: libNVVM promotes them
// to registers).
func (kg *kgen) accumulators(reds []*irg.Value) map[*irg.Value]*ir.InstAlloca {
	accs := map[*irg.Value]*ir.InstAlloca{}
	for _, red := range reds {
		accT, _, _ := plan.Accumulator(red)
		accs[red] = kg.b.NewAlloca(regType(accT))
	}
	return accs
}

// sharedSlots declares the kernel's shared array of n 8-byte slots (partials).
func (md *module) sharedSlots(name string, n int) *ir.Global {
	return md.sharedArray(name+"_partials", n, types.I64, 8)
}

// sharedArray declares a shared array of n elements of type elem, aligned to align bytes.
func (md *module) sharedArray(name string, n int, elem types.Type, align int) *ir.Global {
	gl := md.m.NewGlobalDef(name, constant.NewUndef(types.NewArray(uint64(n), elem)))
	gl.Linkage = enum.LinkageInternal
	gl.AddrSpace = 3
	gl.Typ.AddrSpace = 3
	gl.Align = ir.Align(align)
	return gl
}

// slot is a pointer to slot w of slots, as an accumulator of dtype d.
func (kg *kgen) slot(slots *ir.Global, w value.Value, d irg.DType) value.Value {
	pt := types.NewPointer(regType(d))
	pt.AddrSpace = 3
	p := kg.b.NewGetElementPtr(slots.ContentType, slots, ci(0), w)
	p.InBounds = true
	return kg.b.NewBitCast(p, pt)
}

// branch runs body in a block entered where cond holds and continues after it; values body
// computes are not reused after it.
func (kg *kgen) branch(cond value.Value, stem string, body func()) {
	in, after := kg.block(stem), kg.block(stem+"_done")
	kg.b.NewCondBr(cond, in, after)
	kg.b = in
	kg.cache = map[cacheKey]value.Value{}
	body()
	kg.cache = map[cacheKey]value.Value{}
	kg.b.NewBr(after)
	kg.b = after
}

func (kg *kgen) barrier() { kg.b.NewCall(kg.md.declare("llvm.nvvm.barrier0", types.Void)) }

// rowElement maps position r of row's reduced elements to the operand's index: row·R + r when
// the reduced axes are trailing, else coordinates put together from the row's kept coordinates
// (derived once, here) and r's reduced ones.
func (kg *kgen) rowElement(rp plan.Reduction, row value.Value) func(r value.Value) *index {
	if !rp.Scattered {
		rowLin := kg.mul(row, rp.R)
		return func(r value.Value) *index { return newIndexLin(rp.Full, kg.add(rowLin, r)) }
	}
	kept, red := rp.RowShapes()
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
		return newIndexCoords(rp.Full, plan.RowCoords(rp.Axes, keptCoord, redCoord))
	}
}

// blockCombine folds every thread's partial acc into the block's total, which every thread
// gets: butterfly shuffles within the warp, then the warps' partials through shared memory in
// warp order. The barriers are llvm.nvvm.barrier0 (bar.sync 0), or a scattered fold's over the
// run's block (blockBarrier).
func (kg *kgen) blockCombine(accT irg.DType, combine string, acc, lane, warp value.Value, slots *ir.Global, warps int) (value.Value, error) {
	for off := 16; off >= 1; off /= 2 {
		o := kg.shuffleXor(accT, acc, off)
		y, err := kg.binary(combine, accT, acc, o)
		if err != nil {
			return nil, err
		}
		acc = y
	}
	kg.branch(kg.b.NewICmp(enum.IPredEQ, lane, ci(0)), "lane0", func() {
		kg.b.NewStore(acc, kg.slot(slots, warp, accT)).Align = 8
	})
	kg.blockBarrier() // symfold_scatter.go
	var total value.Value
	for w := range warps {
		ld := kg.b.NewLoad(regType(accT), kg.slot(slots, ci(w), accT))
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
	kg.blockBarrier() // the next reduce reuses the slots
	return total, nil
}

// shuffleXor is lane^off's value of x (llvm.nvvm.shfl.sync.bfly, all lanes). A 64-bit value
// crosses as its two 32-bit halves, split and joined as codegen/ptx does (mov.b64 {lo, hi}):
// an i64 by a bitcast to <2 x i32>, which LLVM lowers to that mov; an f64 by that one mov as
// inline assembly, since LLVM bitcasts an f64 to i64 first (one more mov each way), and
// splitting with trunc/lshr/zext/shl/or costs six more.
func (kg *kgen) shuffleXor(d irg.DType, x value.Value, off int) value.Value {
	b := kg.b
	shfl := func(v value.Value) value.Value {
		return b.NewCall(kg.md.declare("llvm.nvvm.shfl.sync.bfly.i32", types.I32, types.I32, types.I32, types.I32, types.I32),
			constant.NewInt(types.I32, -1), v, ci(off), ci(0x1f))
	}
	t := regType(d)
	switch t {
	case types.Float:
		return b.NewCall(kg.md.declare("llvm.nvvm.shfl.sync.bfly.f32", types.Float, types.I32, types.Float, types.I32, types.I32),
			constant.NewInt(types.I32, -1), x, ci(off), ci(0x1f))
	case types.I32:
		return shfl(x)
	case types.Double:
		halves := kg.asmRet(types.NewStruct(types.I32, types.I32), "mov.b64 {$0, $1}, $2;", "=r,=r,d", x)
		lo, hi := shfl(b.NewExtractValue(halves, 0)), shfl(b.NewExtractValue(halves, 1))
		return kg.asmRet(types.Double, "mov.b64 $0, {$1, $2};", "=d,r,r", lo, hi)
	}
	v2 := types.NewVector(2, types.I32)
	w := b.NewBitCast(x, v2)
	lo, hi := shfl(b.NewExtractElement(w, ci(0))), shfl(b.NewExtractElement(w, ci(1)))
	var r value.Value = b.NewInsertElement(constant.NewUndef(v2), lo, ci(0))
	r = b.NewInsertElement(r, hi, ci(1))
	return b.NewBitCast(r, t)
}
