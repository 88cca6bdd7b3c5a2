package splitkv

import (
	"math"
	"testing"
)

// TestForLengths: the chunk of a symbolic cache length, fixed at build time, makes a generation's
// steps (16 lengths evenly up to the bound, over each batch up to the bound when the batch is
// symbolic too) within Slack of the least total time over every aligned chunk (relative to each
// length's best split), never more than the bound's own split's nor the finest chunk's; the
// chunks cover the bound exactly, its B is the bound (the scratch for every batch); and
// OfAnyLength plans an op the same way.
func TestForLengths(t *testing.T) {
	for _, c := range []struct {
		b        int
		anyBatch bool
		h, kvh   int
		l, s     int
		e, size  int
		chunk    int
	}{
		{1, false, 12, 12, 1, 1024, 64, 4, 32}, // GPT-2 small: the bound alone would take 64
		{1, false, 32, 32, 1, 2048, 64, 2, 96}, // 32 heads: the bound alone would take 256
		{1, false, 32, 4, 1, 2048, 64, 2, 32},  // TinyLlama
		{8, false, 12, 12, 1, 1024, 64, 4, 160},
		{4, true, 12, 12, 1, 1024, 64, 4, 32},
		{1, false, 4, 4, 1, 1, 64, 4, 32},
		{2, true, 8, 2, 2, 300, 32, 2, 32},
	} {
		p := ForLengths(c.b, c.anyBatch, c.h, c.kvh, c.l, c.s, c.e, c.e, c.size)
		if p.B != c.b || p.S != c.s || p.Chunk != c.chunk || p.Splits != ceilDiv(c.s, p.Chunk) {
			t.Errorf("%+v: plan %+v, want B %d, chunks of %d covering the cache", c, p, c.b, c.chunk)
		}
		batches := []int{c.b}
		if c.anyBatch {
			batches = nil
			for bb := 1; bb <= c.b; bb++ {
				batches = append(batches, bb)
			}
		}
		// total is a chunk's time summed over the lengths relative to their best, at its worst batch.
		total := func(chunk int) float64 {
			w := 0.0
			for _, bb := range batches {
				sum, best := 0.0, 0.0
				for i := 1; i <= 16; i++ {
					tl := ceilDiv(c.s*i, 16)
					least := math.Inf(1)
					for _, n := range candidates(tl, bb*c.kvh) {
						least = min(least, p.costAt(bb*c.kvh, n, tl, c.size))
					}
					sum += p.costAt(bb*c.kvh, ceilDiv(tl, chunk), tl, c.size)
					best += least
				}
				w = max(w, sum/best)
			}
			return w
		}
		least := math.Inf(1)
		for chunk := ChunkAlign; chunk <= roundUp(c.s, ChunkAlign); chunk += ChunkAlign {
			least = min(least, total(chunk))
		}
		got := total(p.Chunk)
		bound := New(c.b, c.h, c.kvh, c.l, c.s, c.e, c.e, c.size)
		if got > Slack*least || got > total(bound.Chunk) || got > total(ChunkAlign)*Slack {
			t.Errorf("%+v: chunks of %d total %.3f× the best; least %.3f, the bound's %d: %.3f, the finest: %.3f",
				c, p.Chunk, got, least, bound.Chunk, total(bound.Chunk), total(ChunkAlign))
		}
		if q, ok := OfAnyLength(attention(t, c.b, c.h, c.kvh, c.l, c.s), c.anyBatch); c.e == 64 && c.size == 2 && (!ok || q != p) {
			t.Errorf("%+v: OfAnyLength %+v (%v), want %+v", c, q, ok, p)
		}
	}
}
