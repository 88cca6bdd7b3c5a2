package lmserve

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/gcomp/gcomp/lm"
)

// Over a packed engine the running sequences fill a prefix of the slots: requests of different
// lengths join and finish out of order, one is cancelled midway, the last running sequence moves
// into each freed slot, and every request still gets token for token what it gets alone (a
// scheduler over an engine of one slot), greedy and seeded sampling alike. The moves are counted
// with the KV bytes they copied: every layer's keys and values of one slot.
func TestPackedEqualsAlone(t *testing.T) {
	f := testFolder(t, "llama")
	m := f.Model
	maxTokens := []int{2, 9, 3, 8, 2, 7, 3}
	const cancelled = 3 // cancelled after its second token
	var reqs []Request
	for i, n := range maxTokens {
		p := make([]int, 1+(i*3)%4)
		for j := range p {
			p[j] = (5 + 37*i + 11*j) % m.Vocab
		}
		r := Request{Prompt: p, MaxTokens: n}
		if i%2 == 1 {
			r.Sampling = lm.Sampling{Temperature: 0.9, TopK: 20, Seed: uint64(100 + i)}
		}
		reqs = append(reqs, r)
	}
	// gate: submit each once the previous runs, and cancel one midway; else one at a time.
	run := func(t *testing.T, e *lm.Engine, gate bool) ([][]int, []string, Snapshot) {
		s, err := New(e, Options{MaxSeq: m.MaxSeq()})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		got := make([][]int, len(reqs))
		finish := make([]string, len(reqs))
		var wg sync.WaitGroup
		for i, r := range reqs {
			q, err := s.Submit(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			first := make(chan struct{})
			wg.Add(1)
			go func(first chan struct{}) {
				defer wg.Done()
				for ev := range q.Events {
					if first != nil {
						close(first)
						first = nil
					}
					if ev.HasToken {
						got[i] = append(got[i], ev.ID)
						if gate && i == cancelled && len(got[i]) == 2 {
							q.Cancel()
						}
					}
					if ev.Finish != "" {
						finish[i] = ev.Finish
					}
				}
			}(first)
			if gate {
				<-first // the next joins once this one runs
			} else {
				wg.Wait() // alone: one request at a time
			}
		}
		wg.Wait()
		return got, finish, s.Metrics().Snapshot()
	}
	for _, dev := range devices() {
		t.Run(dev, func(t *testing.T) {
			one, err := m.Open(lm.EngineOptions{Device: dev, NoSimChecks: true})
			if err != nil {
				t.Fatal(err)
			}
			defer one.Close()
			want, _, _ := run(t, one, false)
			e, err := m.Open(lm.EngineOptions{Device: dev, Batch: 3, Packed: true, NoSimChecks: true})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			got, finish, st := run(t, e, true)
			for i := range reqs {
				switch {
				case i == cancelled:
					if finish[i] != FinishCancelled || len(got[i]) < 2 || !slices.Equal(got[i], want[i][:len(got[i])]) {
						t.Errorf("cancelled request %d: %v (%s), alone %v", i, got[i], finish[i], want[i])
					}
				case !slices.Equal(got[i], want[i]) || finish[i] != FinishLength:
					t.Errorf("request %d (prompt of %d, sampling %+v): %v (%s), alone %v", i, len(reqs[i].Prompt), reqs[i].Sampling, got[i], finish[i], want[i])
				}
			}
			kvHeads := m.KVHeads
			if kvHeads == 0 {
				kvHeads = m.Heads
			}
			slotBytes := int64(2 * m.Layers * kvHeads * m.MaxSeq() * m.HeadDim() * 4)
			if st.Moves == 0 || st.MovedBytes != st.Moves*slotBytes {
				t.Errorf("%d moves of %d bytes: want some, of %d bytes each", st.Moves, st.MovedBytes, slotBytes)
			}
			t.Logf("%d slot moves, %d bytes", st.Moves, st.MovedBytes)
		})
	}
}
