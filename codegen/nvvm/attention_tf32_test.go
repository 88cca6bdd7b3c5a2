package nvvm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

var tf32Target = plan.Target{SM: 80, TF32: true}

// TestAttentionMMATF32 runs codegen/ptx's tf32 tensor-core attention table (f32 attention under
// Target.TF32) through the NVVM producer (checkOwnAttentionFor: its own entry, ptxas sm_80 and
// sm_90 without spills, the reference within tf32's tolerance, bit for bit codegen/ptx's): head
// dims 64 to 128, Ev < E, causal and not, grouped and multi-query KV heads, L and S not
// multiples of the 64-row and 32-key tiles, a position mask with rows that see no key, additive
// bias; scales folded into the exponent and not.
func TestAttentionMMATF32(t *testing.T) {
	p := requireProducer(t)
	for _, c := range []struct {
		attnCase
		attrs ir.Attrs // replacing the graph's (scale)
	}{
		{attnCase: attnCase{1, 1, 1, 64, 64, 64, 64, ops.MaskNone, nil, nil, ir.F32}},
		{attnCase: attnCase{1, 2, 2, 70, 70, 64, 64, ops.MaskCausal, nil, nil, ir.F32}},
		{attnCase: attnCase{2, 4, 2, 33, 100, 80, 80, ops.MaskNone, nil, nil, ir.F32}},
		{attnCase: attnCase{1, 3, 1, 130, 130, 96, 96, ops.MaskCausal, nil, nil, ir.F32}},
		{attnCase: attnCase{1, 2, 1, 20, 45, 128, 128, ops.MaskCausal, nil, nil, ir.F32}},
		{attnCase: attnCase{1, 2, 2, 24, 50, 128, 64, ops.MaskPosition, nil, []int64{30}, ir.F32}},
		{attnCase: attnCase{2, 2, 1, 16, 40, 64, 64, ops.MaskPosition, nil, []int64{30, -20}, ir.F32}},
		{attnCase: attnCase{1, 4, 2, 65, 65, 80, 80, ops.MaskCausal, []int{1, 4, 65, 65}, nil, ir.F32}},
		{attnCase: attnCase{1, 2, 2, 16, 20, 16, 32, ops.MaskNone, nil, nil, ir.F32}}, // E = 16: two k steps
		{attnCase: attnCase{1, 2, 2, 30, 70, 64, 64, ops.MaskCausal, []int{1, 1, 30, 70}, nil, ir.F32}, attrs: ir.Attrs{"scale": -0.2}},
		{attnCase: attnCase{1, 1, 1, 17, 33, 64, 64, ops.MaskNone, []int{1, 1, 17, 33}, nil, ir.F32}, attrs: ir.Attrs{"scale": 1e-39}},
	} {
		name := c.String()
		if c.attrs != nil {
			name += fmt.Sprintf("_scale%g", c.attrs["scale"])
		}
		t.Run(name, func(t *testing.T) {
			g := c.graphWith(t, c.attrs, false)
			if !attnmma.FitsTF32(g.Outputs[0].Value) {
				t.Fatal("not the tf32 tensor-core template's")
			}
			in := inputsFor(g, 3)
			if c.pos != nil {
				copy(in["pos"].I, c.pos)
			}
			text, _ := checkOwnAttentionFor(t, p, g, in, tf32Target)
			for _, s := range []string{"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", "cvt.rna.tf32.f32", "cp.async.cg", "ldmatrix.sync.aligned.m8n8.x4.shared.b16"} {
				if !strings.Contains(text, s) {
					t.Errorf("the kernel has no %s", s)
				}
			}
			if strings.Contains(text, "m16n8k16") || strings.Contains(text, ".trans") {
				t.Error("a tf32 kernel issues a 16-bit mma or a transposing ldmatrix")
			}
		})
	}
}

// TestAttentionMMATF32Strided: the tf32 template reads q, k and v in place through views, as
// codegen/ptx's: 16-byte cp.async where the views keep rows 4-element aligned, 4-byte ones
// otherwise.
func TestAttentionMMATF32Strided(t *testing.T) {
	p := requireProducer(t)
	for _, c := range []struct {
		start int
		copy  string // an instruction of the K/V copies
	}{{0, "cp.async.cg.shared.global"}, {2, "cp.async.ca.shared.global"}, {1, "cp.async.ca.shared.global"}} {
		t.Run(fmt.Sprintf("start%d", c.start), func(t *testing.T) {
			g := stridedGraph(t, ir.F32, c.start)
			text, _ := checkOwnAttentionFor(t, p, g, inputsFor(g, 5), tf32Target)
			if !strings.Contains(text, "tf32") || !strings.Contains(text, c.copy) {
				t.Errorf("want tf32 mma.sync and K/V copies by %s", c.copy)
			}
		})
	}
}

// TestAttentionTF32Choice: f32 attention takes the NVVM producer's tf32 tensor-core template only
// under Target.TF32 and only for the shapes the 16-bit one takes; otherwise its CUDA-core one.
// Every entry is this package's own.
func TestAttentionTF32Choice(t *testing.T) {
	p := requireProducer(t)
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
		g := attnCase{1, 2, 1, c.l, 40, c.e, c.ev, ops.MaskCausal, nil, nil, ir.F32}.graph(t)
		text, launches, err := p.Module([]plan.Kernel{{Name: "k0_attention", Graph: g}}, plan.Target{SM: 80, TF32: c.tf32})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(text, "mma.sync"); got != c.mma || launches[0].Producer == "ptx" {
			t.Errorf("tf32 %v L=%d E=%d Ev=%d: mma.sync %v, want %v; producer %q", c.tf32, c.l, c.e, c.ev, got, c.mma, launches[0].Producer)
		}
	}
}
