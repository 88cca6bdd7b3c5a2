package backend

import (
	"flag"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/nvvm"
	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/ptxas"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
)

var (
	compareFlag = flag.Bool("compare", false, "TestCompare prints docs/perf.md's table of the two producers, kernel by kernel")
	compareOnly = flag.String("compare-only", "", "TestCompare measures only the models (examples or perf kernels) this regexp matches")
)

// perfKernels are the full-size kernels of docs/perf.md's comparison beside the examples', in
// the table's order (perfOrder).
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
	"layernorm_4096x1024": `graph layernorm {
  input %x : f32[4096,1024]
  param %g : f32[1024]
  param %b : f32[1024]
  %0 = reduce_sum(%x) {axes=[1], keepdims=true} : f32[4096,1]
  %1 = constant() {dtype=f32, shape=[4096,1], value=[1024.0]} : f32[4096,1]
  %2 = div(%0, %1) : f32[4096,1]
  %3 = broadcast_in_dim(%2) {dims=[0,1], shape=[4096,1024]} : f32[4096,1024]
  %4 = sub(%x, %3) : f32[4096,1024]
  %5 = mul(%4, %4) : f32[4096,1024]
  %6 = reduce_sum(%5) {axes=[1], keepdims=true} : f32[4096,1]
  %7 = div(%6, %1) : f32[4096,1]
  %8 = constant() {dtype=f32, shape=[4096,1], value=[1e-05]} : f32[4096,1]
  %9 = add(%7, %8) : f32[4096,1]
  %10 = rsqrt(%9) : f32[4096,1]
  %11 = broadcast_in_dim(%10) {dims=[0,1], shape=[4096,1024]} : f32[4096,1024]
  %12 = mul(%4, %11) : f32[4096,1024]
  %13 = broadcast_in_dim(%g) {dims=[1], shape=[4096,1024]} : f32[4096,1024]
  %14 = mul(%12, %13) : f32[4096,1024]
  %15 = broadcast_in_dim(%b) {dims=[1], shape=[4096,1024]} : f32[4096,1024]
  %16 = add(%14, %15) : f32[4096,1024]
  output y = %16
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

var perfOrder = []string{"softmax_4096x1024", "layernorm_4096x1024", "add_relu_16M", "sum_cols_1024", "sum_all_1024",
	"transpose_mul_1024", "matmul_1024_f32", "matmul_1024_f16", "conv3x3_bias_relu"}

// TestCompare (with -compare) prints docs/perf.md's comparison of the two producers: for every
// kernel the NVVM producer takes in every example and the perf kernels, each producer's entry
// compiled on its own and measured on its whole launch (measureModule: ptxas's registers for
// sm_80, the resident warps they, the shared memory and the block allow, SASS instructions,
// and the simulator's warp instructions and global load and store efficiency on zero inputs),
// and the producer --backend auto's rule (choose) takes on the sample of the launch it
// simulates (TestAutoChoosesByCounters holds the plans' choices to the same rule):
//
//	go test ./codegen/backend -run TestCompare -compare -v -timeout 0
func TestCompare(t *testing.T) {
	if !*compareFlag {
		t.Skip("run with -compare")
	}
	lib := libnvvm.Require(t)
	ptxas.Require(t)
	p := NVVM{&nvvm.Producer{LibPath: lib.Path}}
	only := regexp.MustCompile(*compareOnly)
	type model struct {
		name    string
		kernels []ptx.Kernel
	}
	var models []model
	add := func(name string, g *ir.Graph, err error) {
		if err == nil {
			var res *passes.Result
			if res, err = passes.Run(g, passes.Options{}); err == nil {
				models = append(models, model{name, kernelsOf(res)})
			}
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	for _, m := range examples.All() {
		if only.MatchString(m.Name) {
			g, err := frontend.Build(m.Name, m.Model)
			add(m.Name, g, err)
		}
	}
	for _, name := range perfOrder {
		if only.MatchString(name) {
			g, err := ir.Parse(name+".gir", []byte(perfKernels[name]))
			add(name, g, err)
		}
	}
	target := ptx.Target{SM: 80}
	var rows []string
	for _, m := range models {
		seen := map[string]bool{} // one row per distinct entry
		for _, k := range m.kernels {
			if _, _, err := nvvm.IR([]ptx.Kernel{k}, target); err != nil {
				t.Logf("%s: %v", m.name, err)
				continue
			}
			if key := ptx.ShareKey(k); key != "" {
				if seen[key] {
					continue
				}
				seen[key] = true
			}
			one := []ptx.Kernel{k}
			em, emL, err := ptx.Module(one, target)
			if err != nil {
				t.Fatal(err)
			}
			nv, nvL, err := p.Module(one, target)
			if err != nil {
				t.Fatal(err)
			}
			pc := measureModule(em, one, emL, "sm_80", 0, withSASS)[emL[0].Entry]
			nc := measureModule(nv, one, nvL, "sm_80", 0, withSASS)[nvL[0].Entry]
			if !pc.Simulated || !nc.Simulated || !pc.Assembled || !nc.Assembled {
				t.Fatalf("%s: %s: not measured: %v %v", m.name, k.Name, pc.SimErr, nc.SimErr)
			}
			// Auto's choice: its rule on the sample it simulates, with the same entries' ptxas
			// figures (an entry assembles alike alone and in the model's module).
			ps := measureModule(em, one, emL, "sm_80", sampleBlocks, noAssembly)[emL[0].Entry]
			ns := measureModule(nv, one, nvL, "sm_80", sampleBlocks, noAssembly)[nvL[0].Entry]
			ps.Assembled, ps.Registers, ps.Warps, ps.SASS = true, pc.Registers, pc.Warps, pc.SASS
			ns.Assembled, ns.Registers, ns.Warps, ns.SASS = true, nc.Registers, nc.Warps, nc.SASS
			g := emL[0].Grid
			pick := "ptx"
			if ok, _ := choose(ps, ns, "sm_80", g[0]*g[1]*g[2] == 1); ok {
				pick = "nvvm"
			}
			occ := func(c *Counters) int { return 100 * c.Warps / ptxas.MaxWarps("sm_80") }
			eff := func(bytes, sectors int64) int {
				if sectors == 0 {
					return 100
				}
				return int(100 * bytes / (32 * sectors))
			}
			row := fmt.Sprintf("| %s | %s | %d / %d | %d%% / %d%% | %d / %d | %d / %d | %d%% / %d%% | %d%% / %d%% | %s |", m.name, k.Name,
				pc.Registers, nc.Registers, occ(pc), occ(nc), pc.SASS, nc.SASS, pc.WarpInsts, nc.WarpInsts,
				eff(pc.LoadBytes, pc.LoadSectors), eff(nc.LoadBytes, nc.LoadSectors),
				eff(pc.StoreBytes, pc.StoreSectors), eff(nc.StoreBytes, nc.StoreSectors), pick)
			t.Log(row) // as it goes: the whole run takes long
			rows = append(rows, row)
		}
	}
	t.Logf("\n| model | kernel | registers ptx / nvvm | occupancy ptx / nvvm | SASS instructions ptx / nvvm | simulated warp instructions ptx / nvvm | global load efficiency ptx / nvvm | global store efficiency ptx / nvvm | auto |\n|---|---|---|---|---|---|---|---|---|\n%s", strings.Join(rows, "\n"))
}
