package nvvm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/internal/symtest"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// TestSymbolicCostLayersFolds: the NVVM producer's own layers of stacked buffers (symlayer.go),
// folds over scattered axes (symfold_scatter.go; at a run filling the bound's block and one in the
// run's block) and folds through views (symfold_view.go)
// against codegen/ptx's entries for the same kernels, on the simulator with the same launch at a
// run below the bound (warp instructions, deterministic; not a GPU timing), with ptxas's
// registers for sm_80 (both without spills). It logs the table of docs/perf.md and fails where
// NVVM's entry issues more than 1.25× codegen/ptx's.
func TestSymbolicCostLayersFolds(t *testing.T) {
	p := requireProducer(t)
	parse := func(src string) *ir.Graph {
		g, err := ir.Parse("k.gir", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	// dimSizes gives every value of g but its products sizes over dim, the bound's size n of
	// any axis becoming dim; stacked only: the inputs and concats (a kernel of layers).
	dimSizes := func(g *ir.Graph, dim string, n int, stacked bool) map[*ir.Value][]sym.Expr {
		return symtest.SizesOver(g, n, dim, func(v *ir.Value) bool {
			return !stacked || v.Op == "concat" || v.Op == ir.OpInput && v.Type.Shape[0] != 1
		})
	}
	layer := parse("graph k {\n  input %h : f32[2,256,64]\n  %0 = slice(%h) {limit=[2,256,64], start=[1,0,0]} : f32[1,256,64]\n  %1 = neg(%0) : f32[1,256,64]\n  output y = %1\n}\n")
	stacked := parse("graph k {\n  input %x : f16[1,256,64]\n  %0 = neg(%x) : f16[1,256,64]\n  %1 = mul(%x, %x) : f16[1,256,64]\n  %2 = concat(%0, %1) {axis=0} : f16[2,256,64]\n  output hn = %2\n}\n")
	view := parse("graph k {\n  input %dq : f32[2,4,64,32]\n  input %x : f32[2,64,128]\n  %0 = transpose(%dq) {perm=[0,2,1,3]} : f32[2,64,4,32]\n" +
		"  %1 = reshape(%0) {shape=[2,64,128]} : f32[2,64,128]\n  %2 = dot_general(%1, %x) {lhs_contract=[0,1], rhs_contract=[0,1]} : f32[128,128]\n  output dw = %2\n}\n")
	viewMMA := parse("graph k {\n  input %x : f16[2,64,128]\n  input %dv : f16[2,4,64,32]\n  %0 = transpose(%dv) {perm=[0,2,1,3]} : f16[2,64,4,32]\n" +
		"  %1 = reshape(%0) {shape=[2,64,128]} : f16[2,64,128]\n  %2 = dot_general(%x, %1) {lhs_contract=[0,1], rhs_contract=[0,1]} : f16[128,128]\n  output dw = %2\n}\n")
	stats := parse("graph k {\n  input %x : f32[64,32,8,8]\n  %0 = reduce_sum(%x) {axes=[0,2,3]} : f32[32]\n  %1 = mul(%x, %x) : f32[64,32,8,8]\n  %2 = reduce_sum(%1) {axes=[0,2,3]} : f32[32]\n  output s = %0\n  output q = %2\n}\n")
	rows := []string{"| kernel (bound → run) | nvvm | codegen/ptx | ratio | registers sm_80 nvvm / ptx |", "|---|---:|---:|---:|---:|"}
	for _, c := range []struct {
		name string
		k    plan.Kernel
		dim  string
		run  int // the dim's value at the run
		per  int // the kernel's rows per unit of the dim
	}{
		{"layer 1 of a stacked f32 [2,batch,64], negated, 256 → 100", plan.Kernel{Graph: layer, Rows: 256, Sizes: dimSizes(layer, "batch", 256, true)}, "batch", 100, 1},
		{"two f16 layers stacked into h_n [2,batch,64], 256 → 100", plan.Kernel{Graph: stacked, Rows: 256, Sizes: dimSizes(stacked, "batch", 256, true)}, "batch", 100, 1},
		{"scattered fold: BatchNorm statistics f32 [batch,32,8,8], 64 → 13", plan.Kernel{Graph: stats, Rows: 64}, "batch", 13, 1},
		{"scattered fold in the run's block (two warps of eight), 64 → 1", plan.Kernel{Graph: stats, Rows: 64}, "batch", 1, 1},
		{"fold through views, FFMA: heads merged f32 [2,4,seq,32] → [2,seq,128], 64 → 13", plan.Kernel{Graph: view, Rows: 128, Sizes: dimSizes(view, "seq", 64, false)}, "seq", 13, 2},
		{"fold through views, tensor cores: f16 [2,4,seq,32] on the right, 64 → 40", plan.Kernel{Graph: viewMMA, Rows: 128, Sizes: dimSizes(viewMMA, "seq", 64, false)}, "seq", 40, 2},
	} {
		k := c.k
		k.Name, k.Symbolic = "k0", true
		text, l, ptxText, pl := bothEntries(t, p, k, plan.Target{SM: 80})
		regs, pregs := assemble(t, text, []plan.Kernel{k}), assemble(t, ptxText, []plan.Kernel{k})
		in := inputsFor(k.Graph, 1)
		st, pst := costRunDims(t, text, k, l, in, c.dim, c.run, c.per), costRunDims(t, ptxText, k, pl, in, c.dim, c.run, c.per)
		rows = append(rows, fmt.Sprintf("| %s | %d | %d | %.2f | %d / %d |", c.name, st.WarpInsts, pst.WarpInsts, float64(st.WarpInsts)/float64(pst.WarpInsts), regs["k0"]["sm_80"], pregs["k0"]["sm_80"]))
		if float64(st.WarpInsts) > 1.25*float64(pst.WarpInsts) {
			t.Errorf("%s: NVVM's entry issues %d warp instructions, codegen/ptx's %d", c.name, st.WarpInsts, pst.WarpInsts)
		}
	}
	t.Log("\n" + strings.Join(rows, "\n"))
}

// costRunDims is costRun for a kernel whose size arguments are expressions over dim (a layer's
// offset, a dim's value) or its size: at the run dim is run and the kernel's rows run·per.
func costRunDims(t *testing.T, text string, k plan.Kernel, l plan.Launch, in map[string]*tensor.Tensor, dim string, run, per int) *sim.Stats {
	t.Helper()
	return costRunSizes(t, text, k, l, in, fmt.Sprint(dim, " ", run), func(a plan.Arg) int64 {
		if a.Expr == "" {
			return int64(run * per * l.Work.Scale)
		}
		e, err := sym.Parse(a.Expr)
		if err != nil {
			t.Fatal(err)
		}
		v, err := e.Eval(map[string]int64{dim: int64(run)})
		if err != nil {
			t.Fatal(err)
		}
		return v
	})
}
