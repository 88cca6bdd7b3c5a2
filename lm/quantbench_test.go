package lm

import (
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/passes"
)

// TestPrintQuantizedDecodeStats prints, for the tiny test Llama and TinyLlama-1.1B's shape, each
// storage format's weight bytes on the device, bytes per parameter and the decode step's modeled
// time on one H100 (go test -v -run PrintQuantizedDecodeStats ./lm; docs/perf.md). It checks that
// each quantized format holds fewer bytes than f32, models a faster step and dequantizes nothing
// at bind time.
func TestPrintQuantizedDecodeStats(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a 1B model five times")
	}
	tiny := Config{Arch: "llama", Vocab: 320, Hidden: 64, Intermediate: 96, Layers: 2, Heads: 4, KVHeads: 2, MaxSeq: 64, NormEps: 1e-5, RopeTheta: 10000}
	models := []struct {
		name string
		c    Config
	}{{"tiny-llama", tiny}, benchConfigs[1]}
	formats := []struct {
		name string
		q    QuantConfig
	}{{"f32", QuantConfig{}}, {"int8/channel", QuantConfig{8, -1}}, {"int8/g128", QuantConfig{8, 128}}, {"int4/g128", QuantConfig{4, 128}}, {"int4/g32", QuantConfig{4, 32}}}
	for _, m := range models {
		var f32US float64
		var f32Bytes int64
		for i, f := range formats {
			c := m.c
			c.Quant = f.q
			g, err := ProgramGraph(c, "decode", 1, 1)
			if err != nil {
				t.Fatal(err)
			}
			bytes, params := passes.ParamStats(g)
			res, err := compiler.Compile(g, compiler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			s := res.Passes.Stats
			if i == 0 {
				f32US, f32Bytes = s.ModeledGraphTimeUS, bytes
			} else if s.ModeledGraphTimeUS >= f32US || bytes >= f32Bytes || s.BindKernels != 0 {
				t.Errorf("%s %s: modeled %.1f µs (f32 %.1f), %d B of weights (f32 %d), %d bind-time kernels", m.name, f.name, s.ModeledGraphTimeUS, f32US, bytes, f32Bytes, s.BindKernels)
			}
			t.Log(fmt.Sprintf("%s %-12s weights %10d B, %d params, %.3f B/param; %d kernels, DRAM %d B, modeled %.1f µs as a CUDA graph (%.0f tokens/s), weights and cache alone %.1f µs",
				m.name, f.name, bytes, params, float64(bytes)/float64(params), s.Kernels, s.DRAMBytes, s.ModeledGraphTimeUS, 1e6/s.ModeledGraphTimeUS, float64(s.IdealDRAMBytes)/3.35e6))
		}
	}
}
