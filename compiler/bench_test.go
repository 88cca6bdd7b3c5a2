package compiler_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/examples/gpt"
	"github.com/gcomp/gcomp/frontend"
)

// BenchmarkCompileGPT2 times the whole compiler (passes, PTX, launch plan) on GPT-2 small (128
// tokens) and medium, large and XL (1024 tokens), and reports their kernels, distinct kernels
// (module entries) and PTX bytes (docs/perf.md):
//
//	go test ./compiler -run '^$' -bench CompileGPT2 -benchtime 3x -benchmem
func BenchmarkCompileGPT2(b *testing.B) {
	for _, m := range gpt.GPT2Sizes {
		b.Run(m.Name, func(b *testing.B) {
			g, err := frontend.Build(m.Name, m.Model)
			if err != nil {
				b.Fatal(err)
			}
			var res *compiler.Result
			for b.Loop() {
				if res, err = compiler.Compile(g, compiler.Options{}); err != nil {
					b.Fatal(err)
				}
			}
			ptx := string(res.Artifact.PTX)
			b.ReportMetric(float64(len(res.Artifact.Plan.Kernels)), "kernels")
			b.ReportMetric(float64(strings.Count(ptx, ".visible .entry ")), "entries")
			b.ReportMetric(float64(len(ptx)), "ptx-bytes")
		})
	}
}
