package nvvm

import (
	"fmt"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// persistentKernel is codegen/ptx's persistent template: one block of plan.PersistThreads threads
// runs the kernel's stages in order, llvm.nvvm.barrier0 (bar.sync 0) between two stages, the
// values passed from stage to stage in the kernel's shared array at the offsets the passes
// planned (plan.CheckPersistent). A loop stage computes its elements block-stride in
// plan.LoopPlan's groups (one element per thread when there are too few for a group each); a
// contraction stage whose weight rows are contiguous along K (plan.LaneSplit) has the lanes of
// a warp split each element's products and a butterfly of shuffles sum them, in the same pairs
// as codegen/ptx's; any other contraction stage folds one element per thread. Both accumulate
// f32 products with an fma into f32 (llvm.fma.f32, fma.rn.f32) as codegen/ptx's stages do, in
// its order, so the two producers agree bit for bit.
func (md *module) persistentKernel(k plan.Kernel) (*ir.Func, plan.Launch, error) {
	if err := plan.CheckPersistent(k); err != nil {
		return nil, plan.Launch{}, err
	}
	args, err := persistentArgs(k) // sympersist.go
	if err != nil {
		return nil, plan.Launch{}, err
	}
	kg := md.newKernel(k, args)
	sizes := kg.stageSizes(args)
	global := map[string]value.Value{}
	for _, v := range k.Graph.Inputs() {
		global[v.Name] = kg.ptr[v]
	}
	for i, o := range k.Graph.Outputs {
		global[o.Name] = kg.outPtr[i]
	}
	var smem *ir.Global
	if k.SharedBytes > 0 {
		// Whole 16-byte lines: the backend widens an aligned access of a partial vector (seven
		// bf16 of a 14-byte slot) to the aligned vector around it, which must stay in the array.
		// CheckPersistent's limit is a multiple of 16, so the rounding keeps within it.
		n := (k.SharedBytes + 15) &^ 15
		smem = md.m.NewGlobalDef(k.Name+"_values", constant.NewUndef(types.NewArray(uint64(n), types.I8)))
		smem.Linkage = enum.LinkageInternal
		smem.AddrSpace = 3
		smem.Typ.AddrSpace = 3
		smem.Align = ir.Align(sharedAlign(k))
		if smem.Align < 16 {
			kg.alignCap = int(smem.Align)
		}
	}
	// slot is the shared address of a named value of dtype d, if it has a slot.
	slot := func(name string, d irg.DType) (value.Value, bool) {
		off, ok := k.Shared[name]
		if !ok {
			return nil, false
		}
		pt := types.NewPointer(memType(d))
		pt.AddrSpace = 3
		if smem == nil { // no shared memory: every value with a slot is empty
			return constant.NewNull(pt), true
		}
		p := kg.b.NewGetElementPtr(smem.ContentType, smem, ci(0), ci(off))
		p.InBounds = true
		return kg.b.NewBitCast(p, pt), true
	}
	tid := kg.sreg("tid.x")
	l := kg.layerParams(args) // the stages' layers, in stage order (symlayer.go)
	if smem != nil && slotGaps(k) {
		kg.zeroShared(smem, tid)
	}
	for si, st := range k.Stages {
		if si > 0 {
			kg.barrier() // the previous stage's values are all written, its reads all done
		}
		if err := ops.Verify(st.Graph); err != nil {
			return nil, plan.Launch{}, fmt.Errorf("stage %s: %w", st.Name, err)
		}
		if len(st.Graph.Outputs) == 0 {
			return nil, plan.Launch{}, fmt.Errorf("stage %s has no outputs", st.Name)
		}
		// The stage's graph, with an output listed once for global memory and once for its
		// shared slot when it goes to both.
		sg := st.Graph.Clone()
		outs := sg.Outputs
		kg.ptr, kg.outPtr = map[*irg.Value]value.Value{}, nil
		for _, in := range sg.Inputs() {
			p, ok := slot(in.Name, in.Type.DType)
			if !ok {
				if p, ok = global[in.Name]; !ok {
					return nil, plan.Launch{}, fmt.Errorf("stage %s reads %s, which is neither a kernel input nor in shared memory", st.Name, in.Name)
				}
			}
			kg.ptr[in] = p
		}
		layerViews(st, sg, kg.ptr, l) // a stage reading a layer of a stacked input: symlayer.go
		var slots []string
		sg.Outputs, slots, err = stageOutputs(k, st, outs)
		if err != nil {
			return nil, plan.Launch{}, err
		}
		for i, o := range sg.Outputs {
			p := global[o.Name]
			if slots[i] != "" {
				p, _ = slot(slots[i], o.Value.Type.DType)
			}
			kg.outPtr = append(kg.outPtr, p)
		}
		kg.outPtr = layerOutputs(st, sg, kg.outPtr, l) // symlayer.go
		kg.g, kg.size, kg.foldK = sg, sizes[si], nil
		if plan.FoldsConv(st) { // its size is the taps (symconv.go)
			kg.foldK = kg.size
		}
		if err := kg.stage(sg, tid); err != nil {
			return nil, plan.Launch{}, fmt.Errorf("stage %s: %w", st.Name, err)
		}
	}
	kg.b.NewRet(nil)
	return kg.f, plan.Launch{Grid: [3]int{1, 1, 1}, Block: [3]int{plan.PersistThreads, 1, 1}, Params: args}, nil
}

// stageOutputs lists stage st's outputs outs (of persistent kernel k) once for global memory and
// once for its shared slot when it goes to both, the slot's listed as o.Name+".shared"; slots
// names the value of each listed output that is a slot's ("" for global memory's).
func stageOutputs(k, st plan.Kernel, outs []irg.Output) (list []irg.Output, slots []string, err error) {
	global := map[string]bool{}
	for _, v := range k.Graph.Inputs() {
		global[v.Name] = true
	}
	for _, o := range k.Graph.Outputs {
		global[o.Name] = true
	}
	for _, o := range outs {
		_, shared := k.Shared[o.Name]
		if shared {
			list, slots = append(list, irg.Output{Name: o.Name + ".shared", Value: o.Value}), append(slots, o.Name)
		}
		if global[o.Name] {
			list, slots = append(list, o), append(slots, "")
		} else if !shared {
			return nil, nil, fmt.Errorf("stage %s writes %s, which is neither a kernel output nor in shared memory", st.Name, o.Name)
		}
	}
	return list, slots, nil
}

// stage emits one stage of a persistent kernel: every thread of the block takes elements (or
// element groups) tid, tid+plan.PersistThreads, ...
func (kg *kgen) stage(g *irg.Graph, tid value.Value) error {
	var dot *irg.Value
	for _, v := range plan.Live(g) {
		switch {
		case ops.ClassOf(v.Op) == ops.Reduce:
			return fmt.Errorf("%s: a reduction cannot be a stage of a persistent kernel", v.Op)
		case ops.ClassOf(v.Op) == ops.Contraction && dot != nil:
			return fmt.Errorf("a stage computes one contraction, not several")
		case ops.ClassOf(v.Op) == ops.Contraction:
			dot = v
		}
	}
	step := ci(plan.PersistThreads)
	switch {
	case dot != nil && plan.LaneSplit(dot):
		return kg.warpElements(dot, tid)
	case dot != nil:
		return kg.directElements(dot, tid, step, true)
	}
	shape := g.Outputs[0].Value.Type.Shape
	for _, o := range g.Outputs[1:] {
		if !o.Value.Type.Shape.Equal(shape) {
			return fmt.Errorf("outputs %s %s and %s %s have different shapes", g.Outputs[0].Name, shape, o.Name, o.Value.Type.Shape)
		}
	}
	v, flat, _, _ := plan.LoopPlan(g)
	if shape.NumElements() < v*plan.PersistThreads {
		v, flat = 1, true // a small space: one element per thread keeps the stage short
	}
	if kg.size != nil {
		return kg.symLoopElements(shape, tid, step, v, flat)
	}
	return kg.loopElements(shape, tid, step, v, flat)
}

// warpElements is codegen/ptx's lane-split contraction stage: the block's warps take groups of
// R = plan.WarpGroup(n) consecutive result elements (block-stride over the groups); lane l folds
// products k = l, l+32, ... of each element of its warp's group in ascending order; a butterfly
// of shuffles then sums the 32 partials in codegen/ptx's pairs (while more than one element is
// left, lanes with the step's bit set keep the upper half of the group's partials and send the
// lower half to their partner; then the one partial left is summed across the lanes sharing
// it). Lane l ends with element l/(32/R) of the group; the first lane of each such set runs the
// epilogue and stores it. Every shuffle runs with the whole warp: the group loop is warp-uniform.
func (kg *kgen) warpElements(dot *irg.Value, tid value.Value) error {
	shape := dot.Type.Shape
	n := shape.NumElements()
	const warps = plan.PersistThreads / 32
	r := plan.WarpGroup(n)
	groups := kg.warpGroups(n, r)
	inRow := shape.Rank() > 0 && shape[shape.Rank()-1]%r == 0
	lane, warp := kg.b.NewAnd(tid, ci(31)), kg.b.NewLShr(tid, ci(5))
	accT := plan.AccType(dot, true)
	accs := make([]*ir.InstAlloca, r)
	for j := range accs {
		accs[j] = kg.alloca(regType(accT))
	}
	var err error
	keep := func(e error) {
		if e != nil && err == nil {
			err = e
		}
	}
	kg.loopTo(warp, ci(warps), groups, func(g value.Value) {
		first := kg.mul(g, r)
		xs := make([]*index, r)
		x0 := newIndexLin(shape, first)
		for j := range xs {
			switch {
			case inRow && j > 0:
				c := make([]value.Value, shape.Rank())
				for d := range c {
					c[d] = kg.coord(x0, d)
				}
				c[len(c)-1] = kg.add(c[len(c)-1], ci(j))
				xs[j] = newIndexCoords(shape, c)
			case inRow:
				xs[j] = x0
			default:
				// past the last element a lane evaluates the last one and stores nothing
				xs[j] = newIndexLin(shape, kg.clampLast(kg.add(first, ci(j)), n))
			}
		}
		terms := make([]func(value.Value) (value.Value, value.Value, error), r)
		K := 1
		for j, x := range xs {
			for d := range shape {
				kg.coord(x, d) // derived outside the k loop, whose values do not outlive it
			}
			kg.b.NewStore(constVal(accT, 0), accs[j])
			terms[j], K = kg.dotTerm(dot, x)
		}
		kg.loop(lane, ci(32), K, func(kk value.Value) {
			for j := range xs {
				u, v, e := terms[j](kk)
				if e == nil {
					e = kg.foldProduct(dot, accT, accs[j], u, v)
				}
				keep(e)
			}
		})
		vals := make([]value.Value, r)
		for j := range vals {
			vals[j] = kg.b.NewLoad(regType(accT), accs[j])
		}
		for off := 16; off >= 1; off /= 2 {
			if len(vals) == 1 {
				s, e := kg.binary("add", accT, vals[0], kg.shuffleXor(accT, vals[0], off))
				keep(e)
				vals = []value.Value{s}
				continue
			}
			upper := kg.b.NewICmp(enum.IPredNE, kg.b.NewAnd(lane, ci(off)), ci(0))
			h := len(vals) / 2
			next := make([]value.Value, h)
			for j := range next {
				kept := kg.b.NewSelect(upper, vals[h+j], vals[j])
				sent := kg.b.NewSelect(upper, vals[j], vals[h+j])
				s, e := kg.binary("add", accT, kept, kg.shuffleXor(accT, sent, off))
				keep(e)
				next[j] = s
			}
			vals = next
		}
		// Lanes 32/r·j .. 32/r·(j+1)−1 hold element j of the group.
		per := 32 / r
		o := kg.add(first, kg.div(lane, per))
		store := value.Value(kg.b.NewICmp(enum.IPredULT, o, kg.units(n)))
		if per > 1 {
			lead := kg.b.NewICmp(enum.IPredEQ, kg.b.NewAnd(lane, ci(per-1)), ci(0))
			store = kg.b.NewAnd(store, lead)
		}
		res := kg.cast(accT, vals[0], dot.Type.DType)
		kg.branch(store, "store", func() {
			kg.bound = map[*irg.Value]value.Value{dot: res}
			keep(kg.storeOutputs(allOutputs(kg.g), newIndexLin(shape, o)))
			kg.bound = nil
		})
	})
	return err
}

// foldProduct adds the product u·v of dot's operands to the accumulator acc of type accT: an
// fma into an f32 accumulator (llvm.fma.f32 rounds once, as fma.rn.f32), else both operands
// converted to the accumulator's type, multiplied and added.
func (kg *kgen) foldProduct(dot *irg.Value, accT irg.DType, acc *ir.InstAlloca, u, v value.Value) error {
	cur := kg.b.NewLoad(regType(accT), acc)
	if accT == irg.F32 {
		fma := kg.md.declare("llvm.fma.f32", types.Float, types.Float, types.Float, types.Float)
		kg.b.NewStore(kg.b.NewCall(fma, u, v, cur), acc)
		return nil
	}
	p, err := kg.binary("mul", accT, kg.cast(dot.Args[0].Type.DType, u, accT), kg.cast(dot.Args[1].Type.DType, v, accT))
	if err != nil {
		return err
	}
	s, err := kg.binary("add", accT, cur, p)
	if err == nil {
		kg.b.NewStore(s, acc)
	}
	return err
}

// alloca is a stack slot in the entry block, where libNVVM promotes it to a register wherever
// the code asking for it is.
func (kg *kgen) alloca(t types.Type) *ir.InstAlloca {
	return kg.f.Blocks[0].NewAlloca(t)
}

func allOutputs(g *irg.Graph) []int {
	outs := make([]int, len(g.Outputs))
	for i := range outs {
		outs[i] = i
	}
	return outs
}

// slotGaps reports whether a value's shared slot ends inside a 16-byte line. The backend reads a
// slot's partial vector (seven bf16, three f32) as the aligned vector around it, so the line's
// other bytes are read too: they must be inside the array (its length is rounded up to whole
// lines) and written (zeroShared).
func slotGaps(k plan.Kernel) bool {
	for _, st := range k.Stages {
		for _, v := range st.Graph.Inputs() {
			if _, ok := k.Shared[v.Name]; ok && v.Type.Bytes()%16 != 0 {
				return true
			}
		}
		for _, o := range st.Graph.Outputs {
			if _, ok := k.Shared[o.Name]; ok && o.Value.Type.Bytes()%16 != 0 {
				return true
			}
		}
	}
	return false
}

// zeroShared zeroes the shared array smem (a whole number of 16-byte lines) in stores of its
// alignment, the block's threads taking them tid, tid+plan.PersistThreads, ..., then waits for
// the whole block: the stages' stores come after, ordered by the barrier.
func (kg *kgen) zeroShared(smem *ir.Global, tid value.Value) {
	width := int(smem.Align)
	lines := int(smem.ContentType.(*types.ArrayType).Len) / width
	line := types.NewVector(uint64(width/4), types.I32)
	pt := types.NewPointer(line)
	pt.AddrSpace = 3
	kg.loop(tid, ci(plan.PersistThreads), lines, func(i value.Value) {
		p := kg.b.NewGetElementPtr(smem.ContentType, smem, ci(0), kg.mul(i, width))
		p.InBounds = true
		st := kg.b.NewStore(constant.NewZeroInitializer(line), kg.b.NewBitCast(p, pt))
		st.Align = ir.Align(width)
	})
	kg.barrier()
}

// sharedAlign is the alignment the persistent shared array promises: the slots' 16 bytes, but
// maxAlign(f16) where a slot holds f16 values, as f16 buffers promise. With 16, libNVVM 11.8
// -opt=3 forms half vectors from a per-element contraction stage's unrolled reads of an f16
// slot that its backend cannot lower ("unsupported operation"; random graph 164).
func sharedAlign(k plan.Kernel) int {
	for _, st := range k.Stages {
		for _, v := range st.Graph.Inputs() {
			if _, ok := k.Shared[v.Name]; ok && v.Type.DType == irg.F16 {
				return maxAlign(irg.F16)
			}
		}
	}
	return 16
}
