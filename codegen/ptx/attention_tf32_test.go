package ptx

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// attnTF32Cases are the tf32 tensor-core template's table (TestAttentionMMATF32,
// TestAttentionMMALSE).
var attnTF32Cases = []attnCase{
	{1, 1, 1, 64, 64, 64, 64, ops.MaskNone, nil, nil, ir.F32},
	{1, 2, 2, 70, 70, 64, 64, ops.MaskCausal, nil, nil, ir.F32},
	{2, 4, 2, 33, 100, 80, 80, ops.MaskNone, nil, nil, ir.F32},
	{1, 3, 1, 130, 130, 96, 96, ops.MaskCausal, nil, nil, ir.F32},
	{1, 2, 1, 20, 45, 128, 128, ops.MaskCausal, nil, nil, ir.F32},
	{1, 2, 2, 24, 50, 128, 64, ops.MaskPosition, nil, []int64{30}, ir.F32},
	{2, 2, 1, 16, 40, 64, 64, ops.MaskPosition, nil, []int64{30, -20}, ir.F32},
	{1, 4, 2, 65, 65, 80, 80, ops.MaskCausal, []int{1, 4, 65, 65}, nil, ir.F32},
}

// TestAttentionMMATF32 runs f32 attention under Target.TF32 on the tensor-core template (mma.sync
// m16n8k8 .tf32 for Q·Kᵀ and P·V, every fragment rounded by cvt.rna.tf32.f32) on the simulator
// (memcheck, racecheck, barrier checks; ptxas sm_80 and sm_90 without spills) against the
// reference within tf32's tolerance: head dims 64, 80, 96 and 128, causal and not, grouped and
// multi-query KV heads, L and S not multiples of the 64-row and 32-key tiles, a position mask
// with rows that see no key, additive bias.
func TestAttentionMMATF32(t *testing.T) {
	harnessTarget = Target{SM: 80, TF32: true}
	t.Cleanup(func() { harnessTarget = Target{SM: 80} })
	rel, _ := tolerance.Tolerance(ir.F32, true, 0)
	for _, c := range attnTF32Cases {
		t.Run(c.String(), func(t *testing.T) {
			g := attentionGraph(t, c.d, c.b, c.h, c.kvh, c.l, c.s, c.e, c.ev, c.mask, c.bias)
			in := attnInputs(g, 3, c.pos)
			res := runKernel(t, Kernel{Name: "k0_attention", Graph: g}, in)
			want, err := ref.Run(g, in, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkAttentionWithin(t, res.out["o"], want["o"], rel)
			for _, s := range []string{"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", "cvt.rna.tf32.f32", "cp.async.cg", "ldmatrix.sync.aligned.m8n8.x4.shared.b16"} {
				if !strings.Contains(res.ptx, s) {
					t.Errorf("the kernel has no %s", s)
				}
			}
			if strings.Contains(res.ptx, "m16n8k16") || strings.Contains(res.ptx, ".trans") {
				t.Error("a tf32 kernel issues a 16-bit mma or a transposing ldmatrix")
			}
			t.Logf("registers %v", res.regs)
		})
	}
}

// TestAttentionTF32Choice: f32 attention takes the tensor-core template only under Target.TF32
// and only for the shapes the 16-bit one takes; without tf32 it keeps the CUDA-core template.
func TestAttentionTF32Choice(t *testing.T) {
	for _, c := range []struct {
		l, e, ev int
		tf32     bool
		mma      bool
	}{
		{64, 64, 64, true, true},
		{16, 128, 128, true, true},
		{64, 64, 64, false, false},
		{15, 64, 64, true, false},
		{64, 72, 72, true, false},
		{64, 160, 160, true, false},
	} {
		g := attentionGraph(t, ir.F32, 1, 2, 1, c.l, 40, c.e, c.ev, ops.MaskCausal, nil)
		entry, _, err := Generate(Kernel{Name: "k0_attention", Graph: g}, Target{SM: 80, TF32: c.tf32})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(entry, "mma.sync"); got != c.mma {
			t.Errorf("tf32 %v L=%d E=%d Ev=%d: mma.sync %v, want %v", c.tf32, c.l, c.e, c.ev, got, c.mma)
		}
	}
}

// checkAttentionWithin compares the kernel's output with the reference's within rel·(1+|want|);
// NaN (rows that see no key) must match NaN.
func checkAttentionWithin(t *testing.T, got, want *tensor.Tensor, rel float64) {
	t.Helper()
	bad := 0
	for i := range want.F {
		w, g := want.F[i], got.F[i]
		if math.IsNaN(w) && math.IsNaN(g) {
			continue
		}
		if !(math.Abs(g-w) <= rel*(1+math.Abs(w))) {
			if bad < 5 {
				t.Errorf("o[%d] = %g, want %g (tolerance %g)", i, g, w, rel)
			}
			bad++
		}
	}
}

// TestAttentionMMATF32Strided: the tf32 template reads q, k and v in place through views (heads
// of a fused buffer, a KV head broadcast to every query head, a bias broadcast over heads):
// 16-byte cp.async where the views keep rows 4-element aligned, 4-byte ones otherwise.
func TestAttentionMMATF32Strided(t *testing.T) {
	harnessTarget = Target{SM: 80, TF32: true}
	t.Cleanup(func() { harnessTarget = Target{SM: 80} })
	rel, _ := tolerance.Tolerance(ir.F32, true, 0)
	for _, c := range []struct {
		start int
		copy  string // an instruction of the K/V copies
	}{{0, "cp.async.cg.shared.global"}, {2, "cp.async.ca.shared.global"}} {
		t.Run(fmt.Sprintf("start%d", c.start), func(t *testing.T) {
			g := stridedAttentionGraph(t, ir.F32, 2, 20, 2, 64, c.start, 0.125)
			in := inputsFor(g, 5, 1)
			res := runKernel(t, Kernel{Name: "k0_attention", Graph: g}, in)
			want, err := ref.Run(g, in, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkAttentionWithin(t, res.out["o"], want["o"], rel)
			if !strings.Contains(res.ptx, "tf32") || !strings.Contains(res.ptx, c.copy) {
				t.Errorf("want tf32 mma.sync and K/V copies by %s", c.copy)
			}
		})
	}
}
