package passes_test

import (
	"testing"

	"github.com/gcomp/gcomp/examples/gpt"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/passes"
)

// BenchmarkGPT2Small times the whole pipeline on the GPT-2 small configuration (12 layers,
// 124M parameters, 128 tokens).
func BenchmarkGPT2Small(b *testing.B) {
	g, err := frontend.Build("gpt2small", gpt.GPT2Small)
	if err != nil {
		b.Skip(err)
	}
	for b.Loop() {
		if _, err := passes.Run(g, passes.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
