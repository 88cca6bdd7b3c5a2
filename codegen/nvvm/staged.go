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

// stagedPool is codegen/ptx's staged template for pooling (ptx.StagedPlan "pool"): a block takes
// tiles of TileOut consecutive outputs; in phase 1 its threads copy the input range the tile's
// windows read (the first output's first tap to the last output's last tap, as codegen/ptx
// bounds it), consecutive threads on consecutive elements from the start of the range's
// 32-byte sector, into shared memory; after a barrier each thread pools its output from there.
func (md *module) stagedPool(k ptx.Kernel, st ptx.Staged) (*ir.Func, ptx.Launch, error) {
	g := k.Graph
	args := ptx.Params(g)
	kg := md.newKernel(k, args)
	shape := g.Outputs[0].Value.Type.Shape
	n := shape.NumElements()
	pool := st.Value
	in := pool.Args[0]
	d := in.Type.DType
	s := in.Type.Shape
	stage := md.m.NewGlobalDef(k.Name+"_staged", constant.NewUndef(types.NewArray(uint64(st.Slots), regType(d))))
	stage.Linkage = enum.LinkageInternal
	stage.AddrSpace = 3
	stage.Typ.AddrSpace = 3
	stage.Align = 8
	slot := func(i value.Value) value.Value {
		p := kg.b.NewGetElementPtr(stage.ContentType, stage, ci(0), i)
		p.InBounds = true
		return p
	}
	kern := pool.Attrs.Ints("kernel")
	stride := pool.Attrs.Ints("stride")
	if stride == nil {
		stride = kern
	}
	pad := pool.Attrs.Ints("padding")
	if pad == nil {
		pad = []int{0, 0}
	}
	// bound is the linear input index of output o's first (or last) tap, clamped into the
	// image; with row padding, the whole first (or last) image row.
	bound := func(o value.Value, last bool) value.Value {
		x := newIndexLin(pool.Type.Shape, o)
		kh, kw := 0, 0
		if last {
			kh, kw = kern[0]-1, kern[1]-1
		}
		ih := kg.clamp(kg.add(kg.sub(kg.mul(kg.coord(x, 2), stride[0]), ci(pad[0])), ci(kh)), s[2])
		iw := kg.clamp(kg.add(kg.sub(kg.mul(kg.coord(x, 3), stride[1]), ci(pad[1])), ci(kw)), s[3])
		if pad[0] > 0 {
			iw = ci(map[bool]int{false: 0, true: s[3] - 1}[last])
		}
		return kg.lin(newIndexCoords(s, []value.Value{kg.coord(x, 0), kg.coord(x, 1), ih, iw}))
	}
	tid := kg.sreg("tid.x")
	T := st.TileOut
	var err error
	keep := func(e error) {
		if e != nil && err == nil {
			err = e
		}
	}
	kg.loop(kg.sreg("ctaid.x"), kg.sreg("nctaid.x"), (n+T-1)/T, func(id value.Value) {
		o0 := kg.mul(id, T)
		last := kg.add(o0, ci(T-1))
		last = kg.b.NewSelect(kg.b.NewICmp(enum.IPredUGT, last, ci(n-1)), ci(n-1), last)
		lo := bound(o0, false)
		end := kg.add(bound(last, true), ci(1))
		start := kg.add(kg.b.NewAnd(lo, ci(-max(1, 32/d.Size()))), tid)
		kg.loopTo(start, ci(T), end, func(q value.Value) {
			kg.branch(kg.b.NewICmp(enum.IPredUGE, q, lo), "stage", func() {
				x, e := kg.eval(in, newIndexLin(s, q))
				if e != nil {
					keep(e)
					return
				}
				kg.b.NewStore(x, slot(kg.sub(q, lo)))
			})
		})
		kg.barrier()
		o := kg.add(o0, tid)
		kg.branch(kg.b.NewICmp(enum.IPredULT, o, ci(n)), "out", func() {
			v, e := kg.poolTaps(pool, newIndexLin(pool.Type.Shape, o), func(y *index) value.Value {
				return kg.b.NewLoad(regType(d), slot(kg.sub(kg.lin(y), lo)))
			})
			if e != nil {
				keep(e)
				return
			}
			kg.bound = map[*irg.Value]value.Value{pool: v}
			outs := make([]int, len(g.Outputs))
			for i := range outs {
				outs[i] = i
			}
			keep(kg.storeOutputs(outs, newIndexLin(shape, o)))
			kg.bound = nil
		})
		kg.barrier() // the next tile overwrites the stage
	})
	kg.b.NewRet(nil)
	if err != nil {
		return nil, ptx.Launch{}, err
	}
	return kg.f, ptx.Launch{Grid: st.Grid, Block: st.Block, Params: args}, nil
}
