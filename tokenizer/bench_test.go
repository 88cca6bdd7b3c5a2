package tokenizer

import (
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkEncode encodes a long text (the committed texts repeated to about 100 KB) with each
// tokenizer form, the byte-level ones with their word cache and without (every word merged);
// docs/perf.md records the numbers.
func BenchmarkEncode(b *testing.B) {
	text := strings.Repeat(strings.Join(texts(b), "\n"), 100)
	for _, c := range []struct {
		name, dir string
		nocache   bool
	}{
		{"gpt2", "gpt2", false},
		{"gpt2-nocache", "gpt2", true},
		{"llama2", "llama2", false},
		{"llama3", "llama3", false},
		{"llama3-nocache", "llama3", true},
		{"spm-bpe", filepath.Join("testdata", "spm", "bpe"), false},
		{"spm-unigram", filepath.Join("testdata", "spm", "unigram"), false},
	} {
		b.Run(c.name, func(b *testing.B) {
			dir := c.dir
			if !strings.HasPrefix(c.name, "spm") {
				dir = cacheDir(b, c.dir)
			}
			tok := loadTB(b, dir)
			if c.nocache {
				tok.m.cache = nil
			}
			b.SetBytes(int64(len(text)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := tok.Encode(text); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLoad reads Llama 3's 128k-piece tokenizer.json.
func BenchmarkLoad(b *testing.B) {
	dir := cacheDir(b, "llama3")
	for i := 0; i < b.N; i++ {
		loadTB(b, dir)
	}
}
