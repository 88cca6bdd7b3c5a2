package ptx

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/sim"
)

// TestPerfConvMMA measures docs/perf.md's rows of 16-, 32- and 64-channel convolutions on
// tensor cores (bf16 and tf32): mma issued, simulated warp instructions, registers and
// occupancy. go test ./codegen/ptx -run TestPerfConvMMA -perf -v
func TestPerfConvMMA(t *testing.T) {
	if !*perfFlag {
		t.Skip("large simulations: run with -perf")
	}
	sharedDecl := regexp.MustCompile(`\.shared \.align \d+ \.b8 \w+\[(\d+)\]`)
	var rows []string
	for _, prec := range []string{"bf16", "tf32"} {
		for _, o := range []int{16, 32, 64} {
			t.Run(fmt.Sprintf("%s_o%d", prec, o), func(t *testing.T) {
				d := usePrecision(t, prec)
				g := ir.NewGraph("convmma")
				x := g.Input("x", ir.T(d, 4, 16, 16, 16), nil)
				w := g.Param("w", ir.T(d, o, 16, 3, 3), nil)
				ty := ir.T(d, 4, o, 16, 16)
				y := g.Add("conv2d", ty, ir.Attrs{"padding": []int{1, 1}}, x, w)
				g.SetOutput("y", g.Add("relu", ty, nil, y))
				res := checkKernel(t, Kernel{Name: "k_conv_mma", Graph: g}, inputsFor(g, 3, 1), false)
				if res == nil {
					return
				}
				shared := 0
				for _, m := range sharedDecl.FindAllStringSubmatch(res.ptx, -1) {
					n, _ := strconv.Atoi(m[1])
					shared += n
				}
				rows = append(rows, fmt.Sprintf("| %s | %s | %d | %d | %d / %d | %d | %.1f%% / %.1f%% |", prec, ty,
					res.stats.Classes[sim.ClassTensor], res.stats.WarpInsts, res.regs["sm_80"], res.regs["sm_90"], shared,
					100*occupancy("sm_80", res.regs["sm_80"], GEMMThreads, shared), 100*occupancy("sm_90", res.regs["sm_90"], GEMMThreads, shared)))
			})
		}
	}
	t.Log("\n| precision | output | mma issued | warp instructions | registers sm_80 / sm_90 | shared bytes | occupancy sm_80 / sm_90 |\n| --- | --- | --- | --- | --- | --- | --- |\n" + strings.Join(rows, "\n"))
}
