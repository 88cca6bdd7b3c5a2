package ptx

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// TestAttentionGradMMA runs the tensor-core dk/dv template on the simulator (memcheck,
// racecheck, barrier checks; ptxas sm_80 and sm_90 without spills) against the float64
// reference of attention_grad: f16 and bf16, masks none and causal, grouped and multi-query KV
// heads, head dims 16 to 64 with E ≠ Ev, L and S not multiples of the 32-row and 64-key tiles,
// S > L and S < L under the causal mask, L = 0; dk and dv together and alone. No atomics: every
// element is summed by one thread in a fixed order.
func TestAttentionGradMMA(t *testing.T) {
	for _, c := range []attnCase{
		{1, 1, 1, 64, 64, 64, 64, ops.MaskNone, nil, nil, ir.F16},
		{2, 4, 2, 70, 70, 64, 64, ops.MaskCausal, nil, nil, ir.F16},
		{1, 2, 1, 33, 100, 32, 32, ops.MaskNone, nil, nil, ir.BF16},
		{1, 2, 2, 16, 130, 16, 48, ops.MaskCausal, nil, nil, ir.BF16},
		{2, 2, 1, 100, 17, 48, 48, ops.MaskCausal, nil, nil, ir.F16},
		{1, 2, 2, 0, 20, 64, 64, ops.MaskNone, nil, nil, ir.F16},
	} {
		for _, wrt := range []string{"kv", "k", "v"} {
			t.Run(c.String()+"_d"+wrt, func(t *testing.T) {
				t.Parallel()
				_, res := runGrad(t, c, wrt)
				checkMMANoAtomics(t, res.ptx)
			})
		}
	}
}

// TestAttentionGradMMAChoice: dk and dv of f16/bf16 attention, head dims multiples of 16
// (attnmma.FitsGrad: up to 64 without a bias; FitsGradWide: up to 128, up to 96 with a bias),
// take the tensor-core template, and so does dq (attention_bwd_dq_mma.go); a bias at head dim
// 128, odd head dims and f32 operands keep the CUDA-core templates.
func TestAttentionGradMMAChoice(t *testing.T) {
	for _, c := range []struct {
		c   attnCase
		wrt string
		mma bool
	}{
		{attnCase{1, 2, 1, 40, 40, 64, 64, ops.MaskCausal, nil, nil, ir.F16}, "kv", true},
		{attnCase{1, 2, 2, 40, 40, 16, 32, ops.MaskNone, nil, nil, ir.BF16}, "v", true},
		{attnCase{1, 2, 2, 40, 40, 64, 64, ops.MaskNone, []int{1, 2, 40, 40}, nil, ir.F16}, "kv", true}, // FitsGradWide
		{attnCase{1, 2, 2, 40, 40, 80, 80, ops.MaskNone, nil, nil, ir.F16}, "kv", true},                 // FitsGradWide
		{attnCase{1, 2, 2, 40, 40, 128, 128, ops.MaskNone, []int{1, 2, 40, 40}, nil, ir.F16}, "kv", false},
		{attnCase{1, 2, 2, 40, 40, 24, 24, ops.MaskNone, nil, nil, ir.BF16}, "k", false},
		{attnCase{1, 2, 2, 40, 40, 64, 64, ops.MaskNone, nil, nil, ir.F32}, "kv", false},
		{attnCase{1, 2, 2, 40, 40, 64, 64, ops.MaskNone, nil, nil, ir.F16}, "q", true}, // dq: attention_bwd_dq_mma.go
	} {
		entry, _, err := Generate(Kernel{Name: "k0", Graph: attnGradGraph(t, c.c, c.wrt)}, Target{SM: 80})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(entry, "mma.sync"); got != c.mma {
			t.Errorf("%s d%s: mma.sync %v, want %v", c.c, c.wrt, got, c.mma)
		}
	}
}

// TestAttentionGradMMACost logs docs/perf.md's comparison of the dk/dv templates on the
// simulator, same inputs (the tensor-core results checked against the reference): warp
// instructions and mma issued, tensor cores against CUDA cores, at gpt's shape (4 heads, T = 64,
// head dim 32, causal, bf16) and a longer one; it fails if the tensor-core kernel issues more
// warp instructions. go test ./codegen/ptx -run TestAttentionGradMMACost -v
func TestAttentionGradMMACost(t *testing.T) {
	t.Log("\n" + gradCostTable(t, "kv", []attnCase{
		{1, 4, 4, 64, 64, 32, 32, ops.MaskCausal, nil, nil, ir.BF16},
		{1, 2, 1, 256, 256, 64, 64, ops.MaskCausal, nil, nil, ir.F16},
	}))
}
