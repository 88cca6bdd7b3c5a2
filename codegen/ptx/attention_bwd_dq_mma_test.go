package ptx

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/sim"
)

// TestAttentionGradDQMMA runs the tensor-core dq template on the simulator (memcheck,
// racecheck, barrier checks; ptxas sm_80 and sm_90 without spills) against the float64
// reference of attention_grad: f16 and bf16, masks none and causal, grouped and multi-query KV
// heads, the additive bias (whole and broadcast over batch or heads), head dims 16 to 128 with
// E ≠ Ev, L and S not multiples of the 64-row and 32-key tiles, S > L and S < L under the causal
// mask, and T = 1. It counts the mma issued exactly (mmaDQCount) and finds no atomics.
func TestAttentionGradDQMMA(t *testing.T) {
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
			t.Parallel()
			_, res := runGrad(t, c, "q")
			checkMMANoAtomics(t, res.ptx)
			if got, want := res.stats.Classes[sim.ClassTensor], int64(mmaDQCount(c)); got != want {
				t.Errorf("%d mma issued, want %d", got, want)
			}
		})
	}
}

// mmaDQCount is how many mma the dq template issues for c: each warp with rows below L, for
// each 32-key tile below its block's last visible key that its last row sees a key of, issues
// S = Q·Kᵀ, dP = dO·Vᵀ and dq += dS·K (two m16n8k16 per 16×16 of keys and head dim each).
func mmaDQCount(c attnCase) int {
	keys := attnmma.GradDQKeys
	perTile := 2 * (keys / 16) * (2*c.e/16 + c.ev/16)
	seen := func(row int) int { // keys row sees
		if c.mask == ops.MaskCausal {
			return min(row+1, c.s)
		}
		return c.s
	}
	n := 0
	for r0 := 0; r0 < c.l; r0 += attnmma.Rows {
		blockLast := seen(min(r0+attnmma.Rows, c.l) - 1)
		for w := range 4 {
			row := r0 + 16*w
			if row >= c.l {
				continue
			}
			for t0 := 0; t0 < blockLast; t0 += keys {
				if t0 < seen(row+15) {
					n += perTile
				}
			}
		}
	}
	return n * c.b * c.h
}

// TestAttentionGradDQMMABlockOrders: every dq element is summed by one thread in key order, so
// the tensor-core dq gives the same bits under every block order, with no race on global memory.
func TestAttentionGradDQMMABlockOrders(t *testing.T) {
	c := attnCase{1, 4, 2, 150, 150, 64, 64, ops.MaskCausal, []int{1, 4, 150, 150}, nil, ir.BF16}
	g := attnGradGraph(t, c, "q")
	k := Kernel{Name: "k0_attention_grad", Graph: g}
	text, l, err := Generate(k, harnessTarget)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "mma.sync") {
		t.Fatal("want the tensor-core dq")
	}
	checkBlockOrders(t, text, k.Name, l, g, attnGradInputs(t, g, 7))
}

// TestAttentionGradDQMMAChoice: dq of f16/bf16 attention under masks none and causal, with or
// without a bias, head dims multiples of 16 up to 128, takes the tensor-core template; f32, odd
// head dims and K read across its head dim keep the CUDA-core template.
func TestAttentionGradDQMMAChoice(t *testing.T) {
	for _, c := range []struct {
		c   attnCase
		mma bool
	}{
		{attnCase{1, 2, 1, 40, 40, 64, 64, ops.MaskCausal, nil, nil, ir.F16}, true},
		{attnCase{1, 2, 2, 40, 40, 128, 128, ops.MaskNone, []int{1, 2, 40, 40}, nil, ir.BF16}, true},
		{attnCase{1, 2, 2, 40, 40, 24, 24, ops.MaskNone, nil, nil, ir.BF16}, false},
		{attnCase{1, 2, 2, 40, 40, 64, 64, ops.MaskNone, nil, nil, ir.F32}, false},
	} {
		g := attnGradGraph(t, c.c, "q")
		entry, _, err := Generate(Kernel{Name: "k0", Graph: g}, Target{SM: 80})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(entry, "mma.sync"); got != c.mma || attnmma.FitsGradDQ(g.Outputs[0].Value) != c.mma {
			t.Errorf("%s dq: mma.sync %v, want %v", c.c, got, c.mma)
		}
	}
}

// TestAttentionGradDQMMACost logs docs/perf.md's comparison of the dq templates on the simulator,
// same inputs (the tensor-core results checked against the reference): warp instructions and mma
// issued, tensor cores against CUDA cores, at gpt's shape (4 heads, T = 64, head dim 32, causal,
// bf16) and longer ones; it fails if the tensor-core kernel issues more warp instructions.
// go test ./codegen/ptx -run TestAttentionGradDQMMACost -v
func TestAttentionGradDQMMACost(t *testing.T) {
	t.Log("\n" + gradCostTable(t, "q", []attnCase{
		{1, 4, 4, 64, 64, 32, 32, ops.MaskCausal, nil, nil, ir.BF16},
		{1, 2, 1, 256, 256, 64, 64, ops.MaskCausal, nil, nil, ir.F16},
		{1, 2, 2, 256, 256, 128, 128, ops.MaskNone, []int{1, 2, 256, 256}, nil, ir.BF16},
	}))
}

// gradCostTable runs each case's attention_grad kernel (wrt as attnGradGraph's) on tensor cores,
// checked against the reference, and the CUDA-core template on the same inputs, and tabulates
// their warp instructions, the mma issued and ptxas's sm_80 registers; it fails where the
// tensor-core kernel issues more warp instructions.
func gradCostTable(t *testing.T, wrt string, cases []attnCase) string {
	t.Helper()
	rows := []string{fmt.Sprintf("| %s (B, H, KVH, L = S, E = Ev, mask, dtype) | warp instructions, tensor cores | CUDA cores | ratio | mma | sm_80 registers, tensor / CUDA cores |", map[string]string{"q": "dq", "kv": "dk and dv"}[wrt]), "|---|---:|---:|---:|---:|---|"}
	for _, c := range cases {
		g := attnGradGraph(t, c, wrt)
		in := attnGradInputs(t, g, 7)
		k := Kernel{Name: "k0_attention_grad", Graph: g}
		mma := runKernel(t, k, in)
		want, err := ref.Run(g, in, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range g.Outputs {
			checkGrad(t, mma.out[o.Name], want[o.Name])
		}
		entry, l, err := bwdKernel(k, g.Outputs[0].Value, false)
		if err != nil {
			t.Fatal(err)
		}
		text := fmt.Sprintf(".version %s\n.target sm_80\n.address_size 64\n\n%s", ptxVersion([]Kernel{k}, harnessTarget), entry)
		cuda, err := launchSim(t, text, k.Name, l, g, in)
		if err != nil {
			t.Fatal(err)
		}
		regs := assemble(t, text)
		m, n := mma.stats.WarpInsts, cuda.stats.WarpInsts
		if m >= n {
			t.Errorf("%s: %d warp instructions on tensor cores, %d on CUDA cores", c, m, n)
		}
		rows = append(rows, fmt.Sprintf("| %d, %d, %d, %d, %d, %s, %s%s | %d | %d | %.3f | %d | %d / %d |", c.b, c.h, c.kvh, c.l, c.e, c.mask, c.d, map[bool]string{true: ", bias"}[c.bias != nil],
			m, n, float64(m)/float64(n), mma.stats.Classes[sim.ClassTensor], mma.regs["sm_80"], regs["sm_80"]))
	}
	return strings.Join(rows, "\n")
}

// checkMMANoAtomics fails unless a tensor-core backward kernel's text has mma.sync m16n8k16 and
// no atomics (every element summed by one thread in a fixed order).
func checkMMANoAtomics(t *testing.T, text string) {
	t.Helper()
	if !strings.Contains(text, "mma.sync.aligned.m16n8k16") || strings.Contains(text, "atom.") || strings.Contains(text, "\tred.") {
		t.Error("want mma.sync and no atomics")
	}
}
