package nvvm

import (
	"fmt"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// Concatenation at symbolic sizes, as codegen/ptx's symconcat.go: a loop kernel whose outputs are
// concats of views of inputs along a symbolic dim (a decoder's present_k = concat(past_k, k)) is
// one thread per output element of a grid-stride loop over the run's element count (the size
// parameter, after the dims': symStrideArgs; later outputs' counts come from the dims). Each
// element's coordinate c along the axis names the operand, the last j whose offset (the
// operands' sizes along the axis before it, at the run) is at most c, and is read from that
// operand's views at c minus the offset, as its memory's bits. An operand empty at the run is
// never chosen.

// symConcatKernel emits the concat of views of a kernel plan.ConcatCopy takes, at the run's sizes
// (one fused with computation is borrowed: fallback.go).
func (md *module) symConcatKernel(k plan.Kernel) (*ir.Func, plan.Launch, error) {
	g := k.Graph
	if !plan.ConcatCopy(g) {
		return nil, plan.Launch{}, fmt.Errorf("a kernel concatenating along symbolic sizes must concat views of inputs")
	}
	return md.symElements(k, func(kg *kgen, sv *symView, tid, step value.Value) error { // symstride_copy.go
		for _, o := range g.Outputs {
			for _, e := range plan.SymSizes(o.Value, k.Sizes) {
				if err := sv.valid(e); err != nil {
					return err
				}
			}
			for _, a := range o.Value.Args {
				if err := sv.check(a); err != nil {
					return err
				}
			}
		}
		for oi, o := range g.Outputs {
			n := kg.size
			if oi > 0 {
				count := sym.Const(1)
				for _, e := range plan.SymSizes(o.Value, k.Sizes) {
					count = sym.Mul(count, e)
				}
				n = sv.eval(count)
			}
			kg.concatCopy(sv, o.Value, kg.outPtr[oi], tid, step, n)
		}
		return nil
	})
}

// concatCopy emits the grid-stride loop writing the n elements of concat c to out.
func (kg *kgen) concatCopy(sv *symView, c *irg.Value, out, tid, step, n value.Value) {
	axis := c.Attrs.Int("axis", 0)
	offs := concatOffsets(sv, c) // computed once
	d := c.Type.DType
	t, eb := memType(d), d.Size()
	osz := plan.SymSizes(c, sv.sizes)
	kg.loopTo(tid, step, n, func(i value.Value) {
		x := sv.delinearize(osz, i)
		done := kg.block("concat_done")
		for j := len(c.Args) - 1; j >= 0; j-- {
			var next *ir.Block
			xj := append([]value.Value(nil), x...)
			if j > 0 {
				in := kg.block("concat_operand")
				next = kg.block("concat_next")
				kg.b.NewCondBr(kg.b.NewICmp(enum.IPredULT, x[axis], offs[j]), next, in)
				kg.b = in
				xj[axis] = kg.sub(x[axis], offs[j])
			}
			buf, lin := sv.lin(c.Args[j], xj)
			ld := kg.b.NewLoad(t, kg.elemPtr(d, kg.ptr[buf], lin))
			ld.Align = ir.Align(eb)
			st := kg.b.NewStore(ld, kg.elemPtr(d, out, i))
			st.Align = ir.Align(eb)
			kg.b.NewBr(done)
			if next != nil {
				kg.b = next
			}
		}
		kg.b = done
	})
}

// concatOffsets is the offsets along concat c's axis of its operands at the run: the operands'
// sizes along it before each.
func concatOffsets(sv *symView, c *irg.Value) []value.Value {
	axis := c.Attrs.Int("axis", 0)
	offs := make([]value.Value, len(c.Args))
	offs[0] = ci(0)
	for j := 1; j < len(c.Args); j++ {
		offs[j] = sv.kg.add(offs[j-1], sv.eval(plan.SymSizes(c.Args[j-1], sv.sizes)[axis]))
	}
	return offs
}
