package ptx

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// SymbolicLoop reports why g cannot be a symbolic loop kernel, or "" when it can: every value
// the outputs need is elementwise (select and casts included) or a scalar constant over the one
// space, and every input has that space's shape. Such a kernel indexes every tensor by the
// element's linear index alone, so its code depends on the element count only and a tensor
// contiguous at the run's sizes is read and written correctly. Broadcasts and views map
// indices through the shape, which would need the sizes in the index arithmetic: not yet.
func SymbolicLoop(g *ir.Graph) string {
	shape := g.Outputs[0].Value.Type.Shape
	for _, o := range g.Outputs {
		if !o.Value.Type.Shape.Equal(shape) {
			return fmt.Sprintf("outputs %s and %s have different shapes", g.Outputs[0].Name, o.Name)
		}
	}
	for _, v := range live(g) {
		switch {
		case v.Op == ir.OpInput || v.Op == ir.OpParam:
			if !v.Type.Shape.Equal(shape) {
				return fmt.Sprintf("%s %s is read through a broadcast or view", v.Op, v.Name)
			}
		case v.Op == "constant" && len(v.Attrs.Floats("value")) == 1:
		case !v.Type.Shape.Equal(shape) || ops.ClassOf(v.Op) != ops.Elementwise && v.Op != "select":
			return fmt.Sprintf("it computes %s, which maps indices through the sizes", v.Op)
		}
	}
	return ""
}

// symLoopKernel is loopKernel for a kernel whose element count n is known only at launch: the
// count is the .u32 parameter after the buffers, groups of V elements run while a whole group
// fits (n/V of them) and the scalar tail from V·(n/V) to n. The grid is computed at launch from
// n (SymWork); the Launch's Grid is the one at the bound.
func symLoopKernel(k Kernel, globals *[]string) (string, Launch, error) {
	g := k.Graph
	if why := SymbolicLoop(g); why != "" {
		return "", Launch{}, fmt.Errorf("a loop kernel over symbolic sizes must be elementwise only; %s: not compiled yet", why)
	}
	shape := g.Outputs[0].Value.Type.Shape
	b := newBuilder(k.Name)
	gn, args := header(k, b, globals)
	p := b.param("u32", fmt.Sprintf("%s_param_%d", k.Name, len(args)))
	args = append(args, Arg{Kind: ArgSize})
	n := b.reg(rU32)
	b.ins("ld.param.u32", n, "["+p+"]")
	tid, nthreads := globalThread(b)
	v, _ := vectorWidth(g, shape)
	b.note("element count n: parameter %d; groups of %d while they fit, then a scalar tail", len(args)-1, v)
	end := n
	if v > 1 {
		groups := b.reg(rU32)
		b.ins("div.u32", groups, n, imm(v))
		gn.loopTo(tid, nthreads, groups, func(i string) error {
			return gn.elementGroup(shape, gn.a.mul(i, v), v, true)
		})
		start := b.reg(rU32)
		b.ins("mad.lo.s32", start, groups, imm(v), tid)
		tid = start
	}
	gn.loopTo(tid, nthreads, end, func(i string) error {
		return gn.elementGroup(shape, i, 1, true)
	})
	if gn.err != nil {
		return "", Launch{}, gn.err
	}
	w := SymWork{Vector: v, Block: loopBlock, MaxBlocks: maxLoopBlocks}
	l := Launch{Grid: [3]int{w.Grid(int64(shape.NumElements())), 1, 1}, Block: [3]int{loopBlock, 1, 1}, Params: args, Work: &w}
	return b.text(), l, nil
}
