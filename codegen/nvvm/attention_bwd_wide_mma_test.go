package nvvm

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// TestAttentionGradMMAWide runs codegen/ptx's TestAttentionGradMMAWide table through the NVVM
// producer's own dk/dv template on tensor cores where attnmma.FitsGradWide takes it beyond
// FitsGrad (checkOwnBackward: ptxas sm_80 and sm_90 without spills, the simulator's memcheck and
// racecheck, within codegen/ptx's tolerance of the float64 reference, bit for bit codegen/ptx's
// entry with its launch): the additive bias up to head dim 96 (whole or broadcast over batch or
// heads), head dims 80, 96 and 128 (the last in 16-row tiles), f16 and bf16, masks none and
// causal, grouped KV heads, E ≠ Ev, L and S not multiples of the row and 64-key tiles, T = 1; dk
// and dv together and alone. No atomics.
func TestAttentionGradMMAWide(t *testing.T) {
	p := requireProducer(t)
	for _, c := range []attnCase{
		{1, 2, 1, 40, 40, 64, 64, ops.MaskCausal, []int{1, 2, 40, 40}, nil, ir.F16},
		{2, 4, 2, 33, 70, 64, 32, ops.MaskNone, []int{2, 1, 33, 70}, nil, ir.BF16},
		{1, 4, 2, 50, 50, 80, 80, ops.MaskCausal, nil, nil, ir.F16},
		{1, 2, 2, 37, 20, 96, 96, ops.MaskNone, []int{1, 1, 37, 20}, nil, ir.BF16},
		{2, 2, 1, 70, 70, 96, 80, ops.MaskCausal, []int{2, 2, 70, 70}, nil, ir.F16},
		{1, 2, 1, 1, 1, 80, 80, ops.MaskCausal, []int{1, 2, 1, 1}, nil, ir.BF16},
		{1, 4, 2, 40, 70, 128, 128, ops.MaskCausal, nil, nil, ir.F16},
		{2, 2, 1, 37, 20, 128, 64, ops.MaskNone, nil, nil, ir.BF16},
		{1, 2, 2, 50, 50, 64, 128, ops.MaskCausal, nil, nil, ir.BF16},
		{1, 2, 1, 1, 1, 128, 128, ops.MaskNone, nil, nil, ir.F16},
	} {
		for _, wrt := range []string{"kv", "k", "v"} {
			t.Run(c.String()+"_d"+wrt, func(t *testing.T) {
				g := attnGradGraph(t, c, wrt)
				if op := g.Outputs[0].Value; !attnmma.FitsGradWide(op) || attnmma.FitsGrad(op) {
					t.Fatal("not the wider tensor-core dk/dv template's")
				}
				text := checkOwnBackward(t, p, plan.Kernel{Name: "k0_attention_grad", Graph: g}, attnGradInputs(t, g, 7), gradTolerance)
				if !strings.Contains(text, "mma.sync.aligned.m16n8k16") || strings.Contains(text, "atom.") || strings.Contains(text, "\tred.") {
					t.Error("want mma.sync and no atomics")
				}
			})
		}
	}
}
