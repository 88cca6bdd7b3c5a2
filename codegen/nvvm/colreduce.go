package nvvm

import (
	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
)

// colReduce is codegen/ptx's column reduction template (plan.ReducePlan "column", the reduced
// axes followed by kept ones: [A, R, C]): a block of TileCols × TileRows threads per tile of
// TileCols columns (block-stride over tiles); thread (x, y) folds rows y, y+TileRows, ... of
// its column, coalesced across the warp, and the column's TileRows partials combine through
// shared memory in row order, as codegen/ptx does. Lanes past the last column fold column C-1
// and discard it. Full-shape outputs go down the column once more; row 0 of the block stores
// the tile's per-column outputs.
func (md *module) colReduce(k plan.Kernel, rp plan.Reduction) (*ir.Func, plan.Launch, error) {
	g := k.Graph
	W, H := rp.TileCols, rp.TileRows
	ctiles := (rp.C + W - 1) / W
	args, work, err := colReduceArgs(k, rp, rp.A*ctiles) // symfold.go
	if err != nil {
		return nil, plan.Launch{}, err
	}
	kg := md.newKernel(k, args)
	if readsViews(k, rp) {
		if err := kg.bindReduceViews(k, args); err != nil { // symfold_reduce_view.go
			return nil, plan.Launch{}, err
		}
		defer func() { kg.at = nil }()
	}
	tileEnd, rEnd := kg.colExtent(k, rp, rp.A*ctiles) // symcolumn.go
	slots := md.sharedSlots(k.Name, W*H)
	tid := kg.sreg("tid.x")
	tx := kg.b.NewAnd(tid, ci(W-1))
	ty := kg.b.NewLShr(tid, ci(5))
	accs := kg.accumulators(rp.Reduces)
	var fullOuts, rowOuts []int
	for i, o := range g.Outputs {
		if rp.IsRowShape(o.Value.Type.Shape) {
			rowOuts = append(rowOuts, i)
		} else {
			fullOuts = append(fullOuts, i)
		}
	}
	keep := func(e error) {
		if e != nil && err == nil {
			err = e
		}
	}
	kg.loopTo(kg.sreg("ctaid.x"), kg.sreg("nctaid.x"), tileEnd, func(tile value.Value) {
		ai := kg.div(tile, ctiles)
		c := kg.add(kg.mul(kg.rem(tile, ctiles), W), tx)
		cok := kg.b.NewICmp(enum.IPredULT, c, ci(rp.C))
		cc := kg.clamp(c, rp.C)
		base := kg.mul(ai, rp.R*rp.C)
		at := func(col value.Value) func(r value.Value) *index {
			return func(r value.Value) *index {
				return newIndexLin(rp.Full, kg.add(base, kg.add(kg.mul(r, rp.C), col)))
			}
		}
		kg.bound = map[*irg.Value]value.Value{}
		for _, red := range rp.Reduces {
			accT, combine, _ := plan.Accumulator(red)
			acc := accs[red]
			keep(kg.foldTo(red, acc, ty, ci(H), rEnd, at(cc)))
			kg.b.NewStore(kg.b.NewLoad(regType(accT), acc), kg.slot(slots, tid, accT)).Align = 8
			kg.barrier()
			var total value.Value = kg.b.NewLoad(regType(accT), kg.slot(slots, tx, accT))
			for y := 1; y < H; y++ {
				x := kg.b.NewLoad(regType(accT), kg.slot(slots, kg.add(tx, ci(W*y)), accT))
				t, e := kg.binary(combine, accT, total, x)
				keep(e)
				if e != nil {
					break
				}
				total = t
			}
			kg.barrier() // the next reduce reuses the slots
			kg.bound[red] = kg.cast(accT, total, red.Type.DType)
		}
		if len(fullOuts) > 0 {
			kg.branch(cok, "col", func() {
				kg.loopTo(ty, ci(H), rEnd, func(r value.Value) { keep(kg.storeOutputs(fullOuts, at(c)(r))) })
			})
		}
		if len(rowOuts) > 0 {
			row0 := kg.b.NewAnd(kg.b.NewICmp(enum.IPredEQ, ty, ci(0)), cok)
			kg.branch(row0, "row0", func() {
				keep(kg.storeRowOutputs(rowOuts, kg.add(kg.mul(ai, rp.C), c)))
			})
		}
		kg.bound = nil
	})
	kg.b.NewRet(nil)
	if err != nil {
		return nil, plan.Launch{}, err
	}
	return kg.f, plan.Launch{Grid: rp.Grid, Block: [3]int{rp.Threads, 1, 1}, Params: args, Work: work}, nil
}
