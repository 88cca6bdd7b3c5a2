package ptx

import "fmt"

// Folds over scattered axes: a symbolic kernel's reduction whose axes are its leading symbolic
// rows and static axes around kept static ones (BatchNorm's statistics over [N, C, H, W]'s
// [0, 2, 3], keeping C). The static build takes such a reduction with the row template over the
// kept elements (one block per channel), each element's coordinates put together from the
// channel's and the reduced position's (reduceShape.rowElement). The reduced shape leads with
// the rows ([N, H, W]), so the run's elements are the first N·H·W positions of each channel's
// reduction, whatever the bound: the fold bounds the reduced loops (the reduction's, and the
// full-shape outputs' spreading the result back) by that count at the run's sizes, a size
// parameter, and the grid is the kept elements', static.
//
// The block is the bound's count's (rowBlock), T threads, but its work follows the run's count
// n: thread t folds elements t, t+T, …, so below T elements only the first ⌈n/32⌉ warps hold
// any. The others exit first thing (the run's block, runBlock), the barriers count the warps
// that stay, and warp 0 writes the identity into the slots of those that left, so the block
// combine reads the bound's T/32 slots as before. The combining order is the static kernel's
// at that size: its block, rowBlock(n), is T when n > 256 and at least n otherwise, so each of
// its threads folds the elements ours does, their warps combine alike, the warps of its block
// past ⌈n/32⌉ hold the identity as our slots do, and the slots past its block's that ours adds
// after them combine the identity, which changes no value (x+0 where no partial is -0, max
// with -inf, min with +inf, x·1).

// foldsScattered reports whether symbolic kernel k's reduction rs folds its rows among scattered
// axes. The compiler lets only a reduction whose axes lead with every symbolic dim fold, so the
// kept axes are static.
func foldsScattered(k Kernel, rs reduceShape) bool { return foldsRows(k, rs.axes) && rs.scattered }

// rowExtent declares the row template's sizes: the rows it runs over and the end of its loops over
// a row's reduced elements. A symbolic kernel runs over its rows at the run's sizes, each reduced
// whole; a scattered fold over every kept element, each reduced over the run's count, with the
// run's block (nil for another kernel, or a block of one warp).
func rowExtent(k Kernel, rs reduceShape, b *builder, args *[]Arg, online bool) (rows, rEnd string, work *SymWork, run *runBlock, err error) {
	if !foldsScattered(k, rs) {
		rows, work, err = symRows(k, b, args, rs.a, 1, 0, max(1, min(rs.a, maxLoopBlocks)))
		return rows, imm(rs.r), work, nil, err
	}
	if online {
		return "", "", nil, nil, fmt.Errorf("an online softmax over scattered axes %v of %s folding the symbolic rows does not run at symbolic sizes yet", rs.axes, rs.full)
	}
	m := b.mark()
	if rEnd, work, err = symFold(k, b, args, rs.r); err != nil {
		return "", "", nil, nil, err
	}
	if threads := rowBlock(rs.r); threads > 32 {
		run = exitPastRun(b, rEnd, threads)
	}
	b.hoist(m) // before the parameters' loads: a warp that leaves reads nothing else
	return imm(rs.a), rEnd, work, run, nil
}

// runBlock is a scattered fold's block at the run's count n: the first ⌈n/32⌉ of its T threads'
// warps (every warp at n = 0, where a row is empty).
type runBlock struct {
	tid     string // %tid.x
	threads string // the threads that stay, 32·⌈n/32⌉ up to T: the barriers' count
	warps   int    // the bound's block's warps, T/32: the slots the combine reads
	fill    string // whether this thread writes the identity into slot tid (warp 0, past the run's warps)
	slot    string // slot tid's address
}

// exitPastRun emits the exit of the warps of a T-thread block that hold none of a row's first
// n elements: warp w leaves where 32w ≥ n, that is where tid > (n−1) | 31 (unsigned, so n = 0
// keeps every warp).
func exitPastRun(b *builder, n string, threads int) *runBlock {
	tid, last, p := b.reg(rU32), b.reg(rU32), b.reg(rPred)
	b.note("the run's block: the warps holding any of the first n elements of a row")
	b.ins("mov.u32", tid, "%tid.x")
	b.ins("sub.s32", last, n, "1")
	b.ins("or.b32", last, last, "31")
	b.ins("setp.gt.u32", p, tid, last)
	b.guarded(p, "exit")
	run := &runBlock{tid: tid, threads: b.reg(rU32), warps: threads / 32}
	b.ins("min.u32", last, last, imm(threads-1))
	b.ins("add.s32", run.threads, last, "1")
	return run
}

// threadID is %tid.x: the run's block's register, or one it moves there.
func (run *runBlock) threadID(b *builder) string {
	if run != nil {
		return run.tid
	}
	tid := b.reg(rU32)
	b.ins("mov.u32", tid, "%tid.x")
	return tid
}

// slots computes which threads fill the slots of the warps that left: tid in [threads/32, T/32)
// (each a thread of warp 0, as T ≤ 256), and each one's slot, 8 bytes per warp from partBase.
func (run *runBlock) slots(b *builder, partBase string) {
	tid := run.tid
	at, stays := b.reg(rU32), b.reg(rPred)
	run.fill, run.slot = b.reg(rPred), b.reg(rU32)
	b.ins("shl.b32", at, tid, "5")
	b.ins("setp.lt.u32", stays, at, run.threads)
	b.ins("setp.lt.and.u32", run.fill, tid, imm(run.warps), "!"+stays)
	b.ins("mad.lo.s32", run.slot, tid, "8", partBase)
}

// identity has the fill threads write acc, holding the identity, into their slots: before the
// combine's first barrier, which orders it before every read of the slots.
func (run *runBlock) identity(b *builder, acc val) {
	if run != nil {
		b.guarded(run.fill, "st.shared."+sharedType(acc.dt), "["+run.slot+"]", acc.r)
	}
}

// barrier is the block combine's bar.sync: over the run's block's threads in a scattered fold.
func (run *runBlock) barrier(b *builder) {
	if run == nil {
		b.ins("bar.sync", "0")
		return
	}
	b.ins("bar.sync", "0", run.threads)
}
