package ptx

import (
	"fmt"
	"strings"

	"github.com/gcomp/gcomp/ir"
)

// loopKernel generates a kernel over one output iteration space: every output has the same
// shape and each element is computed from the graph independently. Threads take groups of V
// consecutive elements (one 128-bit access per tensor where V·size ≤ 16) in a grid-stride loop;
// a scalar loop handles the elements after the last whole group.
func loopKernel(k Kernel, globals *[]string) (string, Launch, error) {
	g := k.Graph
	shape := g.Outputs[0].Value.Type.Shape
	for _, o := range g.Outputs[1:] {
		if !o.Value.Type.Shape.Equal(shape) {
			return "", Launch{}, fmt.Errorf("outputs %s %s and %s %s have different shapes; a loop kernel has one iteration space",
				g.Outputs[0].Name, shape, o.Name, o.Value.Type.Shape)
		}
	}
	if tt := findTransposeTile(g, shape); tt != nil {
		return transposeKernel(k, tt, globals)
	}
	if st := findStage(g, shape); st != nil {
		return stagedKernel(k, st, globals)
	}
	b := newBuilder(k.Name)
	gn, args := header(k, b, globals)
	tid, nthreads := globalThread(b)
	work := gn.loopElements(shape, tid, nthreads, 0)
	if gn.err != nil {
		return "", Launch{}, gn.err
	}
	l := Launch{Grid: [3]int{min(ceilDiv(work, loopBlock), maxLoopBlocks), 1, 1}, Block: [3]int{loopBlock, 1, 1}, Params: args}
	return b.text(), l, nil
}

// loopElements computes and stores every element of shape, the kernel graph's output space:
// groups of V consecutive elements at start, start+step, ... (grid- or block-stride), then the
// elements after the last whole group one at a time. With threads > 0 (one block of that many
// threads), groups are formed only if every thread still gets one: a small space is spread over
// the threads one element each. It returns how many work items (groups, or tail elements) there
// are.
func (gn *gen) loopElements(shape ir.Shape, start, step string, threads int) int {
	n := shape.NumElements()
	v, flat := vectorWidth(gn.kernelGraph, shape)
	if threads > 0 && n < v*threads {
		v, flat = 1, true
	}
	groups := n / v
	gn.loopFrom(start, step, groups, func(i string) error {
		base := gn.a.mul(i, v)
		return gn.elementGroup(shape, base, v, flat)
	})
	if v > 1 && n%v != 0 {
		gn.e.b.note("scalar tail: elements %d..%d", groups*v, n-1)
		gn.loopFrom(gn.a.add(start, imm(groups*v)), step, n, func(i string) error {
			return gn.elementGroup(shape, i, 1, true)
		})
	}
	return max(1, groups, n%v)
}

// loopFrom emits `for i := start; i < end; i += step { body(i) }`; the first error of body is
// kept in gn.err.
func (gn *gen) loopFrom(start, step string, end int, body func(i string) error) {
	gn.loopTo(start, step, imm(end), body)
}

// loopTo is loopFrom with the end an operand: an immediate, or a register holding a size known
// only at launch (symloop.go).
func (gn *gen) loopTo(start, step, end string, body func(i string) error) {
	b := gn.e.b
	i := b.reg(rU32)
	b.ins("mov.u32", i, start)
	head, done := b.label("loop"), b.label("done")
	b.place(head)
	p := b.reg(rPred)
	b.ins("setp.ge.u32", p, i, end)
	b.braIf(p, done)
	gn.reset()
	if err := body(i); err != nil && gn.err == nil {
		gn.err = err
	}
	gn.reset()
	b.ins("add.s32", i, i, step)
	b.bra(head)
	b.place(done)
}

// elementGroup computes and stores v consecutive output elements starting at linear index base.
// With v > 1 the elements form a group, which movement ops carry to their operands where the
// lanes stay consecutive (see groupThrough): inputs read at a group use one vector load.
func (gn *gen) elementGroup(shape ir.Shape, base string, v int, flat bool) error {
	g := gn.kernelGraph
	root := newIndexLin(shape, base)
	lanes := []*index{root}
	if v > 1 {
		newGroup(gn.a, root, v, flat)
		lanes = root.lanes
	}
	// Every output is computed before any is stored: an output placed in place of an input
	// (the memory plan's in_place_of) overwrites it at this index, so all its loads come first.
	vals := make([][]val, len(g.Outputs))
	for oi, o := range g.Outputs {
		vals[oi] = make([]val, v)
		for j := range lanes {
			r, err := gn.eval(o.Value, lanes[j])
			if err != nil {
				return err
			}
			vals[oi][j] = r
		}
	}
	for oi, o := range g.Outputs {
		if v == 1 {
			gn.store(o.Value, gn.outPtr[oi], base, vals[oi][0])
			continue
		}
		gn.vectorStore(o.Value, gn.outPtr[oi], base, vals[oi])
	}
	return nil
}

// evalOutputs computes every output of the kernel at x, before any is stored (see elementGroup).
func (gn *gen) evalOutputs(x *index) ([]val, error) {
	outs := gn.kernelGraph.Outputs
	vals := make([]val, len(outs))
	for i, o := range outs {
		v, err := gn.eval(o.Value, x)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return vals, nil
}

func (gn *gen) vectorLoad(in *ir.Value, base string, v int) []val {
	d := in.Type.DType
	regs := make([]string, v)
	for j := range regs {
		regs[j] = gn.e.b.reg(memClass(d))
	}
	if v == 8 && d.Size() == 2 {
		// PTX vectors have at most four elements: load four words and unpack the halves.
		words := make([]string, 4)
		for j := range words {
			words[j] = gn.e.b.reg(rU32)
		}
		gn.e.b.ins("ld."+gn.space(gn.ptr[in])+".v4.b32", "{"+strings.Join(words, ", ")+"}", gn.addr(gn.ptr[in], base, d.Size()))
		for j, w := range words {
			gn.e.b.ins("mov.b32", "{"+regs[2*j]+", "+regs[2*j+1]+"}", w)
		}
	} else {
		// at most four per instruction (1-byte types in an 8-wide group take two)
		for c := 0; c < v; c += 4 {
			n := min(4, v-c)
			at := gn.addr(gn.ptr[in], gn.a.add(base, imm(c)), d.Size())
			gn.e.b.ins(fmt.Sprintf("ld.%s.v%d.%s", gn.space(gn.ptr[in]), n, memType(d)), "{"+strings.Join(regs[c:c+n], ", ")+"}", at)
		}
	}
	out := make([]val, v)
	for j, r := range regs {
		out[j] = gn.fromMem(d, r)
	}
	return out
}

func (gn *gen) vectorStore(out *ir.Value, ptr, base string, vals []val) {
	d := out.Type.DType
	regs := make([]string, len(vals))
	for j, x := range vals {
		regs[j] = gn.toMem(x)
	}
	if len(vals) == 8 && d.Size() == 2 {
		words := make([]string, 4)
		for j := range words {
			words[j] = gn.e.b.reg(rU32)
			gn.e.b.ins("mov.b32", words[j], "{"+regs[2*j]+", "+regs[2*j+1]+"}")
		}
		regs = words
		gn.e.b.ins("st."+gn.space(ptr)+".v4.b32", gn.addr(ptr, base, d.Size()), "{"+strings.Join(regs, ", ")+"}")
		return
	}
	for c := 0; c < len(regs); c += 4 {
		n := min(4, len(regs)-c)
		at := gn.addr(ptr, gn.a.add(base, imm(c)), d.Size())
		gn.e.b.ins(fmt.Sprintf("st.%s.v%d.%s", gn.space(ptr), n, memType(d)), at, "{"+strings.Join(regs[c:c+n], ", ")+"}")
	}
}
