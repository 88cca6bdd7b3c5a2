package ptx

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/sim"
)

// attnMMACases are the tensor-core template's table (TestAttentionMMA, TestAttentionMMALSE).
var attnMMACases = []attnCase{
	{1, 1, 1, 64, 64, 64, 64, ops.MaskNone, nil, nil, ir.F16},
	{1, 2, 2, 70, 70, 64, 64, ops.MaskCausal, nil, nil, ir.F16},
	{2, 4, 2, 33, 100, 80, 80, ops.MaskNone, nil, nil, ir.F16},
	{1, 3, 1, 130, 130, 96, 96, ops.MaskCausal, nil, nil, ir.BF16},
	{1, 2, 1, 20, 64, 128, 128, ops.MaskCausal, nil, nil, ir.BF16},
	{2, 2, 1, 16, 90, 64, 64, ops.MaskPosition, nil, []int64{70, -20}, ir.F16},
	{1, 2, 2, 24, 150, 128, 64, ops.MaskPosition, nil, []int64{100}, ir.BF16},
	{2, 2, 2, 40, 72, 64, 64, ops.MaskNone, []int{2, 1, 40, 72}, nil, ir.F16},
	{1, 4, 2, 65, 65, 80, 80, ops.MaskCausal, []int{1, 4, 65, 65}, nil, ir.BF16},
	{1, 2, 1, 18, 40, 96, 96, ops.MaskPosition, []int{1, 2, 18, 40}, []int64{15}, ir.F16},
}

// TestAttentionMMA runs the tensor-core template on the simulator (memcheck, racecheck and
// barrier checks on; ptxas sm_80 and sm_90 without spills) against the reference: f16 and bf16,
// head dims 64, 80, 96 and 128, multi-head, grouped and multi-query KV heads, L and S multiples
// of the 64-row and 64-key tiles and not, L ≠ S under a position mask (rows that see no key
// are NaN), additive bias broadcast over batch or heads.
func TestAttentionMMA(t *testing.T) {
	for _, c := range attnMMACases {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			res := c.run(t, nil)
			for _, s := range []string{"mma.sync.aligned.m16n8k16", "ldmatrix.sync.aligned.m8n8.x4.trans", "cp.async"} {
				if !strings.Contains(res.ptx, s) {
					t.Errorf("the kernel has no %s", s)
				}
			}
			t.Logf("registers %v", res.regs)
		})
	}
}

// TestAttentionMMAScale: the template folds a positive scale into the exponent and scales the
// scores first otherwise: zero (every visible key weighs the same), negative, and so small that
// the bias's 1/scale would overflow f32.
func TestAttentionMMAScale(t *testing.T) {
	for _, c := range []struct {
		attnCase
		scale float64
	}{
		{attnCase{1, 2, 2, 30, 70, 64, 64, ops.MaskCausal, []int{1, 1, 30, 70}, nil, ir.F16}, -0.2},
		{attnCase{1, 1, 1, 17, 33, 64, 64, ops.MaskNone, nil, nil, ir.BF16}, 0},
		{attnCase{1, 1, 1, 17, 33, 64, 64, ops.MaskNone, nil, nil, ir.F16}, 0.5},
		{attnCase{1, 1, 1, 17, 33, 64, 64, ops.MaskNone, []int{1, 1, 17, 33}, nil, ir.F16}, 1e-39},
	} {
		t.Run(fmt.Sprintf("%s_scale%g", c.attnCase, c.scale), func(t *testing.T) {
			t.Parallel()
			res := c.run(t, ir.Attrs{"scale": c.scale})
			scaled := regexp.MustCompile(`mul\.rn\.f32 (%f\d+), %f\d+, `+immF32(c.scale*math.Log2E)+";").FindAllString(res.ptx, -1)
			if want := map[bool]int{true: 0, false: 32}[c.scale > 1e-30]; len(scaled) != want {
				t.Errorf("%d scores multiplied by scale·log2 e, want %d", len(scaled), want)
			}
		})
	}
}

// TestAttentionMMAStrided: the tensor-core template reads q, k and v in place through views:
// heads split out of a fused qkv buffer's rows, a KV head broadcast to every query head
// (multi-query without a copy), a bias broadcast over heads. The row stride and the views'
// offset decide the copies: 16-byte cp.async where both are multiples of 8 elements, 4-byte
// ones where they are even, element copies otherwise.
func TestAttentionMMAStrided(t *testing.T) {
	const b, l, h, e = 2, 20, 2, 64
	for _, c := range []struct {
		start int
		copy  string // an instruction of the K/V copies
	}{{0, "cp.async.cg.shared.global"}, {2, "cp.async.ca.shared.global"}, {1, "st.shared.b16"}} {
		t.Run(fmt.Sprintf("start%d", c.start), func(t *testing.T) {
			t.Parallel()
			g := stridedAttentionGraph(t, ir.F16, b, l, h, e, c.start, 0.125)
			in := inputsFor(g, 5, 1)
			res := runAttention(t, g, in)
			if !strings.Contains(res.ptx, "mma.sync") || !strings.Contains(res.ptx, c.copy) {
				t.Errorf("want mma.sync and K/V copies by %s", c.copy)
			}
		})
	}
}

// TestAttentionMMAChoice: the tensor-core template takes 16-bit attention of at least 16 query
// rows and head dims that are multiples of 16 up to 128; f32, fewer rows and other head dims
// keep the CUDA-core template.
func TestAttentionMMAChoice(t *testing.T) {
	for _, c := range []struct {
		d        ir.DType
		l, e, ev int
		mma      bool
	}{
		{ir.F16, 16, 64, 64, true},
		{ir.BF16, 300, 128, 128, true},
		{ir.F16, 64, 16, 32, true},
		{ir.F16, 15, 64, 64, false},
		{ir.F32, 64, 64, 64, false},
		{ir.F16, 64, 72, 72, false},
		{ir.F16, 64, 160, 160, false},
		{ir.BF16, 64, 64, 8, false},
	} {
		g := attentionGraph(t, c.d, 1, 2, 1, c.l, 40, c.e, c.ev, ops.MaskCausal, nil)
		entry, _, err := Generate(Kernel{Name: "k0_attention", Graph: g}, harnessTarget)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(entry, "mma.sync"); got != c.mma {
			t.Errorf("%s L=%d E=%d Ev=%d: mma.sync %v, want %v", c.d, c.l, c.e, c.ev, got, c.mma)
		}
	}
}

// TestAttentionMMASkipsHiddenTiles: a causal kernel loads no tile past its block's last visible
// key and its warps skip the products of tiles they do not see: at L = S = 512 its blocks load
// 36 of the unmasked kernel's 64 tiles, and it executes about as large a share of instructions.
func TestAttentionMMASkipsHiddenTiles(t *testing.T) { checkCausalShare(t, ir.F16, 512, 64, 0.65) }

// TestAttentionMMAPositionI64: the position operand may be i64 (the language models' runtime
// position); values past the int32 range clamp to [0, S] like small ones.
func TestAttentionMMAPositionI64(t *testing.T) {
	const b, h, l, s, e = 3, 2, 20, 70, 64
	g := ir.NewGraph("pos64")
	q, k, v := g.Input("q", ir.T(ir.F16, b, h, l, e), nil), g.Input("k", ir.T(ir.F16, b, 1, s, e), nil), g.Input("v", ir.T(ir.F16, b, 1, s, e), nil)
	pos := g.Input("pos", ir.T(ir.I64, b), nil)
	attrs := ir.Attrs{"scale": 0.125, "mask": ops.MaskPosition}
	ty, err := ops.Infer(ops.AttentionOp, []ir.Type{q.Type, k.Type, v.Type, pos.Type}, attrs)
	if err != nil {
		t.Fatal(err)
	}
	g.SetOutput("o", g.Add(ops.AttentionOp, ty, attrs, q, k, v, pos))
	in := inputsFor(g, 7, 1)
	copy(in["pos"].I, []int64{40, 1 << 40, -(1 << 40)})
	res := runAttention(t, g, in)
	if !strings.Contains(res.ptx, "mma.sync") || !strings.Contains(res.ptx, "ld.global.s64") {
		t.Error("want the tensor-core template reading a 64-bit position")
	}
}

// TestAttentionMMAIdleWarps: a block's warps whose 16 rows all lie past L issue no mma: at
// L = 16, S = 64, d = 64 only the first warp's 32 + 32 products of the one tile run.
func TestAttentionMMAIdleWarps(t *testing.T) {
	res := attnCase{1, 1, 1, 16, 64, 64, 64, ops.MaskNone, nil, nil, ir.F16}.run(t, nil)
	if n := res.stats.Classes[sim.ClassTensor]; n != 64 {
		t.Errorf("%d mma issued, want 64", n)
	}
}
