package passes

import (
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/codegen/splitkv"
	"github.com/gcomp/gcomp/ir"
)

// TestSplitKVCost: an attention kernel with a few query rows is costed as codegen launches it,
// the split-KV plan's blocks plus its partials' traffic. Issue 26's decode step (batch 1, 32
// heads, a 4096-key f16 cache, d = 128) fills the 132 SMs and is modeled within 1.3× of reading
// the cache once; longer queries keep a prefill template (in f16, tensor cores: a block per 64
// rows of a head).
func TestSplitKVCost(t *testing.T) {
	cases := []struct {
		h, kvh, l, s, e int
		blocks          int
		partialsF32     int64
		maxCacheRatio   float64 // modeled time / (K and V bytes / bandwidth); 0: unchecked
		fill            bool    // at least a block per SM
	}{
		{32, 32, 1, 4096, 128, 256, 256 * 130, 1.3, true},   // issue 26's decode step
		{32, 4, 1, 2048, 64, 128, 128 * 8 * 66, 1.5, false}, // TinyLlama: 8 rows' partials per 64-key chunk
		{12, 12, 1, 1024, 64, 192, 192 * 66, 1.3, true},     // GPT-2 small
		{32, 32, 64, 4096, 128, 32, 0, 0, false},            // a 64-token f16 prefill: the tensor-core template, a block per 64 rows of a head
	}
	for _, c := range cases {
		src := fmt.Sprintf("graph g {\n  input %%q : f16[1,%[1]d,%[3]d,%[5]d]\n  input %%k : f16[1,%[2]d,%[4]d,%[5]d]\n  input %%v : f16[1,%[2]d,%[4]d,%[5]d]\n  input %%pos : i32[1]\n"+
			"  %%0 = attention(%%q, %%k, %%v, %%pos) {scale=0.125, mask=\"position\"} : f16[1,%[1]d,%[3]d,%[5]d]\n  output o = %%0\n}\n", c.h, c.kvh, c.l, c.s, c.e)
		g, err := ir.Parse("g.gir", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		out := &Buffer{Name: "o", Kind: OutputBuffer, Type: g.Outputs[0].Value.Type}
		k := &Kernel{Name: "k", Kind: Attention, Body: g, Space: out.Type.Shape, Writes: []*Buffer{out}}
		ks := kernelCost(k, false)
		name := fmt.Sprintf("H%d KVH%d L%d S%d E%d", c.h, c.kvh, c.l, c.s, c.e)
		if ks.Blocks != c.blocks {
			t.Errorf("%s: %d blocks, want %d", name, ks.Blocks, c.blocks)
		}
		cache := int64(2 * 2 * c.kvh * c.s * c.e)
		wantRead := cache + int64(2*c.h*c.l*c.e) + 4 + 4*c.partialsF32
		wantWrite := int64(2*c.h*c.l*c.e) + 8*c.partialsF32
		if ks.ReadBytes != wantRead || ks.WriteBytes != wantWrite {
			t.Errorf("%s: read %d written %d bytes, want %d and %d", name, ks.ReadBytes, ks.WriteBytes, wantRead, wantWrite)
		}
		ratio := ks.ModeledTimeUS / (float64(cache) / hbmBytesPerSec * 1e6)
		t.Logf("%s: %d blocks, %.2f µs modeled, %.3f× the cache's bytes", name, ks.Blocks, ks.ModeledTimeUS, ratio)
		if c.fill && ks.Blocks < splitkv.SMs || c.maxCacheRatio > 0 && ratio > c.maxCacheRatio {
			t.Errorf("%s: %d blocks and %.3f× the cache's time, want ≥ %d blocks and ≤ %.1f×", name, ks.Blocks, ratio, splitkv.SMs, c.maxCacheRatio)
		}
	}
}
