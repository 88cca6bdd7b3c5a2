package ptx

// lastBlock ends a block's publishing step in the split templates (the split full reduction,
// the split GEMV): thread 0, inside its branch that skips to t0Done, takes a number from the
// integer counter at address counter (its writes already fenced); the block's threads meet at
// a barrier and all branch to notLast unless the number was n−1, the last of n blocks.
// Deterministic and without float atomics: the last block folds the partials in a fixed order.
func lastBlock(b *builder, counter string, n int, t0Done, notLast string) {
	lastTicket(b, counter, imm(n-1), t0Done, notLast)
}

// lastTicket is lastBlock with the last block's number an operand: a register where the block
// count is the launch's (symsplit.go).
func lastTicket(b *builder, counter, lastNum string, t0Done, notLast string) {
	last := b.sharedArray("is_last", 4, 4)
	ticket := b.reg(rU32)
	b.ins("atom.global.add.u32", ticket, counter, "1")
	isLast := b.reg(rU32)
	lp := b.reg(rPred)
	b.ins("setp.eq.u32", lp, ticket, lastNum)
	b.ins("selp.u32", isLast, "1", "0", lp)
	b.ins("st.shared.u32", "["+last+"]", isLast)
	b.place(t0Done)
	b.ins("bar.sync", "0")
	flag := b.reg(rU32)
	b.ins("ld.shared.u32", flag, "["+last+"]")
	fp := b.reg(rPred)
	b.ins("setp.eq.u32", fp, flag, "0")
	b.braIf(fp, notLast)
}
