package nvvm

import (
	"fmt"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
)

// Copies that move symbolic dims, as codegen/ptx's symcopy.go: a loop kernel whose one output is
// a chain of views of an input ([2, seq, 4] → [seq, 2, 4]) is not rows of its buffers, so it
// takes the dims (plan.Kernel.Sizes) and computes each output element's coordinates and its
// source's index at the run's sizes (symstride.go), one element per thread of a grid-stride loop
// over the run's element count, the size parameter after the dims. Elements move as their
// memory's bits.

// symCopyKernel emits the copy of a kernel plan.SymbolicCopy takes, at the run's sizes.
func (md *module) symCopyKernel(k plan.Kernel) (*ir.Func, plan.Launch, error) {
	g := k.Graph
	if why := plan.SymbolicCopy(g); why != "" {
		return nil, plan.Launch{}, fmt.Errorf("a kernel moving symbolic dims must copy one input through views; %s", why)
	}
	out := g.Outputs[0].Value
	return md.symElements(k, func(kg *kgen, sv *symView, tid, step value.Value) error {
		if err := sv.check(out); err != nil {
			return err
		}
		d := out.Type.DType
		t, eb := memType(d), d.Size()
		osz := plan.SymSizes(out, k.Sizes)
		kg.loopTo(tid, step, kg.size, func(i value.Value) {
			buf, lin := sv.lin(out, sv.delinearize(osz, i))
			ld := kg.b.NewLoad(t, kg.elemPtr(d, kg.ptr[buf], lin))
			ld.Align = ir.Align(eb)
			st := kg.b.NewStore(ld, kg.elemPtr(d, kg.outPtr[0], i))
			st.Align = ir.Align(eb)
		})
		return nil
	})
}

// symElements emits a kernel of one thread per element of its first output at the run's sizes
// (the size parameter, after the dims': symStrideArgs), body emitting its grid-stride loops from
// element tid by step, and returns it with codegen/ptx's launch.
func (md *module) symElements(k plan.Kernel, body func(kg *kgen, sv *symView, tid, step value.Value) error) (*ir.Func, plan.Launch, error) {
	units := k.Graph.Outputs[0].Value.Type.Shape.NumElements()
	args, scale, err := symStrideArgs(k, units, "element count")
	if err != nil {
		return nil, plan.Launch{}, err
	}
	kg := md.newKernel(k, args)
	sv := kg.newSymView(k, args)
	tid := kg.b.NewAdd(kg.b.NewMul(kg.sreg("ctaid.x"), kg.sreg("ntid.x")), kg.sreg("tid.x"))
	step := kg.b.NewMul(kg.sreg("nctaid.x"), kg.sreg("ntid.x"))
	if err := body(kg, sv, tid, step); err != nil {
		return nil, plan.Launch{}, err
	}
	kg.b.NewRet(nil)
	w := plan.SymWork{Vector: 1, Block: plan.LoopBlock, MaxBlocks: plan.MaxLoopBlocks, Scale: scale}
	l := plan.Launch{Grid: [3]int{w.Grid(int64(units)), 1, 1}, Block: [3]int{plan.LoopBlock, 1, 1}, Params: args, Work: &w}
	return kg.f, l, nil
}
