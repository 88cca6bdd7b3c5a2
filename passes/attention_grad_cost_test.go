package passes

import (
	"math"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// TestAttentionGradCost: the cost model counts the backward's kernels as codegen/ptx runs them
// (codegen/attnmma): dq of f16/bf16 attention on tensor cores, a block per 64 query rows of a
// head, with or without a bias and up to head dim 128; dk and dv on tensor cores, a block per 64
// keys of a KV head, up to head dim 128 (96 with a bias); dk and dv with a bias at head dim 128
// and f32's kernels on CUDA cores (a block per 4 rows or keys) at the f32 peak.
func TestAttentionGradCost(t *testing.T) {
	for _, tc := range []struct {
		c           attnCase
		dqBlocks    int
		dkvBlocks   int
		dqTC, dkvTC bool
	}{
		{attnCase{1, 4, 2, 130, 130, 64, 64, ops.MaskCausal, nil, ir.F16}, 4 * 3, 2 * 3, true, true},
		{attnCase{2, 2, 2, 64, 64, 96, 96, ops.MaskNone, []int{1, 2, 64, 64}, ir.BF16}, 2 * 2 * 1, 2 * 2 * 1, true, true},
		{attnCase{1, 2, 2, 64, 64, 128, 128, ops.MaskCausal, nil, ir.F16}, 2 * 1, 2 * 1, true, true},
		{attnCase{1, 2, 2, 64, 64, 128, 128, ops.MaskCausal, []int{1, 2, 64, 64}, ir.F16}, 2 * 1, 2 * 16, true, false},
		{attnCase{1, 2, 2, 64, 64, 64, 64, ops.MaskCausal, nil, ir.F32}, 2 * 16, 2 * 16, false, false},
	} {
		t.Run(tc.c.String(), func(t *testing.T) {
			_, g, _ := tc.c.gradients(t)
			res, err := Run(g, Options{})
			if err != nil {
				t.Fatal(err)
			}
			seen := 0
			for i, k := range res.Kernels.Kernels {
				n := countOps(k.Body, ops.AttentionGradOp)
				if n == 0 || len(k.Writes) != n {
					continue
				}
				seen++
				blocks, tc32 := tc.dqBlocks, tc.dqTC
				if n == 2 {
					blocks, tc32 = tc.dkvBlocks, tc.dkvTC
				}
				peak := fp32FlopsPerSec
				if tc32 {
					peak = halfFlopsPerSec
				}
				ks := res.Stats.PerKernel[i]
				want := max(float64(ks.ReadBytes+ks.WriteBytes)/hbmBytesPerSec, float64(ks.Flops)/peak) / min(1, float64(blocks)/h100SMs) * 1e6
				if ks.Blocks != blocks || math.Abs(ks.ModeledTimeUS-want) > 1e-9*want {
					t.Errorf("%s (%d attention_grad): %d blocks, %.4f µs modeled; want %d and %.4f (tensor cores %v)", k.Name, n, ks.Blocks, ks.ModeledTimeUS, blocks, want, tc32)
				}
			}
			if seen != 2 {
				t.Errorf("%d kernels of attention_grad, want dq's and dk/dv's", seen)
			}
		})
	}
}

// TestAttentionGradCostLong logs docs/perf.md's modeled time of the backward's dq and dk/dv
// kernels at GPT-2 small's attention (12 heads, head dim 64, causal, bf16) and T = 2048: a block
// per 64 query rows (dq) or 64 keys (dk/dv) of a head, 384 each.
// go test ./passes -run TestAttentionGradCostLong -v
func TestAttentionGradCostLong(t *testing.T) {
	c := attnCase{1, 12, 12, 2048, 2048, 64, 64, ops.MaskCausal, nil, ir.BF16}
	_, g, _ := c.gradients(t)
	res, err := Run(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for i, k := range res.Kernels.Kernels {
		n := countOps(k.Body, ops.AttentionGradOp)
		if n == 0 {
			continue
		}
		ks := res.Stats.PerKernel[i]
		total += ks.ModeledTimeUS
		t.Logf("%s (%d attention_grad): %d blocks, %.3g flops, %.1f µs modeled", k.Name, n, ks.Blocks, float64(ks.Flops), ks.ModeledTimeUS)
		if ks.Blocks != 12*2048/64 {
			t.Errorf("%s: %d blocks, want %d", k.Name, ks.Blocks, 12*2048/64)
		}
	}
	t.Logf("dq and dk/dv: %.1f µs modeled", total)
}
