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
)

// kgen builds one kernel function: b is the block instructions go to (templates and branching
// ops move it).
type kgen struct {
	md      *module
	f       *ir.Func
	b       *ir.Block
	g       *irg.Graph
	name    string
	ptr     map[*irg.Value]value.Value // global pointer of each input and param
	outPtr  []value.Value
	scratch value.Value                // the scratch buffer, as i64 slots
	errWord value.Value                // the gathers' error word, as i64 slots (plan.ErrorWordBytes)
	sites   map[*irg.Value]int         // each gather's site in the error word (plan.IndexChecks)
	cache   map[cacheKey]value.Value   // per element: common subexpressions evaluate once
	bound   map[*irg.Value]value.Value // values the template computed (reduction results)
	// at gives values the template computed at some indices (a pooled convolution's window),
	// nil at others.
	at map[*irg.Value]func(*index) value.Value
	// aligned is the byte alignment of element groups' first linear index (a multiple of the
	// group size): loads and stores there say so, for the vectorizer.
	aligned map[value.Value]int
	// groups holds indices derived from an element group's lead (repeat.go), per group.
	groups map[groupKey]*index
	// alignCap, if not 0, caps the alignment of every group access: the most a persistent
	// kernel's shared array promises (sharedAlign), for groups in its slots.
	alignCap int
	blocks   int
	// size is a symbolic kernel's size parameter (plan.ArgSize: its elements, rows or M at the
	// run's sizes; symloop.go), nil for a static kernel.
	size value.Value
	// foldK is a folding conv's taps at the run's sizes (symconv.go), nil for another kernel.
	foldK value.Value
	// run is a scattered fold's block at the run's count (symfold_scatter.go), nil for another
	// kernel.
	run *runBlock
}

type cacheKey struct {
	v *irg.Value
	x *index
}

// newKernel declares the kernel with one generic pointer parameter per plan.Params entry (the
// PTX parameters are .u64 as codegen/ptx's) and converts each to a global pointer.
func (md *module) newKernel(k plan.Kernel, args []plan.Arg) *kgen {
	g := k.Graph
	kg := &kgen{md: md, g: g, name: k.Name, ptr: map[*irg.Value]value.Value{}, cache: map[cacheKey]value.Value{}}
	var params []*ir.Param
	var bufs []*irg.Value
	for _, a := range args {
		if a.Kind == plan.ArgSize {
			params = append(params, ir.NewParam(fmt.Sprintf("p%d", len(params)), types.I32))
			bufs = append(bufs, nil)
			continue
		}
		if a.Kind == plan.ArgScratch || a.Kind == plan.ArgError {
			p := ir.NewParam(fmt.Sprintf("p%d", len(params)), types.NewPointer(types.I64))
			p.Attrs = append(p.Attrs, ir.Align(16))
			params = append(params, p)
			bufs = append(bufs, nil)
			continue
		}
		var v *irg.Value
		switch a.Kind {
		case plan.ArgInput:
			v = g.Inputs()[a.Index]
		case plan.ArgParam:
			v = g.Params()[a.Index]
		case plan.ArgOutput:
			v = g.Outputs[a.Index].Value
		}
		bufs = append(bufs, v)
		// Buffers are 16-byte aligned (docs/codegen.md): saying so lets libNVVM's vectorizer
		// merge accesses the code does not mark aligned itself. Only where the buffer's length
		// is a multiple of that alignment, though: the backend widens an aligned access of a
		// partial vector (three f32, seven bf16) to the whole aligned vector, and on a buffer
		// ending inside one that reads past its end. Element groups carry their own alignment.
		p := ir.NewParam(fmt.Sprintf("p%d", len(params)), types.NewPointer(memType(v.Type.DType)))
		if a := maxAlign(v.Type.DType); v.Type.Bytes()%a == 0 {
			p.Attrs = append(p.Attrs, ir.Align(a))
		} else {
			p.Attrs = append(p.Attrs, ir.Align(v.Type.DType.Size()))
		}
		params = append(params, p)
	}
	kg.f = md.m.NewFunc(k.Name, types.Void, params...)
	kg.b = kg.f.NewBlock("entry")
	for i, a := range args {
		if a.Kind == plan.ArgSize {
			kg.size = params[i]
			continue
		}
		elem := types.Type(types.I64)
		if bufs[i] != nil {
			elem = memType(bufs[i].Type.DType)
		}
		gp := types.NewPointer(elem)
		gp.AddrSpace = 1
		p := kg.b.NewAddrSpaceCast(params[i], gp)
		switch {
		case a.Kind == plan.ArgScratch:
			kg.scratch = p
		case a.Kind == plan.ArgError:
			kg.errWord = p
			kg.sites = map[*irg.Value]int{}
			for _, c := range plan.IndexChecks(k) {
				kg.sites[c.Value] = c.Site
			}
		case a.Kind == plan.ArgOutput:
			kg.outPtr = append(kg.outPtr, p)
		default:
			kg.ptr[bufs[i]] = p
		}
	}
	return kg
}

// block starts a new basic block named after stem.
func (kg *kgen) block(stem string) *ir.Block {
	kg.blocks++
	return kg.f.NewBlock(fmt.Sprintf("%s%d", stem, kg.blocks))
}

// sreg reads a special register through its llvm.nvvm.read.ptx.sreg intrinsic.
func (kg *kgen) sreg(name string) value.Value {
	return kg.b.NewCall(kg.md.declare("llvm.nvvm.read.ptx.sreg."+name, types.I32))
}

// loopKernel is codegen/ptx's loop template: a grid-stride loop over groups of V consecutive
// output elements (plan.LoopPlan), then the elements after the last whole group one at a time.
// The group's lanes are computed and stored one by one: libNVVM's vectorizer merges the
// accesses it can prove contiguous and aligned.
func (md *module) loopKernel(k plan.Kernel) (*ir.Func, plan.Launch, error) {
	g := k.Graph
	shape := g.Outputs[0].Value.Type.Shape
	for _, o := range g.Outputs[1:] {
		if !o.Value.Type.Shape.Equal(shape) {
			return nil, plan.Launch{}, fmt.Errorf("outputs %s %s and %s %s have different shapes; a loop kernel has one iteration space",
				g.Outputs[0].Name, shape, o.Name, o.Value.Type.Shape)
		}
	}
	v, flat, grid, block := plan.LoopPlan(g)
	args := plan.Params(g)
	kg := md.newKernel(k, args)
	tid := kg.b.NewAdd(kg.b.NewMul(kg.sreg("ctaid.x"), kg.sreg("ntid.x")), kg.sreg("tid.x"))
	step := kg.b.NewMul(kg.sreg("nctaid.x"), kg.sreg("ntid.x"))
	err := kg.loopElements(shape, tid, step, v, flat)
	kg.b.NewRet(nil)
	if err != nil {
		return nil, plan.Launch{}, err
	}
	return kg.f, plan.Launch{Grid: grid, Block: block, Params: args}, nil
}

// loopElements computes and stores every element of shape, the kernel graph's output space:
// groups of v consecutive elements at start, start+step, ..., then the elements after the last
// whole group one at a time.
func (kg *kgen) loopElements(shape irg.Shape, start, step value.Value, v int, flat bool) error {
	n := shape.NumElements()
	groups := n / v
	var err error
	kg.loop(start, step, groups, func(i value.Value) {
		if e := kg.elementGroup(shape, kg.mul(i, v), v, flat); e != nil && err == nil {
			err = e
		}
	})
	if v > 1 && n%v != 0 {
		kg.loop(kg.add(start, ci(groups*v)), step, n, func(i value.Value) {
			if e := kg.elementGroup(shape, i, 1, true); e != nil && err == nil {
				err = e
			}
		})
	}
	return err
}

// loop emits `for i := start; i < end; i += step { body(i) }` (unsigned compare, as the PTX
// emitter's loops).
func (kg *kgen) loop(start, step value.Value, end int, body func(i value.Value)) {
	kg.loopTo(start, step, ci(end), body)
}

// loopTo is loop with an end computed at run time.
func (kg *kgen) loopTo(start, step, end value.Value, body func(i value.Value)) {
	pre := kg.b
	head, bodyB, done := kg.block("loop"), kg.block("body"), kg.block("done")
	pre.NewBr(head)
	i := head.NewPhi(ir.NewIncoming(start, pre))
	head.NewCondBr(head.NewICmp(enum.IPredULT, i, end), bodyB, done)
	kg.b = bodyB
	kg.cache = map[cacheKey]value.Value{}
	body(i)
	kg.cache = map[cacheKey]value.Value{}
	next := kg.b.NewAdd(i, step)
	kg.b.NewBr(head)
	i.Incs = append(i.Incs, ir.NewIncoming(next, kg.b))
	kg.b = done
}

// elementGroup computes and stores the v consecutive output elements from linear index base
// (flat: by linear position; otherwise they share a row, the last coordinate counting up).
func (kg *kgen) elementGroup(shape irg.Shape, base value.Value, v int, flat bool) error {
	lead := newIndexLin(shape, base)
	lanes := []*index{lead}
	kg.aligned = map[value.Value]int{base: v}
	kg.groups = map[groupKey]*index{}
	rows := !flat && shape.Rank() > 0
	if rows && v > 1 {
		lead.grp = &laneGroup{lead: lead, n: v}
	}
	for j := 1; j < v; j++ {
		l := newIndexLin(shape, kg.add(base, ci(j)))
		if rows {
			l.grp = &laneGroup{lead: lead, j: j, n: v}
			last := shape.Rank() - 1
			for d := 0; d < last; d++ {
				l.coord[d] = kg.coord(lead, d)
			}
			l.coord[last] = kg.add(kg.coord(lead, last), ci(j))
		}
		lanes = append(lanes, l)
	}
	return kg.storeLanes(lanes)
}

// storeLanes computes every output at each lane of an element group, then stores them: the
// loads of a group stay adjacent (the vectorizer cannot move a load across a store that may
// alias it), and so do the stores.
func (kg *kgen) storeLanes(lanes []*index) error {
	vals := make([][]value.Value, len(kg.g.Outputs))
	for oi, o := range kg.g.Outputs {
		for _, x := range lanes {
			r, err := kg.eval(o.Value, x)
			if err != nil {
				return err
			}
			vals[oi] = append(vals[oi], r)
		}
	}
	for oi, o := range kg.g.Outputs {
		for j, x := range lanes {
			kg.store(o.Value.Type.DType, kg.outPtr[oi], kg.lin(x), vals[oi][j])
		}
	}
	return nil
}

func ci(n int) *constant.Int { return constant.NewInt(types.I32, int64(n)) }
