package ptx

import (
	"flag"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/internal/ptxas"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/sim"
)

var perfFlag = flag.Bool("perf", false, "run the large kernels of docs/perf.md and print their numbers")

// occupancy is the fraction of an SM's 64 warp slots that resident blocks fill, limited by
// registers (allocated per warp in units of 256), shared memory and the block limit.
func occupancy(arch string, regs, threads, shared int) float64 {
	warps := (threads + 31) / 32
	smem := map[string]int{"sm_80": 164 << 10, "sm_90": 228 << 10}[arch]
	blocks := min(32, 64/warps)
	if regs > 0 {
		perWarp := (regs*32 + 255) / 256 * 256
		blocks = min(blocks, 65536/(perWarp*warps))
	}
	if shared > 0 {
		blocks = min(blocks, smem/(shared+1024)) // the runtime reserves 1 KB per block
	}
	return float64(blocks*warps) / 64
}

// TestPerf measures the kernels docs/perf.md reports: go test ./codegen/ptx -run Perf -perf -v
func TestPerf(t *testing.T) {
	if !*perfFlag {
		t.Skip("large simulations: run with -perf")
	}
	ptxas.Require(t)
	cases := []struct {
		name, src string
		m, n, k   int
	}{
		{"bias_relu", loopCases[0].src, 1024, 1024, 0},
		{"transpose_mul", loopCases[1].src, 1024, 1024, 0},
		{"softmax", reduceCases[4].src, 512, 1024, 0},
		{"layernorm", reduceCases[5].src, 512, 1024, 0},
		{"sum_cols", reduceCases[7].src, 1024, 1024, 0},
		{"sum_all", reduceCases[2].src, 1024, 1024, 0},
		{"matmul", matmulCases[0].src, 1024, 1024, 1024},
		{"linear_bias_relu", matmulCases[1].src, 512, 1024, 768},
	}
	cases = append(cases, struct {
		name, src string
		m, n, k   int
	}{"conv3x3_bias_relu", convSrc, 8 * 28 * 28, 64, 64 * 9}, struct {
		name, src string
		m, n, k   int
	}{"matmul_f16", strings.ReplaceAll(matmulCases[0].src, "f32", "f16"), 1024, 1024, 1024}, struct {
		name, src string
		m, n, k   int
	}{"conv3x3_bias_relu_f16", strings.ReplaceAll(convSrc, "f32", "f16"), 8 * 28 * 28, 64, 64 * 9})
	var rows []string
	for _, c := range cases {
		var src string
		if strings.HasPrefix(c.name, "conv") {
			src = c.src
		} else if c.k > 0 {
			src = instantiateMNK(c.src, c.m, c.n, c.k)
		} else {
			src = instantiate(replaceAll(c.src, "RECIP", fmt.Sprint(1/float64(c.n))), c.m, c.n)
		}
		g := parse(t, src)
		k := Kernel{Name: "k_" + c.name, Graph: g}
		res := checkKernel(t, k, inputsFor(g, 7, 1), false)
		if res == nil {
			continue
		}
		_, l, _ := Generate(k, Target{SM: 80})
		st := res.stats
		ld := 100 * float64(st.GlobalLoadBytes) / float64(32*max(1, st.GlobalLoadSectors))
		sto := 100 * float64(st.GlobalStoreBytes) / float64(32*max(1, st.GlobalStoreSectors))
		threads := l.Block[0] * l.Block[1] * l.Block[2]
		shared := 0
		if c.k > 0 {
			shared = 2 * (mmBK*(mmBM+mmPad)*4 + mmBK*(mmBN+mmPad)*4)
		}
		if strings.HasSuffix(c.name, "_f16") {
			shared = 2 * (mmBM*(mmaBK+mmaPadH)*2 + mmaBK*(mmBN+mmaPadH)*2)
		}
		extra := ""
		if c.k > 0 {
			ratio, fp32, tensor := contractionCounters(st, g, c.m, c.n, c.k)
			extra = fmt.Sprintf("global bytes %.2f× minimum; fp32 %.1f%%, tensor %.1f%% of warp instructions; %d bank conflicts",
				ratio, 100*fp32, 100*tensor, st.SharedBankConflicts)
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %d / %d | %.0f%% / %.0f%% | %.1f%% | %.1f%% | %d | %s |",
			c.name, g.Outputs[0].Value.Type, res.regs["sm_80"], res.regs["sm_90"],
			100*occupancy("sm_80", res.regs["sm_80"], threads, shared), 100*occupancy("sm_90", res.regs["sm_90"], threads, shared),
			ld, sto, st.WarpInsts, extra))
	}
	t.Log("\n| kernel | output | registers sm_80 / sm_90 | occupancy sm_80 / sm_90 | load efficiency | store efficiency | warp instructions | notes |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n" + strings.Join(rows, "\n"))
}

// contractionCounters returns an M×N×K product's global bytes requested (loads + stores) over
// the minimum (each operand read once, the result written once) and the fractions of its warp
// instructions in the simulator's fp32 and tensor classes.
func contractionCounters(st *sim.Stats, g *ir.Graph, m, n, k int) (ratio, fp32, tensor float64) {
	size := int64(g.Outputs[0].Value.Type.DType.Size())
	minimum := size * int64(m*k+k*n+m*n)
	return float64(st.GlobalLoadBytes+st.GlobalStoreBytes) / float64(minimum),
		float64(st.Class("fp32")) / float64(st.WarpInsts), float64(st.Class("tensor")) / float64(st.WarpInsts)
}

// The matmul targets, held at 256×256×256 (4 blocks: a second of simulation) with the
// simulator's counters, which are deterministic: the f32 product requests at most 6× the minimum
// global bytes (the 128×128 tiles' model: A read N/128 times, B M/128 times, 5/3× here) and at
// least 60% of its warp instructions are FP32 (each thread's 64 FFMAs per k; the FFMAs alone
// are 2^19 warp instructions); the f16 product has no shared-memory bank conflicts, on the
// ldmatrix path or anywhere else, and requests the same bytes.
func TestPerfTargets(t *testing.T) {
	const m, n, k = 256, 256, 256
	model := float64(m*k*(n/mmBN)+k*n*(m/mmBM)+m*n) / float64(m*k+k*n+m*n)
	for _, dt := range []string{"f32", "f16"} {
		t.Run("matmul_"+dt, func(t *testing.T) {
			g := parse(t, strings.ReplaceAll(instantiateMNK(matmulCases[0].src, m, n, k), "f32", dt))
			res := checkKernel(t, Kernel{Name: "k_matmul_" + dt, Graph: g}, inputsFor(g, 3, 1), false)
			if res == nil {
				return
			}
			st := res.stats
			ratio, fp32, tensor := contractionCounters(st, g, m, n, k)
			t.Logf("global bytes %.3f× the minimum (tile model %.3f×), fp32 %.1f%%, tensor %.1f%% of %d warp instructions, %d bank conflicts",
				ratio, model, 100*fp32, 100*tensor, st.WarpInsts, st.SharedBankConflicts)
			if ratio > 6 || math.Abs(ratio-model) > 0.01*model {
				t.Errorf("global bytes %.3f× the minimum; want ≤ 6× and the tile model's %.3f×", ratio, model)
			}
			if dt == "f32" {
				if ffma := int64(m / mmBM * n / mmBN * 8 * k * 64); st.Class("fp32") < ffma || fp32 < 0.6 {
					t.Errorf("fp32 %d warp instructions (%.1f%%); want ≥ %d FFMAs and ≥ 60%%", st.Class("fp32"), 100*fp32, ffma)
				}
			}
			if dt == "f16" && (st.SharedBankConflicts != 0 || st.Class("tensor") == 0) {
				t.Errorf("%d bank conflicts, %d tensor instructions; want 0 conflicts on the mma.sync path", st.SharedBankConflicts, st.Class("tensor"))
			}
		})
	}
}

// convSrc is a ResNet-style 3×3 convolution with bias and relu: x[8,64,28,28], w[64,64,3,3].
const convSrc = `graph g {
  input %x : f32[8,64,28,28]
  param %w : f32[64,64,3,3]
  param %b : f32[64]
  %0 = conv2d(%x, %w) {padding=[1,1]} : f32[8,64,28,28]
  %1 = broadcast_in_dim(%b) {dims=[1], shape=[8,64,28,28]} : f32[8,64,28,28]
  %2 = add(%0, %1) : f32[8,64,28,28]
  %3 = relu(%2) : f32[8,64,28,28]
  output y = %3
}`
