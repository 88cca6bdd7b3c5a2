package ptx

// The split full reduction over a symbolic count: a symbolic kernel that folds every element of
// its operand, rows included, into one value (a loss's sum over [batch] or [batch, seq, d]) of
// at least splitReduce elements at the bound. The static template (reduce.go's fullReduce) at
// count n launches splitBlocks(n) blocks, each folding the grid-stride share of its block
// number, and the last block to take a ticket folds the partials in block order. Built once for
// every count up to the bound, the kernel takes n as its size parameter and the block count
// from the launch (%nctaid.x): the plan's work (tile splitThreads·8 elements per block along x,
// at most the bound's blocks) gives grid.x = min(max(1, ⌈n/2048⌉), splitBlocks(bound)), which is
// splitBlocks(n), the static kernel's grid at n. So the shares, the ticket and the combine are
// the static kernel's at the run's count, bit for bit wherever the static build splits too
// (n ≥ splitReduce); below it the static build takes the row template, and the two agree where
// the partial sums are exact in f64 (float sums accumulate in f64 in both). The scratch is laid
// out at the bound (the counter after the bound's partials), a run using the first grid.x
// partials and zeroing them and the counter as the static kernel does. A count of 0 launches
// one block, which folds nothing and, the last, writes the identity.

// splitSize is where the split full reduction's loops end: immediates in a static kernel,
// registers from the size parameter and the launch's grid in a symbolic one.
type splitSize struct {
	end, stride  string // the share loop: elements, and the grid-stride step blocks·threads
	blocks, last string // partials to combine, and the last block's ticket
	work         *SymWork
}

// splitSizes declares a symbolic split reduction's size parameter (units elements at the bound,
// blocks blocks) and reads the launch's block count; for a static kernel, immediates.
func splitSizes(k Kernel, b *builder, args *[]Arg, units, blocks int) (splitSize, error) {
	if !k.Symbolic {
		return splitSize{end: imm(units), stride: imm(blocks * splitThreads), blocks: imm(blocks), last: imm(blocks - 1)}, nil
	}
	n, scale, err := symSize(k, b, args, units, "reduced count")
	if err != nil {
		return splitSize{}, err
	}
	nb, stride, last := b.reg(rU32), b.reg(rU32), b.reg(rU32)
	b.ins("mov.u32", nb, "%nctaid.x")
	b.ins("mul.lo.u32", stride, nb, imm(splitThreads))
	b.ins("sub.u32", last, nb, "1")
	w := &SymWork{Vector: 1, MaxBlocks: blocks, Scale: scale, Tile: splitThreads * 8, Axis: 0}
	return splitSize{end: n, stride: stride, blocks: nb, last: last, work: w}, nil
}
