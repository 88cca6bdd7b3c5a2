package splitkv

import (
	"math"
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

// TestForBatches: the split of a symbolic batch, fixed at build time, is within Slack of the
// least worst time over every batch from 1 to the bound (each relative to the best split at
// that batch), never worse there than the bound's own split or batch 1's, its B the bound (the
// scratch for every batch); at a bound of 1 it is New's.
func TestForBatches(t *testing.T) {
	for _, c := range []struct {
		b, h, kvh, l, s, e, size int
		splits                   int
	}{
		{8, 12, 12, 1, 1024, 64, 4, 16}, // GPT-2 small at --max-batch 8: the bound alone would take 2
		{4, 32, 4, 1, 2048, 64, 2, 32},  // TinyLlama: 11 at the bound
		{64, 32, 32, 1, 4096, 128, 2, 8},
		{4, 4, 4, 1, 128, 16, 4, 4},
		{3, 8, 2, 2, 300, 64, 4, 10},
		{1, 12, 12, 1, 1024, 64, 4, 16},
	} {
		p := ForBatches(c.b, c.h, c.kvh, c.l, c.s, c.e, c.e, c.size)
		if p.B != c.b || p.Splits != c.splits || p.Chunk%ChunkAlign != 0 || p.Splits != ceilDiv(c.s, p.Chunk) {
			t.Errorf("%+v: plan %+v, want B %d, %d splits covering the cache", c, p, c.b, c.splits)
		}
		// worst is a split's worst time over the batches relative to the best at each.
		worst := func(n int) float64 {
			w := 0.0
			for bb := 1; bb <= c.b; bb++ {
				least := math.Inf(1)
				for _, m := range candidates(c.s, c.kvh) {
					least = min(least, p.cost(bb*c.kvh, m, c.size))
				}
				w = max(w, p.cost(bb*c.kvh, n, c.size)/least)
			}
			return w
		}
		least := math.Inf(1)
		for _, n := range candidates(c.s, c.kvh) {
			least = min(least, worst(n))
		}
		got := worst(p.Splits)
		bound, one := New(c.b, c.h, c.kvh, c.l, c.s, c.e, c.e, c.size), New(1, c.h, c.kvh, c.l, c.s, c.e, c.e, c.size)
		if got > Slack*least || got > worst(bound.Splits) || got > worst(one.Splits) {
			t.Errorf("%+v: %d splits are %.3f× the best at their worst batch; least %.3f, the bound's %d splits %.3f, batch 1's %d %.3f",
				c, p.Splits, got, least, bound.Splits, worst(bound.Splits), one.Splits, worst(one.Splits))
		}
		if c.b == 1 && (p.Splits != one.Splits || p.Chunk != one.Chunk) {
			t.Errorf("%+v: %+v, want New's %+v", c, p, one)
		}
	}
}
