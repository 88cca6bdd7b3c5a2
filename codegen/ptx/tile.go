package ptx

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
)

// The staged template: a loop kernel with a value read only at the output's linear index whose
// own reads would not be coalesced (pooling windows, concat operands shifted off sector
// boundaries) stages those reads through shared memory. A block takes tiles of tileOut
// consecutive outputs (grid-stride over tiles): in phase 1 its threads read each staged range
// with consecutive threads on consecutive elements, starting at the 32-byte sector that holds
// the range's first element, and store them to shared memory; after a barrier each thread
// computes one output of the tile, taking the staged value from shared memory, and stores it
// (consecutive threads, consecutive outputs).
const tileOut = 256 // outputs per tile and threads per block

// stage is what a staged kernel stages.
type stage interface {
	value() *ir.Value // bound in phase 2
	elems() int       // shared-memory slots
	slotBytes() int
	describe() string
	// load emits phase 1 for the tile of outputs o0..last; slot(i) addresses shared slot i.
	load(gn *gen, o0, last, tid string, slot func(i string) string) error
	// at emits phase 2's value at output o, the tile's output tid.
	at(gn *gen, o, tid string, slot func(i string) string) (val, error)
}

// findStage returns the value of a loop kernel over shape worth staging, or nil.
func findStage(g *ir.Graph, shape ir.Shape) stage {
	if pt := findPoolTile(g, shape); pt != nil {
		return pt
	}
	if ct := findConcatTile(g, shape); ct != nil {
		return ct
	}
	return nil
}

func stagedKernel(k Kernel, st stage, globals *[]string) (string, Launch, error) {
	g := k.Graph
	shape := g.Outputs[0].Value.Type.Shape
	n := shape.NumElements()
	b := newBuilder(k.Name)
	gn, args := header(k, b, globals)
	a := gn.a
	b.note("staged: %d outputs per block; %s in shared memory", tileOut, st.describe())
	base := b.reg(rU32)
	b.ins("mov.u32", base, b.sharedArray("staged", st.elems()*st.slotBytes(), 8))
	tid := b.reg(rU32)
	b.ins("mov.u32", tid, "%tid.x")
	tiles := ceilDiv(n, tileOut)
	id, next := blockTiles(b, tiles)
	gn.reset()
	o0 := a.mul(id, tileOut)
	last := b.reg(rU32)
	b.ins("add.s32", last, o0, imm(tileOut-1))
	b.ins("min.u32", last, last, imm(n-1))
	slot := func(i string) string { return fmt.Sprintf("[%s]", a.add(base, a.mul(i, st.slotBytes()))) }
	if err := st.load(gn, o0, last, tid, slot); err != nil {
		return "", Launch{}, err
	}
	b.ins("bar.sync", "0")
	// Phase 2: thread tid computes output o0 + tid.
	o := a.reg(a.add(o0, tid))
	skip := b.label("out_skip")
	b.braIf(predGE(b, o, n), skip)
	v, err := st.at(gn, o, tid, slot)
	if err != nil {
		return "", Launch{}, err
	}
	gn.bound[st.value()] = func(*index) val { return v }
	x := newIndexLin(shape, o)
	ovs, err := gn.evalOutputs(x)
	if err != nil {
		return "", Launch{}, err
	}
	for i, out := range g.Outputs {
		gn.store(out.Value, gn.outPtr[i], o, ovs[i])
	}
	delete(gn.bound, st.value())
	gn.reset()
	b.place(skip)
	b.ins("bar.sync", "0") // the next tile overwrites the stage
	next()
	if gn.err != nil {
		return "", Launch{}, gn.err
	}
	l := Launch{Grid: [3]int{min(tiles, maxLoopBlocks), 1, 1}, Block: [3]int{tileOut, 1, 1}, Params: args}
	return b.text(), l, nil
}

// stageRange emits phase 1's copy of v's elements lo..end-1 (linear indexes in v, registers):
// thread tid takes every tileOut-th index from the start of lo's 32-byte sector, skips those
// before lo, evaluates v there and stores it at shared address slotOf(q).
func (gn *gen) stageRange(v *ir.Value, lo, end, tid string, slotOf func(q string) string) error {
	b := gn.e.b
	d := v.Type.DType
	q := b.reg(rU32)
	b.ins("and.b32", q, lo, imm(-max(1, 32/d.Size())))
	b.ins("add.s32", q, q, tid)
	head, skip, done := b.label("stage"), b.label("stage_next"), b.label("stage_done")
	b.place(head)
	p := b.reg(rPred)
	b.ins("setp.ge.u32", p, q, end)
	b.braIf(p, done)
	before := b.reg(rPred)
	b.ins("setp.lt.u32", before, q, lo)
	b.braIf(before, skip)
	gn.reset()
	x, err := gn.eval(v, newIndexLin(v.Type.Shape, q))
	if err != nil {
		return err
	}
	b.ins("st.shared."+sharedType(d), slotOf(q), gn.e.reg(x))
	gn.reset()
	b.place(skip)
	b.ins("add.s32", q, q, imm(tileOut))
	b.bra(head)
	b.place(done)
	return nil
}

// loadStaged reads a staged element of dtype d (in its register form) from shared address addr.
func (gn *gen) loadStaged(d ir.DType, addr string) val {
	r := gn.e.b.reg(classOf(d))
	gn.e.b.ins("ld.shared."+sharedType(d), r, addr)
	return val{d, r}
}

// predGE returns a predicate register holding x ≥ n (unsigned).
func predGE(b *builder, x string, n int) string {
	p := b.reg(rPred)
	b.ins("setp.ge.u32", p, x, imm(n))
	return p
}

// A concat read at the output's linear index whose operands start or end off 32-byte sector
// boundaries (rnn's cat of 57 and 128 floats) cannot have both its reads and its writes
// aligned when each thread moves its own element: the operand's elements land shifted in the
// output. Staged, each operand's elements in the tile are read aligned to the operand's own
// sectors and written to the shared slot of their output position; the output is written
// aligned from there. Along the concat axis each operand covers a contiguous run of every
// outer row, so the operand elements a run of outputs holds are one contiguous range of the
// operand (concatRange).
type concatTile struct {
	cat   *ir.Value
	axis  int
	inner int // elements per step along the axis (product of the dims after it)
}

func findConcatTile(g *ir.Graph, shape ir.Shape) *concatTile {
	n := shape.NumElements()
	uses := usesOf(g)
	for _, v := range live(g) {
		if v.Op != "concat" || v.Type.DType == ir.Bool || v.Type.Shape.NumElements() != n || n == 0 || !readAtIndex(uses, v, true) {
			continue
		}
		axis := v.Attrs.Int("axis", 0)
		inner := 1
		for _, s := range v.Type.Shape[axis+1:] {
			inner *= s
		}
		bytes := inner * v.Type.DType.Size()
		off, shifted := 0, false
		for _, op := range v.Args {
			if off*bytes%32 != 0 || op.Type.Shape[axis]*bytes%32 != 0 {
				shifted = true
			}
			off += op.Type.Shape[axis]
		}
		if shifted {
			return &concatTile{cat: v, axis: axis, inner: inner}
		}
	}
	return nil
}

func (ct *concatTile) value() *ir.Value { return ct.cat }
func (ct *concatTile) elems() int       { return tileOut }
func (ct *concatTile) slotBytes() int {
	if c := classOf(ct.cat.Type.DType); c == rF64 || c == rU64 {
		return 8
	}
	return 4
}
func (ct *concatTile) describe() string {
	return "the tile's outputs, gathered from each operand's aligned range"
}

// concatRange is the number of elements of operand op (at offset off along the axis, size m
// along it) that lie before output position o: whole outer rows of m·inner, plus the part of
// o's own row past the operand's start.
func (ct *concatTile) concatRange(a ia, o string, off, m int) string {
	row := ct.cat.Type.Shape[ct.axis] * ct.inner
	r := a.sub(a.rem(o, row), imm(off*ct.inner))
	r = a.reg(r)
	c := a.b.reg(rU32)
	a.b.ins("max.s32", c, r, "0")
	a.b.ins("min.s32", c, c, imm(m*ct.inner))
	return a.reg(a.add(a.mul(a.div(o, row), m*ct.inner), c))
}

func (ct *concatTile) load(gn *gen, o0, last, tid string, slot func(i string) string) error {
	a := gn.a
	row := ct.cat.Type.Shape[ct.axis] * ct.inner
	end := a.reg(a.add(last, imm(1)))
	off := 0
	for _, op := range ct.cat.Args {
		m := op.Type.Shape[ct.axis]
		lo, hi := ct.concatRange(a, o0, off, m), ct.concatRange(a, end, off, m)
		// Operand element q sits at output (q / (m·inner))·row + off·inner + q % (m·inner).
		opOff := off
		err := gn.stageRange(op, lo, hi, tid, func(q string) string {
			p := a.mad(a.div(q, m*ct.inner), row, a.add(a.rem(q, m*ct.inner), imm(opOff*ct.inner)))
			return slot(a.sub(p, o0))
		})
		if err != nil {
			return err
		}
		off += m
	}
	return nil
}

func (ct *concatTile) at(gn *gen, _, tid string, slot func(i string) string) (val, error) {
	return gn.loadStaged(ct.cat.Type.DType, slot(tid)), nil
}
