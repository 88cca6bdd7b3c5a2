package lm

import (
	"context"
	"testing"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/compiler"
)

// TestDecodeDependentLaunchSim: the reference's GPT-2 and Llama compiled for sm_90 mark every
// launch of their decode step for programmatic dependent launch, and the simulator, with all its
// checks (the dependent-launch check among them: no kernel reads before its griddepcontrol.wait
// what the kernels still in flight wrote), runs the prefill and decode steps to the reference's
// logits and greedy tokens.
func TestDecodeDependentLaunchSim(t *testing.T) {
	r := reference(t)
	steps := 3
	for i := range r.Cases {
		c := &r.Cases[i]
		if c.Name != "gpt2" && c.Name != "llama" {
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
