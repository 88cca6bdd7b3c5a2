package passes_test

import (
	"fmt"
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

// TestTargets prints the targets for every example as a Markdown table (run with -v;
// docs/perf.md records the result). It fails only if a pipeline run fails.
func TestTargets(t *testing.T) {
	models := append(exampleModels, struct {
		name  string
		model func(*frontend.Builder)
	}{"gpt2small", gpt.GPT2Small})
	if testing.Short() {
		models = exampleModels
	}
	out := "\n| model | kernels | eager | dram_bytes | ideal | ratio (≤ 1.10) | eager_dram_bytes | arena_bytes | lower_bound | ratio (≤ 1.02) | naive_bytes | modeled µs |\n" +
		"| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |\n"
	for _, ex := range models {
		_, res := compileExample(t, ex.name, ex.model)
		s := res.Stats
		ratio := func(a, b int64) string {
			if b == 0 {
				return "–"
			}
			return fmt.Sprintf("%.3f", float64(a)/float64(b))
		}
		out += fmt.Sprintf("| %s | %d | %d | %d | %d | %s | %d | %d | %d | %s | %d | %.2f |\n", ex.name, s.Kernels, s.EagerKernels,
			s.DRAMBytes, s.IdealDRAMBytes, ratio(s.DRAMBytes, s.IdealDRAMBytes), s.EagerDRAMBytes,
			s.ArenaBytes, s.LowerBoundBytes, ratio(s.ArenaBytes, s.LowerBoundBytes), s.NaiveBytes, s.ModeledTimeUS)
	}
	t.Log(out)
}
