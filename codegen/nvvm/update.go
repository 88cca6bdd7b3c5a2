package nvvm

import (
	"fmt"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
)

// updateKernel is codegen/ptx's update template (its update.go) for one update_slice op, from
// the same plan (plan.UpdatePlan and its Launch): the operand seen as [B·M, S, N], the update as
// [B·M, T, N], a grid-stride thread per element of the update in place (plan.Kernel.InPlace: the
// output's memory is the operand's) or of the result otherwise. Elements move as integers of
// their size, raw bits, so every dtype is exact (NaN payloads and -0 too); an update read through
// views is evaluated through them and stored in its dtype.
func (md *module) updateKernel(k plan.Kernel) (*ir.Func, plan.Launch, error) {
	g := k.Graph
	v, ok := plan.UpdateOp(g)
	if !ok {
		return nil, plan.Launch{}, fmt.Errorf("the kernel has no update_slice op")
	}
	for _, a := range []*irg.Value{v.Args[0], v.Args[2]} {
		if a.Op != irg.OpInput && a.Op != irg.OpParam {
			return nil, plan.Launch{}, fmt.Errorf("update_slice reads %s as its operand or positions, want a buffer", a.Op)
		}
	}
	l := plan.UpdatePlan(v)
	args, work, err := symUpdate(k, l.Elements(k.InPlace))
	if err != nil {
		return nil, plan.Launch{}, err
	}
	kg := md.newKernel(k, args)
	d := v.Type.DType
	operand, start, out := kg.ptr[v.Args[0]], kg.ptr[v.Args[2]], kg.outPtr[0]
	rows := l.S
	if k.InPlace {
		rows = l.T
	}
	tid := kg.b.NewAdd(kg.b.NewMul(kg.sreg("ctaid.x"), kg.sreg("ntid.x")), kg.sreg("tid.x"))
	step := kg.b.NewMul(kg.sreg("nctaid.x"), kg.sreg("ntid.x"))
	kg.loopTo(tid, step, kg.units(l.Elements(k.InPlace)), func(i value.Value) {
		// i = (bm·rows + row)·N + j
		r := kg.div(i, l.N)
		bm, row := kg.div(r, rows), kg.rem(r, rows)
		p := kg.updateStart(start, v.Args[2].Type.DType, bm, l)
		if k.InPlace {
			// The element's place in the result: i + (bm·(S−T) + p)·N.
			dst := kg.add(kg.mul(kg.add(kg.mul(bm, l.S-l.T), p), l.N), i)
			if e := kg.updateElement(v, out, dst, i); e != nil && err == nil {
				err = e
			}
			return
		}
		// Rows p..p+T−1 come from the update (row p+t at (bm·T + t)·N + j), the others from
		// the operand at i; row < p wraps to a large unsigned rel.
		rel := kg.b.NewSub(row, p)
		in := kg.b.NewICmp(enum.IPredULT, rel, ci(l.T))
		from, keep, done := kg.block("update"), kg.block("keep"), kg.block("copied")
		kg.b.NewCondBr(in, from, keep)
		kg.b = from
		src := kg.add(kg.mul(kg.add(kg.mul(bm, l.T), rel), l.N), kg.rem(i, l.N))
		if e := kg.updateElement(v, out, i, src); e != nil && err == nil {
			err = e
		}
		kg.b.NewBr(done)
		kg.b = keep
		kg.copyBits(d, out, i, operand, i)
		kg.b.NewBr(done)
		kg.b = done
	})
	kg.b.NewRet(nil)
	if err != nil {
		return nil, plan.Launch{}, err
	}
	grid, block := l.Launch(k.InPlace)
	return kg.f, plan.Launch{Grid: grid, Block: block, Params: args, Work: work}, nil
}

// updateStart loads start[bm / M] and clamps it to [0, S−T] in 64 bits, as the op defines.
func (kg *kgen) updateStart(start value.Value, d irg.DType, bm value.Value, l plan.UpdateLayout) value.Value {
	b := kg.b
	var p value.Value = b.NewLoad(memType(d), kg.elemPtr(d, start, kg.div(bm, l.M)))
	switch d {
	case irg.I64:
	case irg.U8:
		p = b.NewZExt(p, types.I64)
	default: // i32, i8: sign-extended
		p = b.NewSExt(p, types.I64)
	}
	zero, hi := constant.NewInt(types.I64, 0), constant.NewInt(types.I64, int64(l.S-l.T))
	p = b.NewSelect(b.NewICmp(enum.IPredSLT, p, zero), zero, p)
	p = b.NewSelect(b.NewICmp(enum.IPredSGT, p, hi), hi, p)
	return b.NewTrunc(p, types.I32)
}

// updateElement writes element si of v's update to element di of out: raw bits from the
// update's buffer, or, read through views, the element evaluated through them.
func (kg *kgen) updateElement(v *irg.Value, out, di, si value.Value) error {
	u := v.Args[1]
	if u.Op == irg.OpInput || u.Op == irg.OpParam {
		kg.copyBits(v.Type.DType, out, di, kg.ptr[u], si)
		return nil
	}
	x, err := kg.eval(u, newIndexLin(u.Type.Shape, si))
	if err != nil {
		return err
	}
	kg.store(v.Type.DType, out, di, x)
	return nil
}

// copyBits copies element si of src to element di of dst (dtype d) as an integer of its size.
func (kg *kgen) copyBits(d irg.DType, dst, di, src, si value.Value) {
	it := types.NewInt(uint64(8 * d.Size()))
	pt := types.NewPointer(it)
	pt.AddrSpace = 1
	ld := kg.b.NewLoad(it, kg.b.NewBitCast(kg.elemPtr(d, src, si), pt))
	ld.Align = ir.Align(d.Size())
	st := kg.b.NewStore(ld, kg.b.NewBitCast(kg.elemPtr(d, dst, di), pt))
	st.Align = ir.Align(d.Size())
}
