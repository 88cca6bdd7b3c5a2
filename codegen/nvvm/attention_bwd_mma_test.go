package nvvm

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// TestAttentionGradMMA runs codegen/ptx's TestAttentionGradMMA table through the NVVM producer's
// own dk/dv template on tensor cores (checkOwnBackward: ptxas sm_80 and sm_90 without spills,
// the simulator's memcheck and racecheck, within codegen/ptx's tolerance of the float64
// reference, bit for bit codegen/ptx's entry with its launch): f16 and bf16, masks none and
// causal, grouped and multi-query KV heads, head dims 16 to 64 with E ≠ Ev, L and S not
// multiples of the 32-row and 64-key tiles, S > L and S < L under the causal mask, L = 0; dk and
// dv together and alone. No atomics.
func TestAttentionGradMMA(t *testing.T) {
	p := requireProducer(t)
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
				g := attnGradGraph(t, c, wrt)
				if !attnmma.FitsGrad(g.Outputs[0].Value) {
					t.Fatal("not the tensor-core dk/dv template's")
				}
				text := checkOwnBackward(t, p, plan.Kernel{Name: "k0_attention_grad", Graph: g}, attnGradInputs(t, g, 7), gradTolerance)
				// libNVVM drops the loop of no rows (L = 0): dk and dv are stored zeros.
				if c.l > 0 && !strings.Contains(text, "mma.sync.aligned.m16n8k16") || strings.Contains(text, "atom.") || strings.Contains(text, "\tred.") {
					t.Error("want mma.sync and no atomics")
				}
			})
		}
	}
}

// TestAttentionGradMMAChoice: codegen/ptx's choice table: dk and dv of f16/bf16 attention where
// attnmma.FitsGradWide holds (head dims multiples of 16 up to 128, the additive bias up to 96)
// take the NVVM producer's tensor-core dk/dv template, and dq where attnmma.FitsGradDQ holds (a
// bias, head dims up to 128) its tensor-core dq template; odd head dims, f32 operands and a bias
// at head dim 128 its CUDA-core ones. Nothing is borrowed (Lacks): every entry is its own.
func TestAttentionGradMMAChoice(t *testing.T) {
	p := requireProducer(t)
	for _, c := range []struct {
		c             attnCase
		wrt           string
		mma, borrowed bool
	}{
		{attnCase{1, 2, 1, 40, 40, 64, 64, ops.MaskCausal, nil, nil, ir.F16}, "kv", true, false},
		{attnCase{1, 2, 2, 40, 40, 16, 32, ops.MaskNone, nil, nil, ir.BF16}, "v", true, false},
		{attnCase{1, 2, 2, 40, 40, 64, 64, ops.MaskNone, []int{1, 2, 40, 40}, nil, ir.F16}, "kv", true, false},
		{attnCase{1, 2, 2, 40, 40, 80, 80, ops.MaskNone, nil, nil, ir.F16}, "kv", true, false},
		{attnCase{1, 2, 2, 40, 40, 128, 128, ops.MaskCausal, nil, nil, ir.BF16}, "k", true, false},
		{attnCase{1, 2, 2, 40, 40, 128, 128, ops.MaskNone, []int{1, 2, 40, 40}, nil, ir.F16}, "kv", false, false},
		{attnCase{1, 2, 2, 40, 40, 24, 24, ops.MaskNone, nil, nil, ir.BF16}, "k", false, false},
		{attnCase{1, 2, 2, 40, 40, 64, 64, ops.MaskNone, nil, nil, ir.F32}, "kv", false, false},
		{attnCase{1, 2, 2, 40, 40, 64, 64, ops.MaskNone, nil, nil, ir.F16}, "q", true, false},
		{attnCase{1, 2, 2, 40, 40, 128, 128, ops.MaskCausal, []int{1, 2, 40, 40}, nil, ir.BF16}, "q", true, false},
		{attnCase{1, 2, 2, 40, 40, 24, 24, ops.MaskNone, nil, nil, ir.F16}, "q", false, false},
	} {
		k := plan.Kernel{Name: "k0", Graph: attnGradGraph(t, c.c, c.wrt)}
		text, launches, err := p.Module([]plan.Kernel{k}, plan.Target{SM: 80})
		if _, lacks := Lacks(k, plan.Target{SM: 80}); lacks != c.borrowed || c.borrowed != (err != nil) {
			t.Errorf("%s d%s: Lacks %v, Module error %v; want borrowed %v", c.c, c.wrt, lacks, err, c.borrowed)
			continue
		}
		if c.borrowed {
			continue
		}
		if got := strings.Contains(text, "mma.sync"); got != c.mma || launches[0].Producer == "ptx" {
			t.Errorf("%s d%s: mma.sync %v, want %v; producer %q", c.c, c.wrt, got, c.mma, launches[0].Producer)
		}
	}
}
