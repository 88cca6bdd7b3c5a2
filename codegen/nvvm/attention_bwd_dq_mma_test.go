package nvvm

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// TestAttentionGradDQMMA runs codegen/ptx's TestAttentionGradDQMMA table through the NVVM
// producer's own dq template on tensor cores (checkOwnBackward: ptxas sm_80 and sm_90 without
// spills, the simulator's memcheck and racecheck, within codegen/ptx's tolerance of the float64
// reference, bit for bit codegen/ptx's entry with its launch): f16 and bf16, masks none and
// causal, grouped and multi-query KV heads, the additive bias (whole and broadcast over batch or
// heads), head dims 16 to 128 with E ≠ Ev, L and S not multiples of the 64-row and 32-key tiles,
// S > L and S < L under the causal mask, and T = 1. No atomics.
func TestAttentionGradDQMMA(t *testing.T) {
	p := requireProducer(t)
	for _, c := range []attnCase{
		{1, 1, 1, 64, 64, 64, 64, ops.MaskNone, nil, nil, ir.F16},
		{2, 4, 2, 70, 70, 64, 64, ops.MaskCausal, nil, nil, ir.F16},
		{1, 2, 1, 33, 100, 32, 32, ops.MaskNone, nil, nil, ir.BF16},
		{1, 2, 2, 16, 130, 16, 48, ops.MaskCausal, nil, nil, ir.BF16},
		{2, 2, 1, 100, 17, 48, 48, ops.MaskCausal, nil, nil, ir.F16},
		{1, 4, 1, 40, 50, 80, 80, ops.MaskCausal, nil, nil, ir.F16},
		{1, 2, 1, 45, 45, 96, 96, ops.MaskNone, []int{1, 2, 45, 45}, nil, ir.BF16},
		{2, 2, 2, 30, 37, 128, 128, ops.MaskCausal, []int{1, 2, 30, 37}, nil, ir.F16},
		{2, 4, 2, 20, 33, 64, 64, ops.MaskNone, []int{2, 1, 20, 33}, nil, ir.BF16},
		{1, 2, 1, 1, 1, 64, 64, ops.MaskCausal, nil, nil, ir.F16},
		{1, 2, 2, 1, 1, 128, 128, ops.MaskNone, []int{1, 1, 1, 1}, nil, ir.BF16},
	} {
		t.Run(c.String(), func(t *testing.T) {
			g := attnGradGraph(t, c, "q")
			if !attnmma.FitsGradDQ(g.Outputs[0].Value) {
				t.Fatal("not the tensor-core dq template's")
			}
			text := checkOwnBackward(t, p, plan.Kernel{Name: "k0_attention_grad", Graph: g}, attnGradInputs(t, g, 7), gradTolerance)
			if !strings.Contains(text, "mma.sync.aligned.m16n8k16") || strings.Contains(text, "atom.") || strings.Contains(text, "\tred.") {
				t.Error("want mma.sync and no atomics")
			}
		})
	}
}
