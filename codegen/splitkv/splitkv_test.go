package splitkv

import (
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// attention is an f16 attention op of d = 64 without a mask.
func attention(t *testing.T, b, h, kvh, l, s int) *ir.Value {
	t.Helper()
	g := ir.NewGraph("attn")
	args := []*ir.Value{g.Input("q", ir.T(ir.F16, b, h, l, 64), nil), g.Input("k", ir.T(ir.F16, b, kvh, s, 64), nil), g.Input("v", ir.T(ir.F16, b, kvh, s, 64), nil)}
	attrs := ir.Attrs{"scale": 0.125, "mask": ops.MaskNone}
	ty, err := ops.Infer(ops.AttentionOp, []ir.Type{args[0].Type, args[1].Type, args[2].Type}, attrs)
	if err != nil {
		t.Fatal(err)
	}
	return g.Add(ops.AttentionOp, ty, attrs, args...)
}

// TestPlan: the split fills the GPU from the SM count and the cache length, in
// whole chunks; rows per KV head and query rows past the template's bounds go to the prefill
// template.
func TestPlan(t *testing.T) {
	for _, c := range []struct {
		b, h, kvh, l, s     int
		ok                  bool
		splits, chunk, rows int
	}{
		{1, 32, 32, 1, 4096, true, 8, 512, 1},   // issue 26's decode: 256 blocks
		{1, 32, 4, 1, 2048, true, 32, 64, 8},    // TinyLlama: 128 blocks, as 256 would add more partials than idle SMs cost
		{1, 12, 12, 1, 1024, true, 16, 64, 1},   // GPT-2 small: 192 blocks, within Slack of 132's partials
		{64, 32, 32, 1, 4096, true, 1, 4096, 1}, // batch 64: the heads fill the GPU alone
		{1, 4, 4, 1, 63, true, 2, 32, 1},        // a short cache: two chunks, partials are cheaper than idle SMs
		{1, 4, 4, 1, 1, true, 1, 32, 1},         //
		{1, 8, 1, 4, 512, true, 16, 32, 32},     // MQA, 32 rows: one KV head, the smallest chunks
		{1, 16, 1, 4, 512, false, 0, 0, 0},      // 64 rows per KV head
		{1, 4, 4, 5, 512, false, 0, 0, 0},       // five query rows: prefill
		{1, 4, 4, 1, 0, false, 0, 0, 0},         // an empty cache
	} {
		p, ok := Of(attention(t, c.b, c.h, c.kvh, c.l, c.s))
		if ok != c.ok || ok && (p.Splits != c.splits || p.Chunk != c.chunk || p.Rows != c.rows) {
			t.Errorf("B%d H%d KVH%d L%d S%d: plan %+v (%v), want %d splits of %d, %d rows (%v)", c.b, c.h, c.kvh, c.l, c.s, p, ok, c.splits, c.chunk, c.rows, c.ok)
		}
		if ok && (p.Chunk%ChunkAlign != 0 || (p.Splits-1)*p.Chunk >= c.s || p.Splits*p.Chunk < c.s) {
			t.Errorf("B%d H%d S%d: %d chunks of %d do not cover the cache exactly", c.b, c.h, c.s, p.Splits, p.Chunk)
		}
		if ok && (p.RowSlots > 2 || p.Warps*p.RowSlots < p.Rows || p.Warps < MinWarps || p.Warps > MaxWarps) {
			t.Errorf("B%d H%d KVH%d L%d: %d rows on %d warps of %d rows", c.b, c.h, c.kvh, c.l, p.Rows, p.Warps, p.RowSlots)
		}
	}
}
