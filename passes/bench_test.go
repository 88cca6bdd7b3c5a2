package passes_test

import (
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/examples"
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

// targets pins each example's kernel count and the targets: arena_bytes ≤ 1.02 ×
// lower_bound_bytes and dram_bytes ≤ 1.10 × ideal_dram_bytes, and the same against the refined
// bounds (lower_bound_aligned_bytes, ideal_dram_reread_bytes).
var targets = map[string]struct {
	kernels int
	// waived names the targets the model knowingly misses, with the reason (docs/perf.md);
	// a waiver that is no longer needed fails the test, so none outlives its reason.
	waived map[string]string
}{
	"linreg": {kernels: 1},
	"mlp":    {kernels: 2},
	"cnn":    {kernels: 4},
	// rnn and lstm: one persistent kernel per chain of small kernels (docs/fusion.md).
	"rnn":         {kernels: 2},
	"lstm":        {kernels: 1},
	"transformer": {kernels: 7}, // attention in one kernel: the scores never reach memory
	"gpt":         {kernels: 16},
	"gpt2small":   {kernels: 86},
	"fashion_mlp": {kernels: 2},
	"fashion_cnn": {kernels: 4},
	// fashion_cnn's 4 with BatchNorm folded into the convolutions' epilogues; the two small
	// kernels computing rsqrt(running_var+eps) from parameters run when weights are bound.
	"fashion_bncnn": {kernels: 4},
	// The skip connections read a block's input twice: once by the block's first convolution
	// (or pooling), once by the residual add, the shortcut convolution or the decoder's concat
	// (docs/perf.md); ideal_dram_bytes counts every intermediate read once.
	// Kernel counts are per run: each BatchNorm's rsqrt(running_var+eps) runs when weights are
	// bound (6 of resnet's 14 kernels, 3 of mobilenet's 6, 10 of unet's 23).
	"resnet": {kernels: 8, waived: map[string]string{
		"dram": "residual connections read each block's input twice", "dram refined": "residual connections read each block's input twice"}},
	"mobilenet": {kernels: 3},
	// The persist pass charges launches and rates the persistent kernel that would join two
	// small BatchNorm stages slower than the kernels it would replace.
	// Each layer's split-KV attention kernel writes the step's key and value rows into its
	// caches itself, in place (appendkv: no update kernels), and one token's positions are pos
	// (fold: no kernel adds a one-element iota); the step's temps, a few hundred
	// bytes each, take 256-byte aligned places in the arena. In llama the value projection
	// joins the persistent kernel of q and k, a sibling reading the same normalized input.
	"gpt2":  {kernels: 13, waived: map[string]string{"arena": "the step's temps of a few hundred bytes are placed 256-byte aligned (the aligned bound is met)"}},
	"llama": {kernels: 15, waived: map[string]string{"arena": "the step's temps of a few hundred bytes are placed 256-byte aligned (the aligned bound is met)"}},
	"unet": {kernels: 13, waived: map[string]string{
		"dram": "skip connections read each encoder stage's output twice", "dram refined": "skip connections read each encoder stage's output twice"}},
}

// TestTargets checks the targets on every example (and GPT-2 small without -short) and
// logs them as the Markdown table docs/perf.md records (run with -v).
func TestTargets(t *testing.T) {
	// The custom-kernel examples are left out: their kernels are not gcomp's to fuse.
	models := examples.All()
	if !testing.Short() {
		models = append(models, examples.Example{Name: "gpt2small", Model: gpt.GPT2Small})
	}
	ratio := func(a, b int64) float64 {
		if b == 0 {
			return 1 // no temps (linreg): nothing to beat
		}
		return float64(a) / float64(b)
	}
	out := "\n| model | kernels | eager | dram_bytes | ideal_dram_bytes | ratio (≤ 1.10) | ideal_dram_reread_bytes | ratio | eager_dram_bytes | arena_bytes | lower_bound_bytes | ratio (≤ 1.02) | lower_bound_aligned_bytes | ratio | naive_bytes | modeled µs |\n" +
		"| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |\n"
	for _, ex := range models {
		_, res := compileExample(t, ex.Name, ex.Model)
		s, want := res.Stats, targets[ex.Name]
		dram, dramRefined := ratio(s.DRAMBytes, s.IdealDRAMBytes), ratio(s.DRAMBytes, s.IdealDRAMRereadBytes)
		arena, arenaAligned := ratio(s.ArenaBytes, s.LowerBoundBytes), ratio(s.ArenaBytes, s.AlignedLowerBoundBytes)
		if s.Kernels != want.kernels || s.Kernels >= s.EagerKernels {
			t.Errorf("%s: %d kernels (eager %d), want %d", ex.Name, s.Kernels, s.EagerKernels, want.kernels)
		}
		for _, c := range []struct {
			target string
			ratio  float64
			limit  float64
		}{{"dram", dram, 1.10}, {"dram refined", dramRefined, 1.10}, {"arena", arena, 1.02}, {"arena refined", arenaAligned, 1.02}} {
			why, waived := want.waived[c.target]
			switch {
			case c.ratio > c.limit && !waived:
				t.Errorf("%s: %s ratio %.3f, target ≤ %.2f", ex.Name, c.target, c.ratio, c.limit)
			case c.ratio <= c.limit && waived:
				t.Errorf("%s: %s ratio %.3f meets its target: remove the waiver (%s)", ex.Name, c.target, c.ratio, why)
			}
		}
		out += fmt.Sprintf("| %s | %d | %d | %d | %d | %.3f | %d | %.3f | %d | %d | %d | %.3f | %d | %.3f | %d | %.2f |\n",
			ex.Name, s.Kernels, s.EagerKernels, s.DRAMBytes, s.IdealDRAMBytes, dram, s.IdealDRAMRereadBytes, dramRefined,
			s.EagerDRAMBytes, s.ArenaBytes, s.LowerBoundBytes, arena, s.AlignedLowerBoundBytes, arenaAligned, s.NaiveBytes, s.ModeledTimeUS)
	}
	t.Log(out)
}
