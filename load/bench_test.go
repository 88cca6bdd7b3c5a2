package load

import (
	"os"
	"testing"
)

// BenchmarkGPT2Small measures what `gcomp build examples/gpt/model.go --entry GPT2Small --emit ir`
// spends: type-checking and interpreting the model file, building and verifying the graph, and
// printing it.
func BenchmarkGPT2Small(b *testing.B) {
	src, err := os.ReadFile("../examples/gpt/model.go")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		g, err := Source("model.go", src, Options{Entry: "GPT2Small"})
		if err != nil {
			b.Fatal(err)
		}
		_ = g.String()
	}
}
