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

// transposeKernel is codegen/ptx's transpose-tile template (plan.TransposePlan): per tile,
// consecutive threads read consecutive elements of the transposed buffer's last dim into a
// TileDim × (TileDim+1) shared tile (the pad word keeps the column reads free of bank
// conflicts), then, after a barrier, consecutive threads compute consecutive elements of the
// output's last dim with the view's value taken from the tile.
func (md *module) transposeKernel(k plan.Kernel) (*ir.Func, plan.Launch, error) {
	g := k.Graph
	tt := plan.TransposePlan(k)
	shape := g.Outputs[0].Value.Type.Shape
	args := plan.Params(g)
	kg := md.newKernel(k, args)
	D, R := tt.TileDim, tt.TileRows
	d := tt.View.Type.DType
	st := regType(d)
	if d == irg.Bool {
		st = types.I32
	}
	tile := md.m.NewGlobalDef(k.Name+"_tile", constant.NewUndef(types.NewArray(uint64(D*(D+1)), st)))
	tile.Linkage = enum.LinkageInternal
	tile.AddrSpace = 3
	tile.Typ.AddrSpace = 3
	tile.Align = 8
	at := func(row, col value.Value) value.Value {
		p := kg.b.NewGetElementPtr(tile.ContentType, tile, ci(0), kg.add(kg.mul(row, D+1), col))
		p.InBounds = true
		return p
	}
	tid := kg.sreg("tid.x")
	lo, hi := kg.rem(tid, D), kg.div(tid, D)
	var rest irg.Shape
	var restDims []int
	for i, n := range shape {
		if i != tt.P && i != tt.Last {
			rest, restDims = append(rest, n), append(restDims, i)
		}
	}
	tp, tl := (shape[tt.P]+D-1)/D, (shape[tt.Last]+D-1)/D
	var err error
	keep := func(e error) {
		if e != nil && err == nil {
			err = e
		}
	}
	kg.loop(kg.sreg("ctaid.x"), kg.sreg("nctaid.x"), tt.Tiles, func(id value.Value) {
		p0 := kg.mul(kg.rem(kg.div(id, tl), tp), D)
		l0 := kg.mul(kg.rem(id, tl), D)
		ri := newIndexLin(rest, kg.div(id, tp*tl))
		coords := func(pl, ll value.Value) *index {
			c := make([]value.Value, len(shape))
			for j, dd := range restDims {
				c[dd] = kg.coord(ri, j)
			}
			c[tt.P], c[tt.Last] = kg.add(p0, pl), kg.add(l0, ll)
			return newIndexCoords(shape, c)
		}
		valid := func(x *index) value.Value {
			return kg.b.NewAnd(kg.b.NewICmp(enum.IPredULT, x.coord[tt.P], ci(shape[tt.P])),
				kg.b.NewICmp(enum.IPredULT, x.coord[tt.Last], ci(shape[tt.Last])))
		}
		// Phase 1: coalesced along the buffer's last dim (output dim P).
		for r := range D / R {
			ll := kg.add(hi, ci(r*R))
			x := coords(lo, ll)
			kg.branch(valid(x), "load", func() {
				v, e := kg.eval(tt.View, x)
				if e != nil {
					keep(e)
					return
				}
				if d == irg.Bool {
					v = kg.b.NewZExt(v, types.I32)
				}
				kg.b.NewStore(v, at(ll, lo))
			})
		}
		kg.barrier()
		// Phase 2: coalesced along the output's last dim.
		for r := range D / R {
			pl := kg.add(hi, ci(r*R))
			x := coords(pl, lo)
			kg.branch(valid(x), "store", func() {
				var v value.Value = kg.b.NewLoad(st, at(lo, pl))
				if d == irg.Bool {
					v = kg.b.NewICmp(enum.IPredNE, v, ci(0))
				}
				kg.bound = map[*irg.Value]value.Value{tt.View: v}
				outs := make([]int, len(g.Outputs))
				for i := range outs {
					outs[i] = i
				}
				keep(kg.storeOutputs(outs, x))
				kg.bound = nil
			})
		}
		kg.barrier() // the next tile overwrites the shared one
	})
	kg.b.NewRet(nil)
	if err != nil {
		return nil, plan.Launch{}, err
	}
	return kg.f, plan.Launch{Grid: tt.Grid, Block: tt.Block, Params: args}, nil
}
