package lmserve

import (
	"flag"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/lm"
)

var modeled = flag.Bool("modeled", false, "TestModeledDecode: also GPT-2 small (124M), slower to compile")

// What continuous batching buys on a GPU, where one decode step reads every weight: the cost
// model's H100 time of one decode step (a CUDA graph) at batch 1, 8 and 16, and the tokens/s it
// implies. A step of 8 sequences costs far less than 8 steps of one. docs/perf.md's table comes
// from go test ./lmserve -run TestModeledDecode -v -modeled.
func TestModeledDecode(t *testing.T) {
	configs := []struct {
		name string
		c    lm.Config
	}{
		{"tiny llama (test model)", lm.Config{Arch: "llama", Vocab: 320, Hidden: 64, Intermediate: 96, Layers: 2, Heads: 4, KVHeads: 2, MaxSeq: 64, NormEps: 1e-5, RopeTheta: 10000}},
	}
	if *modeled {
		configs = append(configs, struct {
			name string
			c    lm.Config
		}{"GPT-2 small (124M)", lm.Config{Arch: "gpt2", Vocab: 50257, Hidden: 768, Intermediate: 3072, Layers: 12, Heads: 12, MaxSeq: 1024, NormEps: 1e-5, TiedEmbeddings: true}})
	}
	t.Logf("| model | batch | modeled step (µs) | modeled tokens/s | DRAM bytes per step |")
	for _, c := range configs {
		var one float64
		for _, batch := range []int{1, 8, 16} {
			g, err := lm.ProgramGraph(c.c, "decode", batch, 0)
			if err != nil {
				t.Fatal(err)
			}
			res, err := compiler.Compile(g, compiler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			st := res.Passes.Stats
			us := st.ModeledGraphTimeUS
			tps := float64(batch) / us * 1e6
			t.Logf("| %s | %d | %.1f | %.0f | %d |", c.name, batch, us, tps, st.DRAMBytes)
			if batch == 1 {
				one = tps
			} else if tps < 2*one {
				t.Errorf("%s: batch %d models %.0f tokens/s, under twice batch 1's %.0f", c.name, batch, tps, one)
			}
		}
	}
}
