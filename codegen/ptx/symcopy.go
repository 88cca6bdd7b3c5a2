package ptx

import (
	"fmt"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
)

// Copies that move symbolic dims: a loop kernel whose one output is a chain of views of an input
// (a transpose putting seq before a static dim, [2, seq, 4] → [seq, 2, 4]) is not rows of its
// buffers, so the bound's index arithmetic is wrong at other sizes. It takes the dims
// (Kernel.Sizes) and computes each output element's coordinates and its source's index at the
// run's sizes (symview.go), one element per thread of a grid-stride loop over the run's element
// count n, the size parameter after the dims.

// SymbolicCopy is plan.SymbolicCopy (compiler asks it).
func SymbolicCopy(g *ir.Graph) string { return plan.SymbolicCopy(g) }

// symCopyKernel emits the copy of a kernel SymbolicCopy takes, at the run's sizes.
func symCopyKernel(k Kernel, globals *[]string) (string, Launch, error) {
	g := k.Graph
	if why := SymbolicCopy(g); why != "" {
		return "", Launch{}, fmt.Errorf("a kernel moving symbolic dims must copy one input through views; %s", why)
	}
	out := g.Outputs[0].Value
	b := newBuilder(k.Name)
	gn, args := header(k, b, globals)
	sv := &symView{dims: symViewLoad(k, b, &args, k.Sizes), sizes: k.Sizes}
	if err := sv.check(b, out); err != nil {
		return "", Launch{}, err
	}
	n, scale, err := symSize(k, b, &args, out.Type.Shape.NumElements(), "element count")
	if err != nil {
		return "", Launch{}, err
	}
	ld, reg, addr, err := copyAccess(b, out.Type.DType) // symconcat.go
	if err != nil {
		return "", Launch{}, err
	}
	tid, nthreads := globalThread(b)
	osz := SymSizes(out, k.Sizes)
	gn.loopTo(tid, nthreads, n, func(i string) error {
		buf, lin := sv.lin(b, out, sv.delinearize(b, osz, i))
		x := b.reg(reg)
		b.ins("ld.global."+ld, x, addr(gn.ptr[buf], lin))
		b.ins("st.global."+ld, addr(gn.outPtr[0], i), x)
		return nil
	})
	w := SymWork{Vector: 1, Block: loopBlock, MaxBlocks: maxLoopBlocks, Scale: scale}
	l := Launch{Grid: [3]int{w.Grid(int64(out.Type.Shape.NumElements())), 1, 1}, Block: [3]int{loopBlock, 1, 1}, Params: args, Work: &w}
	return b.text(), l, nil
}
