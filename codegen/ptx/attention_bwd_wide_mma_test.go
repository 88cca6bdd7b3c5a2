package ptx

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/sim"
)

// TestAttentionGradMMAWide runs the tensor-core dk/dv template where attnmma.FitsGradWide takes
// it beyond FitsGrad (the additive bias up to head dim 96, head dims 80, 96 and 128, the last
// in 16-row tiles) on the simulator (memcheck, racecheck, barrier checks; ptxas sm_80 and sm_90
// without spills) against the float64 reference of attention_grad: f16 and bf16, masks none and
// causal, grouped KV heads, a bias whole or broadcast over batch or heads, E ≠ Ev, L and S not
// multiples of the row and 64-key tiles, T = 1; dk and dv together and alone. It counts the mma
// issued exactly (mmaDKVCount).
func TestAttentionGradMMAWide(t *testing.T) {
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
				t.Parallel()
				_, res := runGrad(t, c, wrt)
				checkMMANoAtomics(t, res.ptx)
				if got, want := res.stats.Classes[sim.ClassTensor], int64(mmaDKVCount(c, wrt)); got != want {
					t.Errorf("%d mma issued, want %d", got, want)
				}
			})
		}
	}
}

// mmaDKVCount is how many mma the dk/dv template issues for c: each warp with keys below S, for
// each query head of its group and each tile of rows (32; 16 past head dim 96) from its block's first (causal: the tile of
// the block's first key) whose last row sees the warp's first key, issues Sᵀ = K·Qᵀ and
// dV += Pᵀ·dO, and dPᵀ = V·dOᵀ and dK += dSᵀ·Q (both, whichever of dk and dv it writes: two
// m16n8k16 per 16×16 of rows and head dim each).
func mmaDKVCount(c attnCase, wrt string) int {
	rows, keys := attnmma.GradRows, attnmma.GradKeys
	if max(c.e, c.ev) > 96 {
		rows = attnmma.GradRowsWide
	}
	perTile := 2 * (rows / 16) * (2*c.e/16 + 2*c.ev/16)
	n := 0
	for k0 := 0; k0 < c.s; k0 += keys {
		start := 0
		if c.mask == ops.MaskCausal {
			start = k0 / rows * rows
		}
		for w := range 4 {
			key := k0 + 16*w
			if key >= c.s {
				continue
			}
			for r0 := start; r0 < c.l; r0 += rows {
				if c.mask != ops.MaskCausal || key <= r0+rows-1 {
					n += perTile
				}
			}
		}
	}
	return n * c.b * c.h
}

// TestAttentionGradMMAWideChoice: dk and dv under a bias or with head dims 80 to 128 take the
// tensor-core template (FitsGradWide) while FitsGrad keeps refusing them; a bias with a head dim
// of 128 keeps the CUDA-core template (attnmma.GradBiasMaxDim: ptxas spills there).
func TestAttentionGradMMAWideChoice(t *testing.T) {
	for _, c := range []struct {
		c   attnCase
		wrt string
		mma bool
	}{
		{attnCase{1, 2, 2, 40, 40, 64, 64, ops.MaskNone, []int{1, 2, 40, 40}, nil, ir.F16}, "kv", true},
		{attnCase{1, 2, 2, 40, 40, 96, 96, ops.MaskCausal, nil, nil, ir.BF16}, "k", true},
		{attnCase{1, 2, 2, 40, 40, 128, 128, ops.MaskNone, nil, nil, ir.F16}, "kv", true},
		{attnCase{1, 2, 2, 40, 40, 128, 128, ops.MaskNone, []int{1, 2, 40, 40}, nil, ir.F16}, "kv", false},
		{attnCase{1, 2, 2, 40, 40, 64, 128, ops.MaskCausal, []int{1, 1, 40, 40}, nil, ir.BF16}, "v", false},
	} {
		g := attnGradGraph(t, c.c, c.wrt)
		entry, _, err := Generate(Kernel{Name: "k0", Graph: g}, Target{SM: 80})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(entry, "mma.sync"); got != c.mma || attnmma.FitsGrad(g.Outputs[0].Value) {
			t.Errorf("%s d%s: mma.sync %v, want %v (FitsGrad %v, want false)", c.c, c.wrt, got, c.mma, attnmma.FitsGrad(g.Outputs[0].Value))
		}
	}
}

// TestAttentionGradMMAWideBlockOrders: each dk and dv element is summed by one thread in a fixed
// order (no atomics), so the tensor-core dk/dv with a bias, and at head dim 128, give the same
// bits under every block order, with no race on global memory.
func TestAttentionGradMMAWideBlockOrders(t *testing.T) {
	for _, c := range []attnCase{
		{1, 4, 2, 90, 150, 96, 96, ops.MaskCausal, []int{1, 4, 90, 150}, nil, ir.BF16},
		{1, 2, 1, 40, 150, 128, 128, ops.MaskNone, nil, nil, ir.F16},
	} {
		for _, wrt := range []string{"k", "v"} {
			g := attnGradGraph(t, c, wrt)
			k := Kernel{Name: "k0_attention_grad", Graph: g}
			text, l, err := Generate(k, harnessTarget)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text, "mma.sync") || l.Grid[0] < 2 {
				t.Fatalf("%s d%s: want the tensor-core dk/dv over several blocks, grid %v", c, wrt, l.Grid)
			}
			checkBlockOrders(t, text, k.Name, l, g, attnGradInputs(t, g, 7))
		}
	}
}
