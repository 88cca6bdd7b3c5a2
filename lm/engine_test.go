package lm

import (
	"context"
	"math"
	"testing"

	"github.com/gcomp/gcomp/internal/lmtest"
)

// testModel is the reference case's model, loaded from a checkpoint folder of its hash weights
// in the case's dtype (computed in f32).
func testModel(t testing.TB, c *lmtest.Case) *Model {
	t.Helper()
	dir := t.TempDir()
	if err := lmtest.WriteFolder(dir, c, 1); err != nil {
		t.Fatal(err)
	}
	m, _, err := LoadCheckpoint(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func reference(t testing.TB) *lmtest.Reference {
	r, err := lmtest.ReadReference("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// relErr is ‖got − want‖ / ‖want‖ over the reference's logits (all of them, or its probes).
func relErr(got []float32, s lmtest.Step, probe []int) float64 {
	var num, den float64
	add := func(g float32, w float64) { num += (float64(g) - w) * (float64(g) - w); den += w * w }
	if s.Logits != nil {
		for i, w := range s.Logits {
			add(got[i], w)
		}
	} else {
		for k, id := range probe {
			add(got[id], s.Probe[k])
		}
		for k, id := range s.TopIDs {
			add(got[id], s.Top[k])
		}
	}
	return math.Sqrt(num / den)
}

func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// Prefill and every decode step of the KV-cache programs give the logits of PyTorch's model
// recomputing the whole sequence, and greedy decoding picks the same tokens, on ref and on the
// simulator.
func TestEngineMatchesReference(t *testing.T) {
	r := reference(t)
	for _, dev := range []string{"ref", "sim"} {
		for i := range r.Cases {
			c := &r.Cases[i]
			steps := len(c.Steps)
			// The simulator runs every step of one model with all its checks, and 8 steps of
			// the others without (GPT-2's 50257-row head alone is ~3 M simulated multiply-adds
			// a step).
			checked := c.Name == "llama" && !testing.Short()
			if dev == "sim" && !checked {
				steps = min(steps, 8)
			}
			t.Run(dev+"/"+c.Name, func(t *testing.T) {
				m := testModel(t, c)
				e, err := m.Open(EngineOptions{Device: dev, NoSimChecks: !checked})
				if err != nil {
					t.Fatal(err)
				}
				defer e.Close()
				ctx := context.Background()
				logits, err := e.Prefill(ctx, [][]int{c.Prompt})
				if err != nil {
					t.Fatal(err)
				}
				worst := 0.0
				for k := range steps {
					s := c.Steps[k]
					d := relErr(logits[0], s, c.ProbeIDs)
					worst = max(worst, d)
					if d > 1e-4 {
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
				t.Logf("%d steps, largest normwise error %.3g", steps, worst)
			})
		}
	}
}
