package nvvm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// TestSymbolicCostPorted: the NVVM producer's own symbolic KV cache write, folds and persistent
// kernel against codegen/ptx's entries for the same kernels, on the simulator with the same
// launch at a run below the bound (warp instructions, deterministic; not a GPU timing). It logs
// the table of docs/perf.md and fails where NVVM's entry issues more than 1.25× codegen/ptx's.
func TestSymbolicCostPorted(t *testing.T) {
	p := requireProducer(t)
	parse := func(src string) *ir.Graph {
		g, err := ir.Parse("k.gir", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	res, err := passes.Run(parse(persistChain("f32", "neg", 32, 64, 64, true)), passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if kn := res.Kernels.Kernels[0]; kn.Kind != passes.Persistent || len(kn.Stages) != 3 {
		t.Fatalf("want a persistent kernel of 3 stages:\n%s", res.Kernels.String())
	}
	persistent := kernelOf(res.Kernels.Kernels[0], "k0")
	persistent.Symbolic, persistent.Rows = true, 32
	for i := range persistent.Stages {
		persistent.Stages[i].Symbolic, persistent.Stages[i].Rows = true, 32
	}
	rows := []string{"| kernel (bound → run) | nvvm | codegen/ptx | ratio |", "|---|---:|---:|---:|"}
	for _, c := range []struct {
		name string
		k    plan.Kernel
		run  int
	}{
		{"KV cache write in place, f32 [8,8,256,64] one token, batch 8 → 5", plan.Kernel{Graph: symUpdateGraph(t, ir.F32, ir.I64, []int{8, 8, 256, 64}, []int{8, 8, 1, 64}, 2), InPlace: true, Rows: 8}, 5},
		{"column fold: bias gradient f32 [64,256], 64 → 13", plan.Kernel{Graph: parse("graph k {\n  input %dy : f32[64,256]\n  %0 = reduce_sum(%dy) {axes=[0]} : f32[256]\n  output db = %0\n}\n"), Rows: 64}, 13},
		{"FFMA fold: weight gradient f32 [64,128]ᵀ·[64,64], 64 → 13", plan.Kernel{Graph: parse("graph k {\n  input %x : f32[64,128]\n  input %dy : f32[64,64]\n  %0 = dot_general(%x, %dy) {lhs_contract=[0], rhs_contract=[0]} : f32[128,64]\n  output dw = %0\n}\n"), Rows: 64}, 13},
		{"tensor-core fold: weight gradient f16 [64,64]ᵀ·[64,128], 64 → 40", plan.Kernel{Graph: parse("graph k {\n  input %x : f16[64,64]\n  input %dy : f16[64,128]\n  %0 = dot_general(%x, %dy) {lhs_contract=[0], rhs_contract=[0]} : f16[64,128]\n  output dw = %0\n}\n"), Rows: 64}, 40},
		{"persistent: three lane-split f32 products [b,64]·[64,64], 32 → 13", persistent, 13},
	} {
		k := c.k
		k.Name, k.Symbolic = "k0", true
		text, l, ptxText, pl := bothEntries(t, p, k, plan.Target{SM: 80})
		in := inputsFor(k.Graph, 1)
		st, pst := costRun(t, text, k, l, in, c.run), costRun(t, ptxText, k, pl, in, c.run)
		rows = append(rows, fmt.Sprintf("| %s | %d | %d | %.2f |", c.name, st.WarpInsts, pst.WarpInsts, float64(st.WarpInsts)/float64(pst.WarpInsts)))
		if float64(st.WarpInsts) > 1.25*float64(pst.WarpInsts) {
			t.Errorf("%s: NVVM's entry issues %d warp instructions, codegen/ptx's %d", c.name, st.WarpInsts, pst.WarpInsts)
		}
	}
	t.Log("\n" + strings.Join(rows, "\n"))
}

// costRun launches symbolic kernel k (text, launch l) at run of its rows with in's values (at the
// bound) and returns the launch's stats: every size argument run times its scale (a persistent
// stage's, or the work's) and the grid from the work.
func costRun(t *testing.T, text string, k plan.Kernel, l plan.Launch, in map[string]*tensor.Tensor, run int) *sim.Stats {
	t.Helper()
	return costRunSizes(t, text, k, l, in, fmt.Sprint(run, " rows"), func(a plan.Arg) int64 {
		if l.Work == nil {
			return int64(run * a.Scale)
		}
		return int64(run * l.Work.Scale)
	})
}

// costRunSizes launches kernel k (text, launch l) with in's values (at the bound), each size
// argument a size(a), the grid from the work at its size argument's (Expr "") value; at names
// the run in errors.
func costRunSizes(t *testing.T, text string, k plan.Kernel, l plan.Launch, in map[string]*tensor.Tensor, at string, size func(plan.Arg) int64) *sim.Stats {
	t.Helper()
	sr := loadRun(t, text, k, l, in)
	for i, a := range l.Params {
		if a.Kind == plan.ArgSize {
			sr.args[i] = uint32(size(a))
		}
	}
	if w := l.Work; w != nil {
		n := size(plan.Arg{Kind: plan.ArgSize})
		grid := l.Grid
		if w.Tile > 0 {
			grid[w.Axis] = int(min(max(1, (n+int64(w.Tile)-1)/int64(w.Tile)), int64(w.MaxBlocks)))
		} else {
			grid[0] = w.Grid(n)
		}
		sr.cfg.Grid = sim.Dim3{X: grid[0], Y: grid[1], Z: grid[2]}
	}
	st, err := sr.m.Launch(sr.entry, sr.cfg, sr.args...)
	if err != nil {
		t.Fatalf("%s at %s: %v", k.Name, at, err)
	}
	return st
}
