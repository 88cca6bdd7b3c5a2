package ptx

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

func persistentKernel(k Kernel, globals *[]string) (string, Launch, error) {
	if err := CheckPersistent(k); err != nil {
		return "", Launch{}, err
	}
	b := newBuilder(k.Name)
	gn, args := header(k, b, globals)
	global := map[string]string{}
	for _, v := range k.Graph.Inputs() {
		global[v.Name] = gn.ptr[v]
	}
	for i, o := range k.Graph.Outputs {
		global[o.Name] = gn.outPtr[i]
	}
	smem := "0" // no shared memory: every value with a slot is empty, and its address never used
	if k.SharedBytes > 0 {
		smem = b.sharedArray(k.Name+"_values", k.SharedBytes, 16)
	}
	b.note("persistent: one block of %d threads runs %d stages; values between stages in %d bytes of shared memory", persistThreads, len(k.Stages), k.SharedBytes)
	gn.sharedPtr = map[string]bool{}
	// slot returns a register holding the shared address of a named value, if it has a slot.
	slot := func(name string) (string, bool) {
		off, ok := k.Shared[name]
		if !ok {
			return "", false
		}
		r := b.reg(rU64)
		b.ins("mov.u64", r, smem)
		if off != 0 {
			b.ins("add.s64", r, r, imm(off))
		}
		gn.sharedPtr[r] = true
		return r, true
	}
	tid := b.reg(rU32)
	b.ins("mov.u32", tid, "%tid.x")
	for si, st := range k.Stages {
		if si > 0 {
			b.ins("bar.sync", "0") // the previous stage's values are all written, its reads all done
		}
		b.note("stage %s", st.Name)
		if err := ops.Verify(st.Graph); err != nil {
			return "", Launch{}, fmt.Errorf("stage %s: %w", st.Name, err)
		}
		if len(st.Graph.Outputs) == 0 {
			return "", Launch{}, fmt.Errorf("stage %s has no outputs", st.Name)
		}
		// The stage's graph, with an output listed once for global memory and once for its
		// shared slot when it goes to both.
		sg := st.Graph.Clone()
		outs := sg.Outputs
		sg.Outputs = nil
		gn.ptr, gn.outPtr = map[*ir.Value]string{}, nil
		for _, in := range sg.Inputs() {
			r, ok := slot(in.Name)
			if !ok {
				if r, ok = global[in.Name]; !ok {
					return "", Launch{}, fmt.Errorf("stage %s reads %s, which is neither a kernel input nor in shared memory", st.Name, in.Name)
				}
			}
			gn.ptr[in] = r
		}
		gn.layerViews(k.Name, st, sg, &args) // a stage reading a layer of a stacked input: symlayer.go
		for _, o := range outs {
			r, shared := slot(o.Name)
			if shared {
				sg.Outputs = append(sg.Outputs, ir.Output{Name: o.Name + ".shared", Value: o.Value})
				gn.outPtr = append(gn.outPtr, r)
			}
			if r, ok := global[o.Name]; ok {
				sg.Outputs = append(sg.Outputs, o)
				gn.outPtr = append(gn.outPtr, r)
			} else if !shared {
				return "", Launch{}, fmt.Errorf("stage %s writes %s, which is neither a kernel output nor in shared memory", st.Name, o.Name)
			}
		}
		gn.layerOutputs(k.Name, st, sg, &args) // symlayer.go
		gn.kernelGraph, gn.kname = sg, k.Name+"_"+st.Name
		if err := gn.stage(sg, tid, foldStageSize(st, gn, stageSize(k.Name, si, st, b, &args))); err != nil {
			return "", Launch{}, fmt.Errorf("stage %s: %w", st.Name, err)
		}
	}
	if gn.err != nil {
		return "", Launch{}, gn.err
	}
	l := Launch{Grid: [3]int{1, 1, 1}, Block: [3]int{persistThreads, 1, 1}, Params: args}
	return b.text(), l, nil
}

// stage emits one stage: every thread of the block takes elements tid, tid+persistThreads, ...
// up to size(the stage's element count at the bound): that count, or a register holding it at
// the run's sizes (sympersist.go).
func (gn *gen) stage(g *ir.Graph, tid string, size func(units int) (string, error)) error {
	var dot *ir.Value
	for _, v := range live(g) {
		switch {
		case ops.ClassOf(v.Op) == ops.Reduce:
			return fmt.Errorf("%s: a reduction cannot be a stage of a persistent kernel", v.Op)
		case ops.ClassOf(v.Op) == ops.Contraction && dot != nil:
			return fmt.Errorf("a stage computes one contraction, not several")
		case ops.ClassOf(v.Op) == ops.Contraction:
			dot = v
		}
	}
	step := imm(persistThreads)
	if dot != nil {
		end, err := size(dot.Type.Shape.NumElements())
		if err != nil {
			return err
		}
		if laneSplit(dot) {
			return gn.warpElements(dot, tid, end)
		}
		gn.directElements(dot, tid, step, end, true)
		return nil
	}
	shape := g.Outputs[0].Value.Type.Shape
	for _, o := range g.Outputs[1:] {
		if !o.Value.Type.Shape.Equal(shape) {
			return fmt.Errorf("outputs %s %s and %s %s have different shapes", g.Outputs[0].Name, shape, o.Name, o.Value.Type.Shape)
		}
	}
	end, err := size(shape.NumElements())
	if err != nil {
		return err
	}
	if !isImm(end) {
		gn.symLoopElements(shape, tid, step, persistThreads, end)
		return nil
	}
	gn.loopElements(shape, tid, step, persistThreads)
	return nil
}

// warpElements computes a contraction stage with coalesced operand reads: the block's warps
// take groups of R consecutive result elements (block-stride over the groups; R a power of
// two, up to maxWarpGroup, small enough that every warp gets a group), and the lanes split each
// element's K products, lane l folding k = l, l+32, ... in ascending order, so a warp reads 32
// consecutive k of an operand row at once. A butterfly of shfl.sync.bfly then sums the 32
// partials in a fixed order: while more than one element is left, lanes with the step's bit set
// keep the upper half of the group's partials and send the lower half to their partner (a
// reduce-scatter: R−1 shuffles for the R elements, not 5 each), then the remaining steps add
// the one partial across the lanes that share it. Lane l ends with element l/(32/R) of the
// group; the first lane of each such set runs the epilogue and stores it. The accumulators are
// the per-element fold's (f32 by fma.rn.f32 for f32, else f64 or i64), so f32 results stay
// within the f32 tolerance: only the order of the additions differs. Every shuffle runs with the
// whole warp: the group loop is warp-uniform, and lanes that leave the k loop early (K not a
// multiple of 32) wait for the others where the loop ends.
//
// end is the element count: an immediate, or a register holding it at the run's sizes
// (a symbolic stage, sympersist.go), which bounds the groups, the clamp and the stores; r and
// the code are the bound's.
func (gn *gen) warpElements(dot *ir.Value, tid, end string) error {
	b, a := gn.e.b, gn.a
	shape := dot.Type.Shape
	n := shape.NumElements()
	const warps = persistThreads / 32
	r := WarpGroup(n)
	groups, last := warpGroups(a, end, n, r)
	// A group inside one row shares all coordinates but the last; the lhs element of a
	// product is then the same for all of it when the last result dim is a rhs free dim.
	inRow := shape.Rank() > 0 && shape[shape.Rank()-1]%r == 0
	lhsShared := inRow && dot.Args[1].Type.Shape.Rank() > len(dot.Attrs.Ints("rhs_batch"))+len(dot.Attrs.Ints("rhs_contract"))
	b.note("warps of 32 lanes split the %d products of each element, %d elements per warp", contractLen(dot), r)
	lane, warp := b.reg(rU32), b.reg(rU32)
	b.ins("and.b32", lane, tid, "31")
	b.ins("shr.u32", warp, tid, "5")
	accT := accType(dot, true)
	gn.loopTo(warp, imm(warps), groups, func(g string) error {
		first := a.mul(g, r)
		xs := make([]*index, r)
		if inRow {
			x0 := newIndexLin(shape, first)
			newGroup(a, x0, r, false)
			xs = x0.lanes
		} else {
			for j := range xs {
				// past the last element a lane evaluates the last one and stores nothing
				xs[j] = newIndexLin(shape, clampTo(a, a.add(first, imm(j)), n, last))
			}
		}
		accs := make([]val, r)
		lhsAt := make([]func(*index) (val, error), r)
		rhsAt := make([]func(*index) (val, error), r)
		var ks ir.Shape
		for j, x := range xs {
			for d := range shape {
				x.getCoord(a, d) // derived outside the k loop, whose registers do not outlive it
			}
			accs[j] = val{accT, b.reg(classOf(accT))}
			gn.accMove(accs[j].r, gn.e.constVal(accT, 0))
			lhsAt[j], rhsAt[j], ks = gn.dotOperands(dot, x)
		}
		gn.loopFrom(lane, "32", ks.NumElements(), func(k string) error {
			kx := newIndexLin(ks, k)
			var u val
			for j := range xs {
				var err error
				if j == 0 || !lhsShared {
					if u, err = lhsAt[j](kx); err != nil {
						return err
					}
				}
				v, err := rhsAt[j](kx)
				if err != nil {
					return err
				}
				if err := gn.fold(accs[j], u, v); err != nil {
					return err
				}
			}
			return nil
		})
		vals := accs
		for off := 16; off >= 1; off /= 2 {
			if len(vals) == 1 {
				s, err := gn.e.binary("add", vals[0], gn.shuffleXor(vals[0], off))
				if err != nil {
					return err
				}
				vals = []val{s}
				continue
			}
			upper := b.reg(rPred)
			bit := b.reg(rU32)
			b.ins("and.b32", bit, lane, imm(off))
			b.ins("setp.ne.u32", upper, bit, "0")
			h := len(vals) / 2
			next := make([]val, h)
			for j := range next {
				keep := gn.e.selectVal(val{ir.Bool, upper}, vals[h+j], vals[j])
				send := gn.e.selectVal(val{ir.Bool, upper}, vals[j], vals[h+j])
				s, err := gn.e.binary("add", keep, gn.shuffleXor(send, off))
				if err != nil {
					return err
				}
				next[j] = s
			}
			vals = next
		}
		// Lanes 32/r·j .. 32/r·(j+1)−1 hold element j of the group.
		per := 32 / r
		o := a.add(first, a.div(lane, per))
		store := b.reg(rPred)
		b.ins("setp.lt.u32", store, o, end)
		if per > 1 {
			lead, rest := b.reg(rPred), b.reg(rU32)
			b.ins("and.b32", rest, lane, imm(per-1))
			b.ins("setp.eq.u32", lead, rest, "0")
			b.ins("and.pred", store, store, lead)
		}
		res := gn.e.cast(vals[0], dot.Type.DType)
		skip := b.label("stored")
		np := b.reg(rPred)
		b.ins("not.pred", np, store)
		b.braIf(np, skip)
		gn.bound[dot] = func(*index) val { return res }
		defer delete(gn.bound, dot)
		err := gn.isolated(func() error { return gn.storeOutputs(allOutputs(gn.kernelGraph), newIndexLin(shape, o)) })
		b.place(skip)
		return err
	})
	return nil
}
