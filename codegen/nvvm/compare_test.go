package nvvm

import (
	"flag"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/ptxas"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/sim"
)

var (
	compareFlag = flag.Bool("compare", false, "TestCompare prints docs/perf.md's table of the two producers, kernel by kernel")
	compareOnly = flag.String("compare-only", "", "TestCompare measures only the models (examples or perf kernels) this regexp matches")
)

// perfKernels are the full-size kernels of docs/perf.md's comparison beside the examples'.
var perfKernels = map[string]string{
	"softmax_4096x1024": `graph softmax {
  input %x : f32[4096,1024]
  %0 = reduce_max(%x) {axes=[1], keepdims=true} : f32[4096,1]
  %1 = broadcast_in_dim(%0) {shape=[4096,1024], dims=[0,1]} : f32[4096,1024]
  %2 = sub(%x, %1) : f32[4096,1024]
  %3 = exp(%2) : f32[4096,1024]
  %4 = reduce_sum(%3) {axes=[1], keepdims=true} : f32[4096,1]
  %5 = broadcast_in_dim(%4) {shape=[4096,1024], dims=[0,1]} : f32[4096,1024]
  %6 = div(%3, %5) : f32[4096,1024]
  output y = %6
}`,
	"sum_cols_1024": `graph sum_cols {
  input %x : f32[1024,1024]
  %0 = reduce_sum(%x) {axes=[0]} : f32[1024]
  output y = %0
}`,
	"sum_all_1024": `graph sum_all {
  input %x : f32[1024,1024]
  %0 = reduce_sum(%x) {axes=[0,1]} : f32[]
  output y = %0
}`,
	"transpose_mul_1024": `graph transpose_mul {
  input %x : f32[1024,1024]
  input %y : f32[1024,1024]
  %0 = transpose(%x) {perm=[1,0]} : f32[1024,1024]
  %1 = mul(%0, %y) : f32[1024,1024]
  output z = %1
}`,
	"matmul_1024_f32": `graph matmul {
  input %x : f32[1024,1024]
  input %w : f32[1024,1024]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[1024,1024]
  output y = %0
}`,
	"matmul_1024_f16": `graph matmul {
  input %x : f16[1024,1024]
  input %w : f16[1024,1024]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : f16[1024,1024]
  output y = %0
}`,
	"conv3x3_bias_relu": `graph conv {
  input %x : f32[8,64,28,28]
  param %w : f32[64,64,3,3]
  param %b : f32[64]
  %0 = conv2d(%x, %w) {padding=[1,1]} : f32[8,64,28,28]
  %1 = broadcast_in_dim(%b) {dims=[1], shape=[8,64,28,28]} : f32[8,64,28,28]
  %2 = add(%0, %1) : f32[8,64,28,28]
  %3 = relu(%2) : f32[8,64,28,28]
  output y = %3
}`,
	"add_relu_16M": `graph add_relu {
  input %x : f32[4096,4096]
  input %y : f32[4096,4096]
  %0 = add(%x, %y) : f32[4096,4096]
  %1 = relu(%0) : f32[4096,4096]
  output z = %1
}`,
}

// sassCounts assembles text for sm_80 and counts each function's SASS instructions
// (cuobjdump -sass, beside ptxas in .cache/cuda).
func sassCounts(t *testing.T, text string) map[string]int {
	t.Helper()
	ptxas.Require(t)
	_, cubin, err := ptxas.AssembleCubin([]byte(text), "sm_80")
	if err != nil {
		t.Fatal(err)
	}
	counts, err := ptxas.SASS(cubin)
	if err != nil {
		t.Fatal(err)
	}
	return counts
}

// TestCompare (with -compare) prints docs/perf.md's comparison: for every kernel the NVVM
// producer takes in every example and the perf kernels, each producer's ptxas registers (sm_80),
// occupancy, SASS instructions, simulated warp instructions and global load and store
// efficiency, and the producer --backend auto's rule picks:
// go test ./codegen/nvvm -run TestCompare -compare -v
func TestCompare(t *testing.T) {
	if !*compareFlag {
		t.Skip("run with -compare")
	}
	p := requireProducer(t)
	type entry struct {
		model string
		k     ptx.Kernel
	}
	var all []entry
	only := regexp.MustCompile(*compareOnly)
	add := func(name string, g *ir.Graph, err error) {
		if !only.MatchString(name) {
			return
		}
		if err == nil {
			var res *passes.Result
			if res, err = passes.Run(g, passes.Options{}); err == nil {
				for _, kn := range res.Kernels.Kernels {
					all = append(all, entry{name, kernelOf(kn, kn.Name)})
				}
			}
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	for _, m := range examples.All() {
		if !only.MatchString(m.Name) {
			continue
		}
		g, err := frontend.Build(m.Name, m.Model)
		add(m.Name, g, err)
	}
	for _, name := range []string{"softmax_4096x1024", "add_relu_16M", "sum_cols_1024", "sum_all_1024", "transpose_mul_1024",
		"matmul_1024_f32", "matmul_1024_f16", "conv3x3_bias_relu"} {
		g, err := ir.Parse(name+".gir", []byte(perfKernels[name]))
		add(name, g, err)
	}
	var rows []string
	for _, e := range all {
		if _, _, err := IR([]ptx.Kernel{e.k}, ptx.Target{SM: 80}); err != nil {
			t.Logf("%s: %v", e.model, err)
			continue
		}
		nv, nvL, err := p.Module([]ptx.Kernel{e.k}, ptx.Target{SM: 80})
		if err != nil {
			t.Fatal(err)
		}
		em, emL, err := ptx.Module([]ptx.Kernel{e.k}, ptx.Target{SM: 80})
		if err != nil {
			t.Fatal(err)
		}
		in := inputsFor(e.k.Graph, 1)
		_, nvSt := run(t, nv, e.k, nvL[0], in)
		_, emSt := run(t, em, e.k, emL[0], in)
		pc, nc := counted(t, em, emL[0], emSt), counted(t, nv, nvL[0], nvSt)
		pick := "ptx"
		if nc.warps > pc.warps || nc.warps == pc.warps && 10*nc.sass <= 9*pc.sass {
			pick = "nvvm"
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %d / %d | %d%% / %d%% | %d / %d | %d / %d | %d%% / %d%% | %d%% / %d%% | %s |", e.model, e.k.Name,
			pc.regs, nc.regs, pc.occupancy, nc.occupancy, pc.sass, nc.sass, emSt.WarpInsts, nvSt.WarpInsts,
			pc.loadEff, nc.loadEff, pc.storeEff, nc.storeEff, pick))
	}
	t.Logf("\n| model | kernel | registers ptx / nvvm | occupancy ptx / nvvm | SASS instructions ptx / nvvm | simulated warp instructions ptx / nvvm | global load efficiency ptx / nvvm | global store efficiency ptx / nvvm | auto |\n|---|---|---|---|---|---|---|---|---|\n%s", strings.Join(rows, "\n"))
}

// kernelCounters are one kernel's figures in the comparison: ptxas's registers for sm_80, the
// occupancy they and the launch allow (resident warps of the SM's 64), the SASS instructions,
// and the share of the 32-byte sectors the simulated global loads and stores moved that the
// threads asked for (100%: fully coalesced).
type kernelCounters struct {
	regs, warps, occupancy, sass, loadEff, storeEff int
}

func counted(t *testing.T, text string, l ptx.Launch, st *sim.Stats) kernelCounters {
	t.Helper()
	res, err := ptxas.Assemble([]byte(text), "sm_80")
	if err != nil {
		t.Fatal(err)
	}
	k := res.Kernel(l.Entry)
	if k == nil {
		t.Fatalf("ptxas does not list %s", l.Entry)
	}
	c := kernelCounters{regs: k.Registers, sass: sassCounts(t, text)[l.Entry]}
	c.warps = ptxas.ResidentWarps("sm_80", k.Registers, k.SharedBytes+l.SharedBytes, l.Block[0]*l.Block[1]*l.Block[2])
	c.occupancy = 100 * c.warps / ptxas.MaxWarps("sm_80")
	pct := func(bytes, sectors int64) int {
		if sectors == 0 {
			return 100
		}
		return int(100 * bytes / (32 * sectors))
	}
	c.loadEff, c.storeEff = pct(st.GlobalLoadBytes, st.GlobalLoadSectors), pct(st.GlobalStoreBytes, st.GlobalStoreSectors)
	return c
}
