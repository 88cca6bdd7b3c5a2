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

// stagedKernel is codegen/ptx's staged template (plan.StagedPlan): a block takes tiles of
// TileOut consecutive outputs; in phase 1 its threads copy what the tile needs into shared
// memory, consecutive threads on consecutive elements from the start of each range's 32-byte
// sector; after a barrier each thread computes its output with the staged value taken from
// there. Pooling stages the input range the tile's windows read (the first output's first tap
// to the last output's last tap, as codegen/ptx bounds it); a concat stages each operand's
// elements that the tile holds, read aligned to the operand's own sectors and written to the
// slot of their output position.
func (md *module) stagedKernel(k plan.Kernel, st plan.Staged) (*ir.Func, plan.Launch, error) {
	g := k.Graph
	args := plan.Params(g)
	kg := md.newKernel(k, args)
	shape := g.Outputs[0].Value.Type.Shape
	n := shape.NumElements()
	d := st.Value.Type.DType
	if st.Kind == "pool" {
		d = st.Value.Args[0].Type.DType
	}
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
	tid := kg.sreg("tid.x")
	T := st.TileOut
	var err error
	keep := func(e error) {
		if e != nil && err == nil {
			err = e
		}
	}
	// stageRange copies v's elements lo..end-1 (linear indexes in v): thread tid takes every
	// T-th index from the start of lo's 32-byte sector, skips those before lo, and stores the
	// element at slotOf(q).
	stageRange := func(v *irg.Value, lo, end value.Value, slotOf func(q value.Value) value.Value) {
		start := kg.add(kg.b.NewAnd(lo, ci(-max(1, 32/v.Type.DType.Size()))), tid)
		kg.loopTo(start, ci(T), end, func(q value.Value) {
			kg.branch(kg.b.NewICmp(enum.IPredUGE, q, lo), "stage", func() {
				x, e := kg.eval(v, newIndexLin(v.Type.Shape, q))
				if e != nil {
					keep(e)
					return
				}
				kg.b.NewStore(x, slotOf(q))
			})
		})
	}
	var at func(o, lo value.Value) (value.Value, error)
	var load func(o0, last value.Value) value.Value
	if st.Kind == "pool" {
		load, at = kg.poolStage(st.Value, slot, stageRange)
	} else {
		load, at = kg.concatStage(st, slot, stageRange)
	}
	kg.loop(kg.sreg("ctaid.x"), kg.sreg("nctaid.x"), (n+T-1)/T, func(id value.Value) {
		o0 := kg.mul(id, T)
		last := kg.add(o0, ci(T-1))
		last = kg.b.NewSelect(kg.b.NewICmp(enum.IPredUGT, last, ci(n-1)), ci(n-1), last)
		lo := load(o0, last)
		kg.barrier()
		o := kg.add(o0, tid)
		kg.branch(kg.b.NewICmp(enum.IPredULT, o, ci(n)), "out", func() {
			v, e := at(o, lo)
			if e != nil {
				keep(e)
				return
			}
			kg.bound = map[*irg.Value]value.Value{st.Value: v}
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
		return nil, plan.Launch{}, err
	}
	return kg.f, plan.Launch{Grid: st.Grid, Block: st.Block, Params: args}, nil
}

type stageFunc func(v *irg.Value, lo, end value.Value, slotOf func(q value.Value) value.Value)

// poolStage: phase 1 copies the input range [first tap of the tile's first output, last tap of
// its last output] (load returns its start); phase 2 pools output o from it.
func (kg *kgen) poolStage(pool *irg.Value, slot func(value.Value) value.Value, stageRange stageFunc) (
	load func(o0, last value.Value) value.Value, at func(o, lo value.Value) (value.Value, error)) {
	in := pool.Args[0]
	s := in.Type.Shape
	kern, stride, pad := plan.PoolGeometry(pool)
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
	load = func(o0, last value.Value) value.Value {
		lo := bound(o0, false)
		stageRange(in, lo, kg.add(bound(last, true), ci(1)), func(q value.Value) value.Value { return slot(kg.sub(q, lo)) })
		return lo
	}
	at = func(o, lo value.Value) (value.Value, error) {
		return kg.poolTaps(pool, newIndexLin(pool.Type.Shape, o), func(y *index) value.Value {
			return kg.b.NewLoad(regType(in.Type.DType), slot(kg.sub(kg.lin(y), lo)))
		})
	}
	return load, at
}

// concatStage: phase 1 copies, for each operand, the contiguous range of its elements the
// tile's outputs hold (concatRange) to the slots of their output positions; phase 2 takes
// output o's value from its slot.
func (kg *kgen) concatStage(st plan.Staged, slot func(value.Value) value.Value, stageRange stageFunc) (
	load func(o0, last value.Value) value.Value, at func(o, lo value.Value) (value.Value, error)) {
	cat := st.Value
	row := cat.Type.Shape[st.Axis] * st.Inner
	// concatRange is the number of elements of the operand at offset off (size m along the
	// axis) that lie before output position o.
	concatRange := func(o value.Value, off, m int) value.Value {
		r := kg.sub(kg.rem(o, row), ci(off*st.Inner))
		c := kg.clamp(r, m*st.Inner+1)
		return kg.add(kg.mul(kg.div(o, row), m*st.Inner), c)
	}
	var o0 value.Value
	load = func(first, last value.Value) value.Value {
		o0 = first
		end := kg.add(last, ci(1))
		off := 0
		for _, op := range cat.Args {
			m := op.Type.Shape[st.Axis]
			lo, hi := concatRange(o0, off, m), concatRange(end, off, m)
			opOff := off
			// Operand element q sits at output (q / (m·inner))·row + off·inner + q % (m·inner).
			stageRange(op, lo, hi, func(q value.Value) value.Value {
				p := kg.add(kg.mul(kg.div(q, m*st.Inner), row), kg.add(kg.rem(q, m*st.Inner), ci(opOff*st.Inner)))
				return slot(kg.sub(p, o0))
			})
			off += m
		}
		return nil
	}
	at = func(o, _ value.Value) (value.Value, error) {
		return kg.b.NewLoad(regType(cat.Type.DType), slot(kg.sub(o, o0))), nil
	}
	return load, at
}
