package ptx

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/internal/ptxas"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/sim"
)

// TestPerfAttentionMMA measures docs/perf.md's tensor-core attention rows: the f16 causal
// kernel at T = 2048, 12 heads, head dims 64–128: registers and the static SASS mix (ptxas and
// cuobjdump -sass), HMMA's share; and the mix the simulator issues for one head at d = 64.
// go test ./codegen/ptx -run TestPerfAttentionMMA -perf -v
func TestPerfAttentionMMA(t *testing.T) {
	if !*perfFlag {
		t.Skip("large simulations: run with -perf")
	}
	ptxas.Require(t)
	const T = 2048
	rows := []string{"| head dim | registers sm_80 / sm_90 | SASS sm_80 | HMMA | share | most frequent |", "|---:|---|---:|---:|---:|---|"}
	for _, e := range []int{64, 80, 96, 128} {
		g := attentionGraph(t, ir.F16, 1, 12, 12, T, T, e, e, ops.MaskCausal, nil)
		text, _, err := Module([]Kernel{{Name: "k0_attention", Graph: g}}, harnessTarget)
		if err != nil {
			t.Fatal(err)
		}
		var regs [2]int
		var mix map[string]int
		for i, arch := range []string{"sm_80", "sm_90"} {
			res, cubin, err := ptxas.AssembleCubin([]byte(text), arch)
			if err != nil {
				t.Fatal(err)
			}
			k := res.Kernel("k0_attention")
			if k.SpillStores+k.SpillLoads != 0 {
				t.Errorf("d = %d, %s: spills", e, arch)
			}
			regs[i] = k.Registers
			if i == 0 {
				all, err := ptxas.SASSOps(cubin)
				if err != nil {
					t.Fatal(err)
				}
				mix = all["k0_attention"]
			}
		}
		total := 0
		var names []string
		for op, n := range mix {
			total += n
			if op != "NOP" {
				names = append(names, op)
			}
		}
		total -= mix["NOP"]
		sort.Slice(names, func(i, j int) bool {
			return mix[names[i]] > mix[names[j]] || mix[names[i]] == mix[names[j]] && names[i] < names[j]
		})
		var top []string
		for _, op := range names[:min(8, len(names))] {
			top = append(top, fmt.Sprintf("%s %d", op, mix[op]))
		}
		rows = append(rows, fmt.Sprintf("| %d | %d / %d | %d | %d | %.1f%% | %s |", e, regs[0], regs[1], total, mix["HMMA"],
			100*float64(mix["HMMA"])/float64(total), strings.Join(top, ", ")))
	}
	t.Log("static SASS (NOP excluded), f16 causal, T = 2048, 12 heads:\n" + strings.Join(rows, "\n"))

	for _, mask := range []string{ops.MaskCausal, ops.MaskNone} {
		g := attentionGraph(t, ir.F16, 1, 1, 1, T, T, 64, 64, mask, nil)
		res := runKernel(t, Kernel{Name: "k0_attention", Graph: g}, inputsFor(g, 1, 1))
		st := res.stats
		var parts []string
		for c := range sim.NumClasses {
			if n := st.Classes[c]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %.1f%%", c, 100*float64(n)/float64(st.WarpInsts)))
			}
		}
		t.Logf("simulated, f16 %s, T = %d, 1 head, d = 64: %d warp instructions, %d mma (%.1f%%); %s", mask, T, st.WarpInsts,
			st.Classes[sim.ClassTensor], 100*float64(st.Classes[sim.ClassTensor])/float64(st.WarpInsts), strings.Join(parts, ", "))
	}
}
