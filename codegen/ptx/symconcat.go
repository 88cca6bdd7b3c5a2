package ptx

import (
	"fmt"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// Concatenation at symbolic sizes: a loop kernel whose outputs are concats of views of inputs
// (a decoder's present_k = concat(past_k, k) along its symbolic length) is not rows of its
// buffers when the axis is symbolic or its operands' rows differ, so the bound's offsets are
// wrong at other sizes. As the copy moving symbolic dims does (symcopy.go), one thread per output
// element of a grid-stride loop over the run's element count delinearizes the element over the
// output's sizes at the run; its coordinate c along the axis names the operand, the last j whose
// offset off_j (the sizes along the axis of the operands before it, at the run) is at most c,
// and the element is read from that operand's views at c - off_j. An operand empty at the run
// is never chosen: its offset is the next one's.

// SymbolicConcat is plan.SymbolicConcat (compiler asks it).
func SymbolicConcat(g *ir.Graph) string { return plan.SymbolicConcat(g) }

// symConcatKernel emits a kernel SymbolicConcat takes, at the run's sizes: a copy when its
// outputs are concats of views of inputs, else the fused template.
func symConcatKernel(k Kernel, globals *[]string) (string, Launch, error) {
	g := k.Graph
	if why := SymbolicConcat(g); why != "" {
		return "", Launch{}, fmt.Errorf("a kernel concatenating along symbolic sizes computes elementwise ops and views only; %s", why)
	}
	if !plan.ConcatCopy(g) {
		return symConcatFused(k, globals) // symconcat_fused.go
	}
	out := g.Outputs[0].Value
	b := newBuilder(k.Name)
	gn, args := header(k, b, globals)
	sv := &symView{dims: symViewLoad(k, b, &args, k.Sizes), sizes: k.Sizes}
	for _, o := range g.Outputs {
		for _, a := range o.Value.Args {
			if err := sv.check(b, a); err != nil {
				return "", Launch{}, err
			}
		}
	}
	// The size parameter is the first output's element count (it sets the grid); the others'
	// are computed from the dims.
	n, scale, err := symSize(k, b, &args, out.Type.Shape.NumElements(), "element count")
	if err != nil {
		return "", Launch{}, err
	}
	tid, nthreads := globalThread(b)
	for oi, o := range g.Outputs {
		ld, reg, addr, err := copyAccess(b, o.Value.Type.DType)
		if err != nil {
			return "", Launch{}, err
		}
		if oi > 0 {
			count := sym.Const(1)
			for _, e := range SymSizes(o.Value, k.Sizes) {
				count = sym.Mul(count, e)
			}
			n = sv.eval(b, count)
		}
		b.note("output %s", o.Name)
		concatCopy(b, gn, sv, o.Value, oi, tid, nthreads, n, ld, reg, addr)
	}
	w := SymWork{Vector: 1, Block: loopBlock, MaxBlocks: maxLoopBlocks, Scale: scale}
	l := Launch{Grid: [3]int{w.Grid(int64(out.Type.Shape.NumElements())), 1, 1}, Block: [3]int{loopBlock, 1, 1}, Params: args, Work: &w}
	return b.text(), l, nil
}

// concatCopy emits the grid-stride loop writing the n elements of output oi, concat c.
func concatCopy(b *builder, gn *gen, sv *symView, c *ir.Value, oi int, tid, nthreads, n, ld string, reg regClass, addr func(base, lin string) string) {
	axis := c.Attrs.Int("axis", 0)
	offs := concatOffsets(b, sv, c) // computed once
	osz := SymSizes(c, sv.sizes)
	gn.loopTo(tid, nthreads, n, func(i string) error {
		x := sv.delinearize(b, osz, i)
		return concatBranches(b, x, axis, offs, func(j int, xj []string) error {
			buf, lin := sv.lin(b, c.Args[j], xj)
			v := b.reg(reg)
			b.ins("ld.global."+ld, v, addr(gn.ptr[buf], lin))
			b.ins("st.global."+ld, addr(gn.outPtr[oi], i), v)
			return nil
		})
	})
}

// concatBranches emits a concat's branches at coordinates x at the run: from the last operand,
// the first whose offset along the axis is at most x's coordinate there runs operand(j, its
// coordinates), then leaves.
func concatBranches(b *builder, x []string, axis int, offs []string, operand func(j int, xj []string) error) error {
	done := b.label("concat_done")
	for j := len(offs) - 1; j >= 0; j-- {
		next := b.label("concat_operand")
		if j > 0 {
			p := b.reg(rPred)
			b.ins("setp.lt.u32", p, x[axis], offs[j])
			b.braIf(p, next)
		}
		xj := append([]string(nil), x...)
		if j > 0 {
			xj[axis] = b.reg(rU32)
			b.ins("sub.s32", xj[axis], x[axis], offs[j])
		}
		b.note("operand %d of the concat", j)
		if err := operand(j, xj); err != nil {
			return err
		}
		if j > 0 {
			b.bra(done)
			b.place(next)
		}
	}
	b.place(done)
	return nil
}

// concatOffsets returns the offsets of concat c's operands along its axis at the run: the sum of
// the sizes of the operands before each.
func concatOffsets(b *builder, sv *symView, c *ir.Value) []string {
	axis := c.Attrs.Int("axis", 0)
	offs := make([]string, len(c.Args))
	offs[0] = "0"
	for j := 1; j < len(c.Args); j++ {
		offs[j] = sv.eval(b, SymSizes(c.Args[j-1], sv.sizes)[axis])
		if j > 1 {
			sum := b.reg(rU32)
			b.ins("add.s32", sum, offs[j-1], offs[j])
			offs[j] = sum
		}
	}
	return offs
}

// copyAccess returns a copy's load/store type for elements of dt, their register class, and
// the address of element lin of a buffer at base.
func copyAccess(b *builder, dt ir.DType) (string, regClass, func(base, lin string) string, error) {
	eb := dt.Size()
	ld, reg := map[int]string{1: "u8", 2: "b16", 4: "b32", 8: "b64"}[eb], map[int]regClass{1: rU32, 2: rB16, 4: rU32, 8: rU64}[eb]
	if ld == "" {
		return "", 0, nil, fmt.Errorf("a copy of %s elements is not supported", dt)
	}
	addr := func(base, lin string) string {
		wide, a := b.reg(rU64), b.reg(rU64)
		b.ins("mul.wide.u32", wide, lin, imm(eb))
		b.ins("add.s64", a, base, wide)
		return "[" + a + "]"
	}
	return ld, reg, addr, nil
}
