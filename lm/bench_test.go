package lm

import (
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/compiler"
)

// Published shapes: GPT-2 small (124M, its 1024-token context) and TinyLlama-1.1B (Llama 2's
// layout with 4 KV heads, 2048 tokens).
var benchConfigs = []struct {
	name string
	c    Config
}{
	{"gpt2-small", Config{Arch: "gpt2", Vocab: 50257, Hidden: 768, Intermediate: 3072, Layers: 12, Heads: 12, MaxSeq: 1024, NormEps: 1e-5}},
	{"tinyllama-1.1b", Config{Arch: "llama", Vocab: 32000, Hidden: 2048, Intermediate: 5632, Layers: 22, Heads: 32, KVHeads: 4, MaxSeq: 2048,
		NormEps: 1e-5, RopeTheta: 10000}},
}

// BenchmarkBuildPrograms builds and compiles a model's decode program and a prefill program of
// 128 tokens (what gcomp generate compiles before the first token), and reports the decode step's
// modeled time on an H100 beside the cost model's ideal DRAM bytes (bytes-µs: every input and
// weight read once, every output written once — the whole cache again, though it is updated in
// place — and the intermediates contractions separate) and beside the time to read its weights
// and cache once (read-once-µs), both at 3.35 TB/s.
//
//	go test ./lm -run '^$' -bench BuildPrograms -benchtime 3x
func BenchmarkBuildPrograms(b *testing.B) {
	for _, bc := range benchConfigs {
		b.Run(bc.name, func(b *testing.B) {
			var decodeUS, idealUS, readOnceUS, kernels float64
			for range b.N {
				for _, prog := range []string{"decode", "prefill"} {
					g, err := ProgramGraph(bc.c, prog, 1, 128)
					if err != nil {
						b.Fatal(err)
					}
					res, err := compiler.Compile(g, compiler.Options{})
					if err != nil {
						b.Fatal(err)
					}
					if prog == "decode" {
						s := res.Passes.Stats
						decodeUS, kernels = s.ModeledGraphTimeUS, float64(s.Kernels)
						idealUS = float64(s.IdealDRAMBytes) / 3.35e6
						var bytes int
						for _, v := range append(g.Inputs(), g.Params()...) {
							bytes += v.Type.Bytes()
						}
						readOnceUS = float64(bytes) / 3.35e6
					}
				}
			}
			b.ReportMetric(decodeUS, "decode-µs/token")
			b.ReportMetric(idealUS, "bytes-µs/token")
			b.ReportMetric(decodeUS/idealUS, "ratio")
			b.ReportMetric(readOnceUS, "read-once-µs/token")
			b.ReportMetric(decodeUS/readOnceUS, "ratio-read-once")
			b.ReportMetric(kernels, "kernels")
		})
	}
}

// TestPrintDecodeStats prints the decode step's cost table for the benchmark models (go test -v
// -run PrintDecodeStats ./lm); it checks only that they compile.
func TestPrintDecodeStats(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles two large models")
	}
	for _, bc := range benchConfigs {
		g, err := ProgramGraph(bc.c, "decode", 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		res, err := compiler.Compile(g, compiler.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s := res.Passes.Stats
		t.Log(fmt.Sprintf("%s: %d kernels, DRAM %d B (ideal %d), modeled %.1f µs as a CUDA graph, %.1f µs in kernels", bc.name, s.Kernels, s.DRAMBytes, s.IdealDRAMBytes, s.ModeledGraphTimeUS, s.ModeledKernelTimeUS))
	}
}
