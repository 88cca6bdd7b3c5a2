package lm

import (
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
)

// TestPrintDecode8Stats prints GPT-2 small's and TinyLlama's decode step at batch 8, static and
// packed in 8 slots (the packed build at its bound): kernels and the cost model's time
// (docs/perf.md, "Norm prologues at 8 rows").
func TestPrintDecode8Stats(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles four large programs")
	}
	for _, bc := range benchConfigs {
		static, err := ProgramGraph(bc.c, "decode", 8, 1)
		if err != nil {
			t.Fatal(err)
		}
		packed, err := PackedDecodeGraph(bc.c, 8)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []struct {
			name string
			g    *ir.Graph
		}{{"static batch 8", static}, {"8 packed slots", packed}} {
			res, err := compiler.Compile(p.g, compiler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			s := res.Passes.Stats
			t.Log(fmt.Sprintf("%s, %s: %d kernels, DRAM %d B, modeled %.1f µs as a CUDA graph, %.1f µs in kernels", bc.name, p.name, s.Kernels, s.DRAMBytes, s.ModeledGraphTimeUS, s.ModeledKernelTimeUS))
		}
	}
}
