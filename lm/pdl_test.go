package lm

import (
	"context"
	"testing"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/compiler"
)

// TestDecodeDependentLaunchSim: the reference's GPT-2 (not with -short) and Llama compiled for sm_90 mark every
// launch of their decode step for programmatic dependent launch, and the simulator, with all its
// checks (the dependent-launch check among them: no kernel reads before its griddepcontrol.wait
// what the kernels still in flight wrote), runs the prefill and decode steps to the reference's
// logits and greedy tokens.
func TestDecodeDependentLaunchSim(t *testing.T) {
	r := reference(t)
	steps := 3
	for i := range r.Cases {
		c := &r.Cases[i]
		if c.Name != "gpt2" && c.Name != "llama" || c.Name == "gpt2" && testing.Short() { // GPT-2's head: ~20 s
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			m := testModel(t, c)
			e, err := m.Open(EngineOptions{Device: "sim", Compiler: compiler.Options{Target: ptx.Target{SM: 90}}})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			plan := e.decode.prog.Plan()
			for _, k := range plan.Kernels {
				if !k.PDL {
					t.Errorf("decode kernel %s is not a programmatic dependent launch", k.Name)
				}
			}
			ctx := context.Background()
			logits, err := e.Prefill(ctx, [][]int{c.Prompt})
			if err != nil {
				t.Fatal(err)
			}
			for k := range steps {
				s := c.Steps[k]
				if d := relErr(logits[0], s, c.ProbeIDs); d > 1e-4 {
					t.Fatalf("step %d: logits differ from the reference by %.3g (normwise)", k, d)
				}
				if got := argmax(logits[0]); got != s.Argmax {
					t.Fatalf("step %d: greedy token %d, the reference's %d", k, got, s.Argmax)
				}
				if k+1 == steps {
					break
				}
				if logits, err = e.Decode(ctx, []int{s.Argmax}, []int{len(c.Prompt) + k}); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("%d kernels per decode step, all PDL", len(plan.Kernels))
		})
	}
}

// TestPrintDecodePDL prints the decode step's modeled time at sm_90 for the benchmark models (go
// test -v -run PrintDecodePDL ./lm): the default model, which charges every launch in full as at
// sm_80, and the bound if each programmatic dependent launch hid its whole graph launch (an
// assumption: cost.go in package passes), each beside the time to read the weights and the cache
// once. It checks that sm_90 leaves the default model as it is at sm_80.
func TestPrintDecodePDL(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles two large models")
	}
	for _, bc := range benchConfigs {
		g, err := ProgramGraph(bc.c, "decode", 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		var bytes int
		for _, v := range append(g.Inputs(), g.Params()...) {
			bytes += v.Type.Bytes()
		}
		readOnce := float64(bytes) / 3.35e6
		var def80 float64
		for _, sm := range []int{80, 90} {
			res, err := compiler.Compile(g, compiler.Options{Target: ptx.Target{SM: sm}})
			if err != nil {
				t.Fatal(err)
			}
			s := res.Passes.Stats
			pdl := 0
			for _, k := range res.Artifact.Plan.Kernels {
				if k.PDL {
					pdl++
				}
			}
			if sm == 80 {
				def80 = s.ModeledGraphTimeUS
				if pdl != 0 {
					t.Errorf("%s at sm_80: %d PDL launches", bc.name, pdl)
				}
				continue
			}
			if s.ModeledGraphTimeUS != def80 {
				t.Errorf("%s: sm_90 models %.3f µs, sm_80 %.3f µs", bc.name, s.ModeledGraphTimeUS, def80)
			}
			if pdl != s.Kernels || s.PDLKernels != s.Kernels-1 {
				t.Errorf("%s: %d PDL launches, %d overlapping, of %d kernels", bc.name, pdl, s.PDLKernels, s.Kernels)
			}
			t.Logf("%s at sm_90: %d kernels (%d PDL), %.1f µs in kernels; modeled %.1f µs as a CUDA graph (%.3f× the %.1f µs read-once); if PDL hid every dependent launch: %.1f µs (%.3f×)",
				bc.name, s.Kernels, pdl, s.ModeledKernelTimeUS, s.ModeledGraphTimeUS, s.ModeledGraphTimeUS/readOnce, readOnce,
				s.ModeledGraphPDLBoundUS, s.ModeledGraphPDLBoundUS/readOnce)
		}
	}
}
