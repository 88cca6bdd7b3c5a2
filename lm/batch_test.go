package lm

import (
	"context"
	"testing"
)

// Sequences decoded together, each at its own position, get the logits they get alone: here
// sequence 1 waits (re-decoding its last token at the same position, which rewrites the same
// cache entry) while sequence 0 runs ahead, then both advance.
func TestBatchedDecodeEqualsAlone(t *testing.T) {
	r := reference(t)
	c := &r.Cases[1] // llama
	m := testModel(t, c)
	prompts := [][]int{c.Prompt, {1, 300, 12, 12, 5, 77, 2}}
	const steps = 6
	ctx := context.Background()
	for _, dev := range []string{"ref", "sim"} {
		t.Run(dev, func(t *testing.T) {
			// Alone: each prompt's greedy tokens and the logits of every step.
			alone := make([][][]float32, 2)
			tokens := make([][]int, 2)
			single, err := m.Open(EngineOptions{Device: dev, NoSimChecks: true})
			if err != nil {
				t.Fatal(err)
			}
			defer single.Close()
			for s, p := range prompts {
				l, err := single.Prefill(ctx, [][]int{p})
				for k := 0; err == nil && k < steps; k++ {
					alone[s] = append(alone[s], l[0])
					id := argmax(l[0])
					tokens[s] = append(tokens[s], id)
					l, err = single.Decode(ctx, []int{id}, []int{len(p) + k})
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			e, err := m.Open(EngineOptions{Device: dev, Batch: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			l, err := e.Prefill(ctx, prompts)
			if err != nil {
				t.Fatal(err)
			}
			done := []int{0, 0} // tokens each sequence has been given
			check := func(s int, got []float32) {
				want := alone[s][done[s]]
				for i := range want {
					if d := got[i] - want[i]; d > 1e-5 || d < -1e-5 {
						t.Fatalf("sequence %d, step %d: logit %d is %v, alone %v", s, done[s], i, got[i], want[i])
					}
				}
			}
			check(0, l[0])
			check(1, l[1])
			for done[0] < steps-1 || done[1] < steps-1 {
				wait1 := done[0] < 3 && done[1] == 0 // sequence 1 holds at its first token
				toks, pos := make([]int, 2), make([]int, 2)
				for s := range 2 {
					if done[s] == steps-1 || s == 1 && wait1 {
						// Repeat the last decode (or, before any, hold at the prompt's end by
						// decoding the first token there; its logits are not checked).
						toks[s], pos[s] = tokens[s][max(done[s]-1, 0)], len(prompts[s])+max(done[s]-1, 0)
						continue
					}
					toks[s], pos[s] = tokens[s][done[s]], len(prompts[s])+done[s]
				}
				l, err = e.Decode(ctx, toks, pos)
				if err != nil {
					t.Fatal(err)
				}
				for s := range 2 {
					if done[s] == steps-1 || s == 1 && wait1 {
						continue
					}
					done[s]++
					check(s, l[s])
				}
			}
		})
	}
}
