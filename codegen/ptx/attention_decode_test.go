package ptx

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/splitkv"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// TestAttentionDecodeKernel runs the split-KV template on the simulator (memcheck, racecheck,
// barrier checks on; ptxas sm_80 and sm_90 without spills; the scratch left zero and a second
// launch bit-identical) against the reference: multi-head, grouped and multi-query heads, one
// to four query rows, caches that are not a multiple of the chunk, shorter than one chunk,
// positions at the first and the last key and past the cache, head dims 64 to 128, every float
// dtype, every mask and an additive bias.
func TestAttentionDecodeKernel(t *testing.T) {
	for _, c := range []struct {
		b, h, kvh, l, s, e int
		mask               string
		bias               []int
		pos                []int64
		d                  ir.DType
		splits             int // the plan's, checked
	}{
		{1, 2, 2, 1, 300, 64, ops.MaskNone, nil, nil, ir.F32, 10},                                 // MHA, S not a multiple of the 32-key chunk
		{1, 4, 1, 1, 200, 64, ops.MaskPosition, nil, []int64{199}, ir.F32, 7},                     // MQA, the last key
		{2, 4, 2, 2, 150, 64, ops.MaskPosition, nil, []int64{0, 148}, ir.F32, 5},                  // GQA, the first key alone; the last for query 1
		{1, 8, 2, 4, 130, 80, ops.MaskPosition, nil, []int64{60}, ir.F32, 5},                      // 16 rows per KV head on 16 warps, chunks 2 to 4 hidden
		{2, 2, 1, 1, 20, 96, ops.MaskPosition, nil, []int64{19, -1}, ir.F32, 1},                   // S < one chunk; a row with no key: NaN
		{1, 2, 1, 2, 129, 128, ops.MaskCausal, nil, nil, ir.F32, 5},                               // causal: the first chunk alone
		{1, 2, 2, 1, 160, 64, ops.MaskNone, []int{1, 2, 1, 160}, nil, ir.F32, 5},                  // bias per head
		{2, 4, 2, 1, 140, 64, ops.MaskPosition, []int{2, 1, 1, 140}, []int64{70, 139}, ir.F32, 5}, // bias over heads, position
		{1, 32, 4, 1, 256, 64, ops.MaskPosition, nil, []int64{255}, ir.F16, 8},                    // TinyLlama's heads
		{1, 4, 4, 1, 200, 80, ops.MaskPosition, nil, []int64{150}, ir.F16, 7},
		{4, 16, 16, 1, 300, 64, ops.MaskNone, nil, nil, ir.F16, 4}, // 64 heads: 96-key chunks of three tiles
		{1, 6, 2, 4, 100, 96, ops.MaskNone, nil, nil, ir.F16, 4},   // 12 rows on 12 warps
		{1, 2, 1, 1, 300, 128, ops.MaskPosition, []int{1, 1, 1, 300}, []int64{299}, ir.BF16, 10},
		{2, 2, 2, 2, 70, 64, ops.MaskCausal, nil, nil, ir.BF16, 3},
		{1, 2, 1, 1, 100, 20, ops.MaskPosition, nil, []int64{80}, ir.F16, 4},    // 20 columns: K and V element by element
		{1, 8, 1, 4, 300, 128, ops.MaskPosition, nil, []int64{290}, ir.F16, 10}, // 32 rows, two per warp, d = 128
	} {
		name := fmt.Sprintf("%s_B%d_H%d_KVH%d_L%d_S%d_E%d_%s_bias%v_pos%v", c.d, c.b, c.h, c.kvh, c.l, c.s, c.e, c.mask, c.bias, c.pos)
		t.Run(name, func(t *testing.T) {
			g := attentionGraph(t, c.d, c.b, c.h, c.kvh, c.l, c.s, c.e, c.e, c.mask, c.bias)
			sp, ok := splitkv.Of(g.Outputs[0].Value)
			if !ok || sp.Splits != c.splits {
				t.Fatalf("split-KV plan %+v (taken %v), want %d splits", sp, ok, c.splits)
			}
			res := runAttention(t, g, attnInputs(g, 7, c.pos))
			k := Kernel{Name: "k0_attention", Graph: g}
			if res.regs["sm_80"] == 0 || res.regs["sm_90"] == 0 {
				t.Errorf("not assembled for sm_80 and sm_90: %v", res.regs)
			}
			t.Logf("registers %v, %d warp instructions", res.regs, res.stats.WarpInsts)
			if vec := c.e%(16/c.d.Size()) == 0; vec != strings.Contains(res.ptx, "ld.global.v4") {
				t.Errorf("16-byte loads of K and V: %v, want %v", !vec, vec)
			}
			if !strings.Contains(res.ptx, "split-KV attention") || (sp.Splits > 1) != strings.Contains(res.ptx, "atom.global.add.u32") {
				t.Errorf("want the split-KV template, a ticket iff split:\n%s", res.ptx)
			}
			if _, l, err := Generate(k, harnessTarget); err != nil || l.Grid != sp.Grid() || l.Block[0] != sp.Threads() {
				t.Errorf("launch %v %v (%v), want grid %v of %d threads", l.Grid, l.Block, err, sp.Grid(), sp.Threads())
			}
		})
	}
}

// TestAttentionDecodeSkipsHiddenChunks: chunks past pos[b] load nothing, so a step at the
// cache's first position executes a fraction of the instructions of one at its last.
func TestAttentionDecodeSkipsHiddenChunks(t *testing.T) {
	count := func(pos int64) int64 {
		g := attentionGraph(t, ir.F16, 1, 2, 2, 1, 512, 64, 64, ops.MaskPosition, nil)
		in := inputsFor(g, 1, 1)
		in["pos"].I[0] = pos
		return runKernel(t, Kernel{Name: "k0_attention", Graph: g}, in).stats.WarpInsts
	}
	first, last := count(0), count(511)
	t.Logf("warp instructions at S = 512: pos 0 %d, pos 511 %d", first, last)
	if r := float64(first) / float64(last); r > 0.3 {
		t.Errorf("pos 0 executes %d instructions, pos 511 %d: ratio %.2f, want the hidden chunks skipped", first, last, r)
	}
}

// TestAttentionDecodeBlockOrders: whichever block of a (batch entry, KV head) finishes last
// combines its chunks, in chunk order: the same bits under every block order, and no race on
// global memory between the blocks.
func TestAttentionDecodeBlockOrders(t *testing.T) {
	g := attentionGraph(t, ir.F32, 2, 4, 2, 2, 200, 64, 64, ops.MaskPosition, []int{2, 1, 2, 200})
	k := Kernel{Name: "k0_attention", Graph: g}
	text, l, err := Generate(k, harnessTarget)
	if err != nil {
		t.Fatal(err)
	}
	if l.Grid[0] < 2 {
		t.Fatalf("grid %v does not split the cache", l.Grid)
	}
	in := inputsFor(g, 9, 1)
	in["pos"].I[0], in["pos"].I[1] = 120, 198
	checkBlockOrders(t, text, k.Name, l, g, in)
}
