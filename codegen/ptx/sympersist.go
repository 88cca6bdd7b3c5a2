package ptx

import "github.com/gcomp/gcomp/ir"

// Persistent kernels at symbolic sizes. A stage of a persistent kernel is a loop or contraction
// kernel of its own, run by one block with a block-stride loop over its elements; a symbolic
// stage (Kernel.Symbolic, with its Rows at the bound, as the compiler checks a row kernel) runs
// the bound's code over the first of them only: its element count at the run's sizes is a .u32
// parameter of the persistent kernel (one per symbolic stage, after the buffers, ArgSize with
// the stage's Index and its units per row as Scale), which ends the stage's loop, bounds a
// contraction's warp groups and its stores. The first R rows of a value laid out at the bound
// are exactly where they are at the run's sizes, in global and in shared memory alike, so a
// stage reads only rows its predecessors wrote. The launch is still one block: no grid follows
// the sizes.

// stageSize returns the size hook of stage si of persistent kernel name: the immediate element
// count for a static stage, else the register of the stage's size parameter, declared and
// recorded in args.
func stageSize(name string, si int, st Kernel, b *builder, args *[]Arg) func(units int) (string, error) {
	return func(units int) (string, error) {
		if !st.Symbolic {
			return imm(units), nil
		}
		n, scale, err := symSize(Kernel{Name: name, Rows: st.Rows}, b, args, units, "stage "+st.Name+" element count")
		if err != nil {
			return "", err
		}
		a := &(*args)[len(*args)-1]
		a.Index, a.Scale = si, scale
		return n, nil
	}
}

// symLoopElements is loopElements over end elements, end a register: groups of the bound's
// vector width while a whole group fits, then a scalar tail up to end (a row stage's groups stay
// within rows, so its tail runs no iterations).
func (gn *gen) symLoopElements(shape ir.Shape, start, step string, threads int, end string) {
	n := shape.NumElements()
	v, flat := vectorWidth(gn.kernelGraph, shape)
	if threads > 0 && n < v*threads {
		v, flat = 1, true
	}
	tail := start
	if v > 1 {
		b := gn.e.b
		groups := b.reg(rU32)
		b.ins("div.u32", groups, end, imm(v))
		gn.loopTo(start, step, groups, func(i string) error {
			return gn.elementGroup(shape, gn.a.mul(i, v), v, flat)
		})
		tail = b.reg(rU32)
		b.ins("mad.lo.s32", tail, groups, imm(v), start)
	}
	gn.loopTo(tail, step, end, func(i string) error {
		return gn.elementGroup(shape, i, 1, true)
	})
}

// warpGroups returns the number of warp groups of r elements over end elements (n at the bound)
// and, for a register end, a register holding end−1 (the last element, which clampTo clamps
// to); for an immediate end, ceil(n/r) and "".
func warpGroups(a ia, end string, n, r int) (groups, last string) {
	if isImm(end) {
		return imm(ceilDiv(n, r)), ""
	}
	b := a.b
	groups, last = b.reg(rU32), b.reg(rU32)
	b.ins("add.s32", groups, end, imm(r-1))
	b.ins("div.u32", groups, groups, imm(r))
	b.ins("sub.s32", last, end, "1") // used inside the group loop only, where end >= 1
	return groups, last
}

// clampTo clamps index x to the last element: n−1 at the bound, or the register last.
func clampTo(a ia, x string, n int, last string) string {
	if last == "" {
		return a.clamp(x, n)
	}
	r := a.b.reg(rU32)
	a.b.ins("min.u32", r, a.reg(x), last)
	return r
}
