package ptx

import (
	"fmt"
	"maps"
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// The persistent template: one block of persistThreads threads runs the kernel's stages in
// order (a chain of small kernels, such as the time steps of a recurrent layer, fused by the
// passes' persist stage). Each stage is lowered as its own kernel would be, with a block-stride
// loop over its elements in place of the grid-stride one: a loop stage computes its elements
// through the kernel graph (views, concats, elementwise ops) in groups of consecutive elements
// with vector accesses when the stage has enough of them to give every thread a group, else one
// element per thread (a recurrence's small steps are its critical path: spreading them keeps it
// short); a contraction stage runs the direct template's per-element fold, f32 products with
// fma.rn.f32 into an f32 accumulator as the tiled template does (the exact f64 accumulation
// runs at 1/64 of the f32 rate on sm_86 and sm_89, and a recurrence runs every step on one SM). A stage reads the
// kernel's inputs from global memory and the values earlier stages left in shared memory, and
// stores each output to global memory, to its shared slot, or both. bar.sync separates the
// stages: it orders every shared (and global) access of one stage before those of the next, for
// the whole block, so a value is read only after all of it is written, and a slot is reused only
// after its last reader is done.
const persistThreads = 256

// maxStaticShared is the most static shared memory one block may declare.
const maxStaticShared = 48 << 10

func persistentKernel(k Kernel, globals *[]string) (string, Launch, error) {
	if k.SharedBytes < 0 || k.SharedBytes > maxStaticShared {
		return "", Launch{}, fmt.Errorf("persistent kernel with %d bytes of shared memory (at most %d)", k.SharedBytes, maxStaticShared)
	}
	sizes := map[string]int{}
	for _, st := range k.Stages {
		for _, v := range st.Graph.Inputs() {
			sizes[v.Name] = v.Type.Bytes()
		}
		for _, o := range st.Graph.Outputs {
			sizes[o.Name] = o.Value.Type.Bytes()
		}
	}
	for _, n := range slices.Sorted(maps.Keys(k.Shared)) {
		if off := k.Shared[n]; off < 0 || off%16 != 0 || off+sizes[n] > k.SharedBytes {
			return "", Launch{}, fmt.Errorf("shared value %s at offset %d: not 16-byte aligned or outside %d bytes", n, off, k.SharedBytes)
		}
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
	var smem string
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
		gn.kernelGraph, gn.kname = sg, k.Name+"_"+st.Name
		if err := gn.stage(sg, tid); err != nil {
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
func (gn *gen) stage(g *ir.Graph, tid string) error {
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
		gn.directElements(dot, tid, step, true)
		return nil
	}
	shape := g.Outputs[0].Value.Type.Shape
	for _, o := range g.Outputs[1:] {
		if !o.Value.Type.Shape.Equal(shape) {
			return fmt.Errorf("outputs %s %s and %s %s have different shapes", g.Outputs[0].Name, shape, o.Name, o.Value.Type.Shape)
		}
	}
	gn.loopElements(shape, tid, step, persistThreads)
	return nil
}
