package ptx

import (
	"fmt"
	"strings"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// Programmatic dependent launch (PDL, sm_90): the runtime launches a kernel marked Launch.PDL
// while the kernel before it in the stream still runs, as soon as every block of that one has
// executed griddepcontrol.launch_dependents (or finished). Its blocks then run what reads no
// memory another kernel of the run writes, and execute griddepcontrol.wait, which returns once
// the previous kernels have completed and their writes are visible (PTX ISA, "Parallel
// Synchronization and Communication Instructions: griddepcontrol"). What the overlap hides is
// the launch and the prologue: in a decode step every kernel reads all of what the one before
// wrote, so nothing else can overlap.
//
// The contract every entry written for a PDL target keeps (the simulator checks it: sim's
// Config.Dependent):
//   - griddepcontrol.launch_dependents first, so the next kernel's blocks are placed early;
//   - before griddepcontrol.wait, no global store and no global load but of parameters
//     (OpParam buffers: the plan binds them to the model's weights, which no kernel writes);
//   - every template waits before its body (placeDependentLaunch) unless it placed the wait
//     itself: the GEMV loads its first k step of weights before waiting (gemvPreload).

// pdlTarget reports whether the target's kernels are written for programmatic dependent launch.
// Only sm_90 has griddepcontrol (PTX 7.8).
func pdlTarget(t Target) bool { return t.SM >= 90 }

const (
	depLaunch = "griddepcontrol.launch_dependents"
	depWait   = "griddepcontrol.wait"
)

// placeDependentLaunch puts launch_dependents at the start of the entry's body and, unless the
// template placed its own wait, the wait right after it, before any global access. entry is a
// fragment of Generate: module-level declarations, then one .entry whose body starts after
// "{" and the declarations of its shared arrays and registers.
func placeDependentLaunch(entry string) string {
	at := strings.Index(entry, ".entry ")
	if at < 0 {
		return entry
	}
	open := strings.Index(entry[at:], "\n{\n")
	if open < 0 {
		return entry
	}
	pos := at + open + len("\n{\n")
	for {
		line := entry[pos:]
		if !strings.HasPrefix(line, "\t.reg ") && !strings.HasPrefix(line, "\t.shared ") && !strings.HasPrefix(line, "\t.local ") {
			break
		}
		pos += strings.IndexByte(line, '\n') + 1
	}
	ins := "\t" + depLaunch + ";\n"
	if !strings.Contains(entry, depWait+";") {
		ins += "\t// programmatic dependent launch: wait for the previous kernel before any global access\n\t" + depWait + ";\n"
	}
	return entry[:pos] + ins + entry[pos:]
}

// isParam reports whether v is a buffer of k bound to a model parameter, which no kernel of the
// run writes: an OpParam of its graph, or an input the compiler names in Kernel.ParamInputs.
func isParam(k Kernel, v *ir.Value) bool {
	return v.Op == ir.OpParam || v.Op == ir.OpInput && k.ParamInputs[v.Name]
}

// paramWeight reports whether every buffer the GEMV's weight reads is a parameter: such loads
// may come before the wait.
func paramWeight(k Kernel, w gemvWeight) bool {
	if w.v == 1 || w.l.v == nil {
		return false
	}
	if w.quant == nil {
		return isParam(k, w.l.v)
	}
	for _, a := range w.quant.Args {
		if !isParam(k, a) {
			return false
		}
	}
	return w.quant.Op == ops.DequantizeOp
}

// pdlShareKey extends a kernel's ShareKey at a PDL target by which of its inputs are parameters:
// two kernels of one graph share an entry only if their entries load the same buffers before the
// wait.
func pdlShareKey(k Kernel) string {
	var s strings.Builder
	s.WriteString("|params:")
	for i, v := range k.Graph.Inputs() {
		if k.ParamInputs[v.Name] {
			fmt.Fprintf(&s, "%d,", i)
		}
	}
	return s.String()
}

// gemvPreload is the GEMV's hook for a PDL target: before waiting for the previous kernel, each
// thread loads its weights of the first k step (kk0) when its column and that step exist, with a
// quantized [K,N] weight's column scales first (read from parameters only). The loop then takes
// the loaded registers for its first step (gemvLoaded). It returns the registers, the predicate
// saying they hold the next step's weights, and the column scales if it read them.
func gemvPreload(gn *gen, w gemvWeight, col string, n int, kk0, kEnd string, weightAt func(string) ([]val, error), colPrologue func() error) ([]val, string, error) {
	b := gn.e.b
	b.note("programmatic dependent launch: the first k step's weights (parameters) before the wait")
	ok := b.reg(rPred)
	skip := b.label("no_preload")
	b.ins("setp.lt.u32", ok, gn.a.reg(col), imm(n))
	b.braIf("!"+ok, skip)
	if colPrologue != nil {
		if err := colPrologue(); err != nil {
			return nil, "", err
		}
	}
	b.ins("setp.lt.u32", ok, kk0, kEnd)
	b.braIf("!"+ok, skip)
	pre, err := weightAt(kk0)
	if err != nil {
		return nil, "", err
	}
	b.place(skip)
	b.ins(depWait)
	gn.reset()
	return pre, ok, nil
}

// gemvLoaded is the loop's weights at step kk: the preloaded registers on the first step, a
// fresh load moved into them on the others.
func gemvLoaded(gn *gen, pre []val, ok, kk string, weightAt func(string) ([]val, error)) ([]val, error) {
	b := gn.e.b
	loaded := b.label("preloaded")
	b.braIf(ok, loaded)
	fresh, err := weightAt(kk)
	if err != nil {
		return nil, err
	}
	for i, v := range fresh {
		b.ins("mov."+movType(pre[i].r), pre[i].r, v.r)
	}
	b.place(loaded)
	b.ins("setp.ne.u32", ok, kk, kk) // false: later steps load
	gn.reset()
	return pre, nil
}

// movType is the mov type of a register by its class's prefix.
func movType(r string) string {
	switch {
	case strings.HasPrefix(r, "%rd"):
		return "b64"
	case strings.HasPrefix(r, "%fd"):
		return "f64"
	case strings.HasPrefix(r, "%f"):
		return "f32"
	case strings.HasPrefix(r, "%h"):
		return "b16"
	case strings.HasPrefix(r, "%p"):
		return "pred"
	}
	return "b32"
}
