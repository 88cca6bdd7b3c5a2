package ptx

import (
	"fmt"
	"math"
	"slices"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// Reductions. Every reduce in a kernel folds the same axes of operands of one shape F. Two
// templates:
//
//   - row: the reduced axes are F's trailing ones (a full reduction is the case with no kept
//     axes). One block per row (grid-stride over rows); each thread folds a strided slice of the
//     row, then warp shuffles and one shared-memory stage combine the block's partials. Every
//     thread ends with the row's result, so later reduces and the output loop of the same row can
//     use it: softmax and layer norm are one kernel, reading the row once per reduce.
//   - column: the reduced axes are a contiguous block followed by kept axes ([A, R, C] after
//     merging): a 32×8 block per tile of 32 columns, each thread folds every 8th row of its
//     column (coalesced across the warp), and the 8 partials combine in shared memory.
//
// Float sums and products accumulate in f64 and round once, like the reference; the combining
// order is fixed, so results are deterministic (no atomics).

type reduceShape struct {
	full       ir.Shape
	axes       []int
	a, r, c    int // [A, R, C]: kept before, reduced, kept after
	rowPattern bool
	// scattered: the reduced axes are not adjacent (reduce_sum axes=[0,2] of [4,5,6]). The row
	// template then runs with A = the kept elements and R = the reduced ones, and derives each
	// element's coordinates from (row, r) by index arithmetic over the kept and reduced axes.
	scattered bool
}

func reduceKernel(k Kernel, globals *[]string) (string, Launch, error) {
	g := k.Graph
	var reds []*ir.Value
	for _, v := range live(g) {
		if ops.ClassOf(v.Op) == ops.Reduce {
			reds = append(reds, v)
		}
	}
	rs, err := reduceLayout(reds)
	if err != nil {
		return "", Launch{}, err
	}
	if err := checkRowDomains(g, rs); err != nil {
		return "", Launch{}, err
	}
	splits := rs.rowPattern && rs.a == 1 && rs.r >= splitReduce && len(reds) == 1 && !outputsFull(g, rs)
	if foldsRows(k, rs.axes) && !rs.scattered && !splits {
		return colReduce(k, rs, reds, globals) // the rows lead the reduced block (symfold.go)
	}
	if splits && (!k.Symbolic || foldsRows(k, rs.axes)) {
		return fullReduce(k, rs, reds[0], globals) // over the run's count when symbolic (symsplit.go)
	}
	if rs.rowPattern {
		return rowReduce(k, rs, reds, globals)
	}
	return colReduce(k, rs, reds, globals)
}

// reduceLayout checks that every reduce folds the same axes of one shape and merges them into
// [A, R, C].
func reduceLayout(reds []*ir.Value) (reduceShape, error) {
	first := reds[0]
	rs := reduceShape{full: first.Args[0].Type.Shape, axes: first.Attrs.Ints("axes")}
	for _, v := range reds[1:] {
		if !v.Args[0].Type.Shape.Equal(rs.full) || !slices.Equal(v.Attrs.Ints("axes"), rs.axes) {
			return rs, fmt.Errorf("reductions over different shapes or axes (%s%v and %s%v) are not a supported fusion",
				rs.full, rs.axes, v.Args[0].Type.Shape, v.Attrs.Ints("axes"))
		}
	}
	for _, v := range reds {
		if v.Type.DType == ir.Bool {
			return rs, fmt.Errorf("%s of bool is not supported", v.Op)
		}
	}
	rank := rs.full.Rank()
	if len(rs.axes) == 0 {
		rs.a, rs.r, rs.c = rs.full.NumElements(), 1, 1
		rs.rowPattern = true
		return rs, nil
	}
	lo, hi := rs.axes[0], rs.axes[len(rs.axes)-1]
	if hi-lo+1 != len(rs.axes) {
		kept, red := rs.split()
		rs.a, rs.r, rs.c = kept.NumElements(), red.NumElements(), 1
		rs.rowPattern, rs.scattered = true, true
		return rs, nil
	}
	rs.a = ir.Shape(rs.full[:lo]).NumElements()
	rs.r = ir.Shape(rs.full[lo : hi+1]).NumElements()
	rs.c = ir.Shape(rs.full[hi+1:]).NumElements()
	rs.rowPattern = hi == rank-1 || rs.c == 1
	return rs, nil
}

// split returns the kept and the reduced dims of the operand shape, each in axis order.
func (rs reduceShape) split() (kept, red ir.Shape) {
	return plan.Reduction{Full: rs.full, Axes: rs.axes}.RowShapes()
}

// rowElement returns a function from the position r in the reduced elements of row (a linear
// position in the kept elements) to the operand's index: the linear one when the reduced axes
// are trailing, else coordinates put together from the row's kept coordinates (derived once,
// here) and r's reduced ones.
func (rs reduceShape) rowElement(a ia, row string) func(r string) *index {
	if !rs.scattered {
		rowLin := a.mul(row, rs.r)
		return func(r string) *index { return newIndexLin(rs.full, a.add(rowLin, r)) }
	}
	kept, red := rs.split()
	kx := newIndexLin(kept, row)
	keptCoord := make([]string, len(kept))
	for d := range kept {
		keptCoord[d] = kx.getCoord(a, d)
	}
	return func(r string) *index {
		rx := newIndexLin(red, r)
		redCoord := make([]string, len(red))
		for d := range red {
			redCoord[d] = rx.getCoord(a, d)
		}
		return newIndexCoords(rs.full, RowCoords(rs.axes, keptCoord, redCoord))
	}
}

// isRowShape reports whether s is a shape a reduction result may have: the kept dims, or the
// operand's shape with the reduced dims as 1 (keepdims).
func (rs reduceShape) isRowShape(s ir.Shape) bool {
	return plan.Reduction{Full: rs.full, Axes: rs.axes}.IsRowShape(s)
}

// checkRowDomains makes sure every value computed from a reduction's result is used only where
// the current row is meant: elementwise with other per-row values, reshaped between the two row
// shapes, or broadcast back along the reduced axes.
func checkRowDomains(g *ir.Graph, rs reduceShape) error {
	dep := map[*ir.Value]bool{}
	for _, v := range live(g) {
		for _, a := range v.Args {
			if dep[a] {
				dep[v] = true
			}
		}
		if ops.ClassOf(v.Op) == ops.Reduce {
			dep[v] = true
			continue
		}
		if !dep[v] {
			continue
		}
		ok := false
		switch {
		case ops.ClassOf(v.Op) == ops.Elementwise || v.Op == "select":
			ok = v.Type.Shape.Equal(rs.full) || rs.isRowShape(v.Type.Shape)
		case v.Op == "reshape":
			ok = rs.isRowShape(v.Type.Shape) && rs.isRowShape(v.Args[0].Type.Shape)
		case v.Op == "broadcast_in_dim":
			ok = rs.isRowShape(v.Args[0].Type.Shape) && v.Type.Shape.Equal(rs.full) && rs.backAlongReduced(v)
		}
		if !ok {
			return fmt.Errorf("%s uses a reduction's result in a way the reduction template cannot follow; not a supported fusion", g.Format(v))
		}
	}
	for _, o := range g.Outputs {
		s := o.Value.Type.Shape
		if !s.Equal(rs.full) && !rs.isRowShape(s) {
			return fmt.Errorf("output %s %s is neither the reduced operand's shape %s nor a per-row shape", o.Name, s, rs.full)
		}
	}
	return nil
}

// backAlongReduced reports whether broadcast v (from a row shape to the full shape) spreads a
// per-row value back along the reduced axes: every kept dim of its operand lands where it
// lies in the full shape, so the value read at a full element is that element's own row's.
func (rs reduceShape) backAlongReduced(v *ir.Value) bool {
	in := v.Args[0].Type.Shape
	var keptPos []int
	for i := range rs.full {
		if !slices.Contains(rs.axes, i) {
			keptPos = append(keptPos, i)
		}
	}
	for i, d := range v.Attrs.Ints("dims") {
		want := i // keepdims: the operand has the full rank
		if in.Rank() != rs.full.Rank() {
			want = keptPos[i]
		}
		if in[i] != 1 && d != want {
			return false
		}
	}
	return true
}

// shuffleXor returns the value of lane^off for a 32- or 64-bit register.
func (gn *gen) shuffleXor(v val, off int) val {
	b := gn.e.b
	x := gn.e.reg(v)
	if classOf(v.dt) == rU64 || classOf(v.dt) == rF64 {
		lo, hi := b.reg(rU32), b.reg(rU32)
		b.ins("mov.b64", "{"+lo+", "+hi+"}", x)
		b.ins("shfl.sync.bfly.b32", lo, lo, imm(off), "0x1f", "0xffffffff")
		b.ins("shfl.sync.bfly.b32", hi, hi, imm(off), "0x1f", "0xffffffff")
		r := b.reg(classOf(v.dt))
		b.ins("mov.b64", r, "{"+lo+", "+hi+"}")
		return val{v.dt, r}
	}
	r := b.reg(classOf(v.dt))
	b.ins("shfl.sync.bfly.b32", r, x, imm(off), "0x1f", "0xffffffff")
	return val{v.dt, r}
}

// accMove copies v into the accumulator register acc (a loop-carried register).
func (gn *gen) accMove(acc string, v val) {
	gn.e.b.ins("mov."+bits(v.dt), acc, gn.e.reg(v))
}

// sharedAccess is the ld/st type of an accumulator in shared memory (8-byte slots).
func sharedType(d ir.DType) string {
	switch classOf(d) {
	case rF64:
		return "f64"
	case rF32:
		return "f32"
	case rU64:
		return "s64"
	}
	return "s32"
}

func rowBlock(r int) int {
	t := 32
	for t < 256 && t < r {
		t *= 2
	}
	return t
}

func rowReduce(k Kernel, rs reduceShape, reds []*ir.Value, globals *[]string) (string, Launch, error) {
	g := k.Graph
	threads := rowBlock(rs.r)
	warps := threads / 32
	b := newBuilder(k.Name)
	gn, args := header(k, b, globals)
	online := onlineSoftmaxPairs(g, reds)
	var rows, rEnd string
	var work *SymWork
	var err error
	var sv *symView
	var run *runBlock
	symLen, symRowLen := symRowLen(k, reds)
	if symRowLen && !rs.scattered {
		rows, rEnd, work, sv, err = symRowExtent(k, rs, symLen, b, &args) // symrowlen.go
	} else {
		if readsViews(k, reds) { // the dims before the count: symfold_reduce_view.go
			sv, err = symReduceViews(k, b, &args)
		}
		if err == nil {
			rows, rEnd, work, run, err = rowExtent(k, rs, b, &args, len(online) > 0) // symfold_scatter.go
		}
	}
	if err != nil {
		return "", Launch{}, err
	}
	part := b.sharedArray("partials", 16*warps, 8)
	a := gn.a
	tid, lane, warp := run.threadID(b), b.reg(rU32), b.reg(rU32) // symfold_scatter.go
	b.ins("and.b32", lane, tid, "31")
	b.ins("shr.u32", warp, tid, "5")
	partBase := b.reg(rU32)
	b.ins("mov.u32", partBase, part)
	slot := a.mad(warp, 8, partBase)
	if gn.run = run; run != nil {
		run.slots(b, partBase)
	}
	row := b.reg(rU32)
	b.ins("mov.u32", row, "%ctaid.x")
	nrows := b.reg(rU32)
	b.ins("mov.u32", nrows, "%nctaid.x")
	rowHead, rowDone := b.label("row"), b.label("rows_done")
	b.place(rowHead)
	p := b.reg(rPred)
	b.ins("setp.ge.u32", p, row, rows)
	b.braIf(p, rowDone)
	gn.bound = map[*ir.Value]func(*index) val{}
	bindViewTops(gn, sv, g)
	fullAt := rs.rowElement(a, row)
	if symRowLen && !rs.scattered {
		fullAt = rowAtRun(gn, rs, row, rEnd)
	}
	for _, red := range reds {
		if _, done := gn.bound[red]; done {
			continue // the sum of an online softmax pair
		}
		if sum := online[red]; sum != nil {
			b.note("online softmax: %s and %s in one pass", g.Format(red), g.Format(sum))
			m, s := gn.onlineMaxSum(red, sum, fullAt, tid, threads, rEnd, lane, warp, partBase, warps)
			gn.bound[red] = func(*index) val { return m }
			gn.bound[sum] = func(*index) val { return s }
			continue
		}
		accT, combine, identity := accumulator(red)
		b.note("%s", g.Format(red))
		acc := b.reg(classOf(accT))
		gn.accMove(acc, gn.e.constVal(accT, identity))
		run.identity(b, val{accT, acc})
		gn.loopTo(tid, imm(threads), rEnd, func(r string) error {
			x, err := gn.eval(red.Args[0], fullAt(r))
			if err != nil {
				return err
			}
			y, err := gn.e.binary(combine, val{accT, acc}, gn.e.cast(x, accT))
			if err != nil {
				return err
			}
			gn.accMove(acc, y)
			return nil
		})
		total := gn.blockCombine(val{accT, acc}, combine, lane, slot, partBase, warps)
		res := gn.e.cast(total, red.Type.DType)
		gn.bound[red] = func(*index) val { return res }
	}
	// Outputs: full-shape ones element by element, per-row ones by thread 0.
	var fullOuts, rowOuts []int
	for i, o := range g.Outputs {
		if o.Value.Type.Shape.Equal(rs.full) {
			fullOuts = append(fullOuts, i)
		} else {
			rowOuts = append(rowOuts, i)
		}
	}
	if len(fullOuts) > 0 {
		gn.loopTo(tid, imm(threads), rEnd, func(r string) error {
			return gn.storeOutputs(fullOuts, fullAt(r))
		})
	}
	if len(rowOuts) > 0 {
		skip := b.label("not_thread0")
		q := b.reg(rPred)
		b.ins("setp.ne.u32", q, tid, "0")
		b.braIf(q, skip)
		gn.reset()
		for _, i := range rowOuts {
			o := g.Outputs[i]
			v, err := gn.eval(o.Value, newIndexLin(o.Value.Type.Shape, row))
			if err != nil {
				return "", Launch{}, err
			}
			gn.store(o.Value, gn.outPtr[i], row, v)
		}
		gn.reset()
		b.place(skip)
	}
	b.ins("add.s32", row, row, nrows)
	b.bra(rowHead)
	b.place(rowDone)
	if gn.err != nil {
		return "", Launch{}, gn.err
	}
	l := Launch{Grid: [3]int{max(1, min(rs.a, maxLoopBlocks)), 1, 1}, Block: [3]int{threads, 1, 1}, Params: args, Work: work}
	return b.text(), l, nil
}

// storeOutputs evaluates the kernel's outputs outs (indexes into its outputs) at full-shape
// element x and stores them.
func (gn *gen) storeOutputs(outs []int, x *index) error {
	for _, i := range outs {
		o := gn.kernelGraph.Outputs[i]
		v, err := gn.eval(o.Value, x)
		if err != nil {
			return err
		}
		gn.store(o.Value, gn.outPtr[i], x.getLin(gn.a), v)
	}
	return nil
}

// blockCombine folds each warp with butterfly shuffles, stages the warp results in shared memory
// and has every thread fold them in warp order, so all threads hold the same block result.
func (gn *gen) blockCombine(acc val, combine, lane, slot, partBase string, warps int) val {
	b := gn.e.b
	gn.reset()
	for off := 16; off >= 1; off /= 2 {
		o := gn.shuffleXor(acc, off)
		y, _ := gn.e.binary(combine, acc, o)
		gn.accMove(acc.r, y)
	}
	st := sharedType(acc.dt)
	first := b.reg(rPred)
	b.ins("setp.eq.u32", first, lane, "0")
	b.guarded(first, "st.shared."+st, "["+slot+"]", acc.r)
	gn.run.barrier(b)
	total := val{acc.dt, b.reg(classOf(acc.dt))}
	b.ins("ld.shared."+st, total.r, "["+partBase+"]")
	for w := 1; w < warps; w++ {
		x := b.reg(classOf(acc.dt))
		b.ins("ld.shared."+st, x, fmt.Sprintf("[%s+%d]", partBase, 8*w))
		y, _ := gn.e.binary(combine, total, val{acc.dt, x})
		total = y
	}
	gn.run.barrier(b) // the next reduce reuses the slots
	gn.reset()
	return total
}

const colWidth, colRows = 32, 8 // column tile: 32 columns, 8 threads down each

func colReduce(k Kernel, rs reduceShape, reds []*ir.Value, globals *[]string) (string, Launch, error) {
	g := k.Graph
	b := newBuilder(k.Name)
	gn, args := header(k, b, globals)
	a := gn.a
	part := b.sharedArray("partials", 8*colWidth*colRows, 8)
	tid, tx, ty := b.reg(rU32), b.reg(rU32), b.reg(rU32)
	b.ins("mov.u32", tid, "%tid.x")
	b.ins("and.b32", tx, tid, "31")
	b.ins("shr.u32", ty, tid, "5")
	partBase := b.reg(rU32)
	b.ins("mov.u32", partBase, part)
	slot := a.mad(tid, 8, partBase)
	colSlot := a.mad(tx, 8, partBase)
	ctiles := ceilDiv(rs.c, colWidth)
	tiles := rs.a * ctiles
	rEnd := imm(rs.r)
	sv, err := symReduceViews(k, b, &args) // the dims before the count: symfold_reduce_view.go
	if err != nil {
		return "", Launch{}, err
	}
	tilesEnd, work, err := colTiles(k, rs, b, &args, tiles) // symcolumn.go
	if err != nil {
		return "", Launch{}, err
	}
	if foldsRows(k, rs.axes) {
		if rEnd, work, err = symFold(k, b, &args, rs.r); err != nil {
			return "", Launch{}, err
		}
		hoistViewTops(b, sv, g) // symfold_reduce_view.go
	}
	tile, next := blockTilesTo(b, tilesEnd)
	ai := a.div(tile, ctiles)
	c := a.add(a.mul(a.rem(tile, ctiles), colWidth), tx)
	cok := b.reg(rPred)
	b.ins("setp.lt.u32", cok, a.reg(c), imm(rs.c))
	cc := a.clamp(c, rs.c) // lanes past the last column fold column C-1 and discard it
	base := a.mul(ai, rs.r*rs.c)
	gn.bound = map[*ir.Value]func(*index) val{}
	bindViewTops(gn, sv, g)
	for _, red := range reds {
		accT, combine, identity := accumulator(red)
		b.note("%s", g.Format(red))
		acc := b.reg(classOf(accT))
		gn.accMove(acc, gn.e.constVal(accT, identity))
		gn.loopTo(ty, imm(colRows), rEnd, func(r string) error {
			x, err := gn.eval(red.Args[0], newIndexLin(rs.full, a.add(base, a.mad(r, rs.c, cc))))
			if err != nil {
				return err
			}
			y, err := gn.e.binary(combine, val{accT, acc}, gn.e.cast(x, accT))
			if err != nil {
				return err
			}
			gn.accMove(acc, y)
			return nil
		})
		st := sharedType(accT)
		b.ins("st.shared."+st, "["+slot+"]", acc)
		b.ins("bar.sync", "0")
		gn.reset()
		total := val{accT, b.reg(classOf(accT))}
		b.ins("ld.shared."+st, total.r, "["+colSlot+"]")
		for y := 1; y < colRows; y++ {
			x := b.reg(classOf(accT))
			b.ins("ld.shared."+st, x, fmt.Sprintf("[%s+%d]", colSlot, 8*colWidth*y))
			total, _ = gn.e.binary(combine, total, val{accT, x})
		}
		b.ins("bar.sync", "0")
		res := gn.e.cast(total, red.Type.DType)
		gn.bound[red] = func(*index) val { return res }
	}
	// Full-shape outputs (the operand's producers, or the results spread back over the reduced
	// axes): every thread holds its column's results, so each goes down its rows once more.
	var fullOuts []int
	for i, o := range g.Outputs {
		if !rs.isRowShape(o.Value.Type.Shape) {
			fullOuts = append(fullOuts, i)
		}
	}
	if len(fullOuts) > 0 {
		fskip := b.label("col_past_end")
		b.braIf("!"+cok, fskip)
		gn.loopTo(ty, imm(colRows), rEnd, func(r string) error {
			return gn.storeOutputs(fullOuts, newIndexLin(rs.full, a.add(base, a.mad(r, rs.c, c))))
		})
		b.place(fskip)
	}
	// Row 0 of the block writes the tile's results.
	skip := b.label("not_row0")
	w := b.reg(rPred)
	b.ins("setp.eq.u32", w, ty, "0")
	b.ins("and.pred", w, w, cok)
	b.braIf("!"+w, skip)
	gn.reset()
	lin := a.add(a.mul(ai, rs.c), c)
	for i, o := range g.Outputs {
		if slices.Contains(fullOuts, i) {
			continue
		}
		v, err := gn.eval(o.Value, newIndexLin(o.Value.Type.Shape, lin))
		if err != nil {
			return "", Launch{}, err
		}
		gn.store(o.Value, gn.outPtr[i], lin, v)
	}
	gn.reset()
	b.place(skip)
	next()
	if gn.err != nil {
		return "", Launch{}, gn.err
	}
	l := Launch{Grid: [3]int{max(1, min(tiles, maxLoopBlocks)), 1, 1}, Block: [3]int{colWidth * colRows, 1, 1}, Params: args, Work: work}
	return b.text(), l, nil
}

// splitReduce is the size from which a full reduction spreads over many blocks.
const splitReduce = 1 << 15

// maxSplitBlocks bounds the partials of a split reduction (one per block).
const maxSplitBlocks = 256

func outputsFull(g *ir.Graph, rs reduceShape) bool {
	for _, o := range g.Outputs {
		if o.Value.Type.Shape.Equal(rs.full) && !rs.isRowShape(o.Value.Type.Shape) {
			return true
		}
	}
	return false
}

// fullReduce folds a large tensor to one value with many blocks, deterministically and without
// float atomics: each block folds a fixed grid-stride share and writes its partial to scratch;
// the last block to finish (an integer atomic counter decides) folds the partials in block
// order, writes the result and zeroes the partials and the counter. The scratch holds the
// partials and the counter. A symbolic kernel takes its count and block count at the run
// (symsplit.go).
func fullReduce(k Kernel, rs reduceShape, red *ir.Value, globals *[]string) (string, Launch, error) {
	g := k.Graph
	const threads = splitThreads
	blocks := splitBlocks(rs.r)
	b := newBuilder(k.Name)
	gn, args := header(k, b, globals)
	a := gn.a
	sp := b.param("u64", fmt.Sprintf("%s_param_%d", k.Name, len(args)))
	args = append(args, Arg{Kind: ArgScratch, Bytes: 8*blocks + 8})
	var sv *symView
	var err error
	if readsViews(k, []*ir.Value{red}) { // the dims before the count: symfold_reduce_view.go
		if sv, err = symReduceViews(k, b, &args); err != nil {
			return "", Launch{}, err
		}
	}
	sz, err := splitSizes(k, b, &args, rs.r, blocks) // symsplit.go
	if err != nil {
		return "", Launch{}, err
	}
	scratch := b.reg(rU64)
	b.ins("ld.param.u64", scratch, "["+sp+"]")
	b.ins("cvta.to.global.u64", scratch, scratch)
	part := b.sharedArray("partials", 8*threads/32, 8)
	tid, lane, warp := b.reg(rU32), b.reg(rU32), b.reg(rU32)
	b.ins("mov.u32", tid, "%tid.x")
	b.ins("and.b32", lane, tid, "31")
	b.ins("shr.u32", warp, tid, "5")
	partBase := b.reg(rU32)
	b.ins("mov.u32", partBase, part)
	slot := a.mad(warp, 8, partBase)
	bid := b.reg(rU32)
	b.ins("mov.u32", bid, "%ctaid.x")
	first := a.mad(bid, threads, tid)

	accT, combine, identity := accumulator(red)
	st := sharedType(accT)
	b.note("%s", g.Format(red))
	acc := b.reg(classOf(accT))
	gn.accMove(acc, gn.e.constVal(accT, identity))
	gn.bound = map[*ir.Value]func(*index) val{}
	bindViewTops(gn, sv, g)
	gn.loopTo(first, sz.stride, sz.end, func(i string) error {
		x, err := gn.eval(red.Args[0], newIndexLin(rs.full, i))
		if err != nil {
			return err
		}
		y, err := gn.e.binary(combine, val{accT, acc}, gn.e.cast(x, accT))
		if err != nil {
			return err
		}
		gn.accMove(acc, y)
		return nil
	})
	total := gn.blockCombine(val{accT, acc}, combine, lane, slot, partBase, threads/32)
	// Thread 0 publishes the partial, then takes a ticket.
	t0 := b.reg(rPred)
	b.ins("setp.eq.u32", t0, tid, "0")
	notT0 := b.label("published")
	b.braIf("!"+t0, notT0)
	b.ins("st.global."+st, gn.addr(scratch, bid, 8), total.r)
	b.ins("fence.acq_rel.gpu")
	done := b.label("not_last")
	lastTicket(b, fmt.Sprintf("[%s+%d]", scratch, 8*blocks), sz.last, notT0, done)
	// The last block: fold the partials in block order.
	b.ins("fence.acq_rel.gpu")
	acc2 := b.reg(classOf(accT))
	gn.accMove(acc2, gn.e.constVal(accT, identity))
	gn.loopTo(tid, imm(threads), sz.blocks, func(i string) error {
		x := b.reg(classOf(accT))
		ad := gn.addr(scratch, i, 8)
		b.ins("ld.global.cg."+st, x, ad)
		// The scratch area is shared by every split kernel of the plan, each with its counter
		// after its own partials (another kernel's counter may sit where this one's partial
		// was): leave it all zero, as the plan promises the next kernel.
		b.ins("st.global.b64", ad, "0")
		y, err := gn.e.binary(combine, val{accT, acc2}, val{accT, x})
		if err != nil {
			return err
		}
		gn.accMove(acc2, y)
		return nil
	})
	res := gn.blockCombine(val{accT, acc2}, combine, lane, slot, partBase, threads/32)
	out := gn.e.cast(res, red.Type.DType)
	gn.bound = map[*ir.Value]func(*index) val{red: func(*index) val { return out }}
	wr := b.label("written")
	b.braIf("!"+t0, wr)
	gn.reset()
	for i, o := range g.Outputs {
		v, err := gn.eval(o.Value, newIndexLin(o.Value.Type.Shape, "0"))
		if err != nil {
			return "", Launch{}, err
		}
		gn.store(o.Value, gn.outPtr[i], "0", v)
	}
	b.ins("st.global.u32", fmt.Sprintf("[%s+%d]", scratch, 8*blocks), "0") // ready for the next launch
	gn.reset()
	b.place(wr)
	b.place(done)
	if gn.err != nil {
		return "", Launch{}, gn.err
	}
	return b.text(), Launch{Grid: [3]int{blocks, 1, 1}, Block: [3]int{threads, 1, 1}, Params: args, Work: sz.work}, nil
}

// onlineSoftmaxPairs is plan.OnlineSoftmaxPairs: softmax's max and sum, folded in one pass over
// the row (online: the running sum is rescaled whenever the running max grows).
func onlineSoftmaxPairs(g *ir.Graph, reds []*ir.Value) map[*ir.Value]*ir.Value {
	return plan.OnlineSoftmaxPairs(g, reds)
}

// onlineMaxSum folds a row to its max m and Σ exp(x − m) in one pass. Each thread keeps (m, s)
// with s in f64; pairs combine as (max, s₁·e^(m₁−m) + s₂·e^(m₂−m)). While the max is −inf the
// scale is 1 and the terms 0, so leading −inf elements do not poison the sum.
func (gn *gen) onlineMaxSum(maxV, sumV *ir.Value, fullAt func(string) *index, tid string, threads int, n, lane, warp, partBase string, warps int) (val, val) {
	b := gn.e.b
	m := b.reg(rF32)
	s := b.reg(rF64)
	b.ins("mov.f32", m, immF32(math.Inf(-1)))
	b.ins("mov.f64", s, immF64(0))
	// merge folds (m2, s2) into (m, s); s2 is already scaled to m2.
	merge := func(m2, s2 val) {
		mn := gn.e.fminmax("max", val{ir.F32, m}, m2)
		ninf := b.reg(rPred)
		b.ins("setp.eq.f32", ninf, mn.r, immF32(math.Inf(-1)))
		sc1 := gn.e.expF32(gn.e.op(ir.F32, "sub.rn.f32", m, mn.r).r, ir.F32)
		sc2 := gn.e.expF32(gn.e.op(ir.F32, "sub.rn.f32", gn.e.reg(m2), mn.r).r, ir.F32)
		w1 := gn.e.op(ir.F64, "cvt.f64.f32", sc1.r)
		w2 := gn.e.op(ir.F64, "cvt.f64.f32", sc2.r)
		t := gn.e.op(ir.F64, "mul.rn.f64", w2.r, gn.e.reg(s2))
		ns := gn.e.op(ir.F64, "fma.rn.f64", s, w1.r, t.r)
		plain := gn.e.op(ir.F64, "add.rn.f64", s, gn.e.reg(s2))
		b.ins("selp.f64", s, plain.r, ns.r, ninf)
		b.ins("mov.f32", m, mn.r)
	}
	gn.loopTo(tid, imm(threads), n, func(r string) error {
		x, err := gn.eval(maxV.Args[0], fullAt(r))
		if err != nil {
			return err
		}
		merge(x, val{ir.F64, immF64(1)})
		return nil
	})
	gn.reset()
	for off := 16; off >= 1; off /= 2 {
		m2 := gn.shuffleXor(val{ir.F32, m}, off)
		s2 := gn.shuffleXor(val{ir.F64, s}, off)
		merge(m2, s2)
	}
	first := b.reg(rPred)
	b.ins("setp.eq.u32", first, lane, "0")
	slot := gn.a.mad(warp, 16, partBase)
	b.guarded(first, "st.shared.f32", "["+slot+"]", m)
	b.guarded(first, "st.shared.f64", "["+slot+"+8]", s)
	b.ins("bar.sync", "0")
	b.ins("ld.shared.f32", m, "["+partBase+"]")
	b.ins("ld.shared.f64", s, "["+partBase+"+8]")
	for w := 1; w < warps; w++ {
		m2, s2 := b.reg(rF32), b.reg(rF64)
		b.ins("ld.shared.f32", m2, fmt.Sprintf("[%s+%d]", partBase, 16*w))
		b.ins("ld.shared.f64", s2, fmt.Sprintf("[%s+%d]", partBase, 16*w+8))
		merge(val{ir.F32, m2}, val{ir.F64, s2})
	}
	b.ins("bar.sync", "0")
	gn.reset()
	return val{ir.F32, m}, gn.e.cast(val{ir.F64, s}, ir.F32)
}
