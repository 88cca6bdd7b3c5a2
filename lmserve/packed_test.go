package lmserve

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

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

// fakePacker is a packed Stepper of 3 slots whose first Decode waits for release; it records each
// step's rows and each move, and its moves fail with moveErr.
type fakePacker struct {
	release chan struct{}
	moveErr error
	mu      sync.Mutex
	rows    [][]int // each step's tokens
	moves   [][2]int
}

func (f *fakePacker) Batch() int   { return 3 }
func (f *fakePacker) Packed() bool { return true }
func (f *fakePacker) Decode(_ context.Context, tokens, _ []int) ([][]float32, error) {
	f.mu.Lock()
	first := len(f.rows) == 0
	f.rows = append(f.rows, slices.Clone(tokens))
	f.mu.Unlock()
	if first {
		<-f.release
	}
	out := make([][]float32, len(tokens))
	for i := range out {
		out[i] = []float32{0, 1, 0, 0} // greedy: token 1
	}
	return out, nil
}
func (f *fakePacker) MoveSlot(dst, src int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.moves = append(f.moves, [2]int{dst, src})
	return 100, f.moveErr
}

// The packed scheduler's bookkeeping: A (a prompt of 2, one token) runs alone for a step while B
// and C join; when A leaves slot 0, C moves from slot 2 into it and the next step decodes 2 rows,
// C's first. A move that fails ends the moved sequence with the error, and the one before it
// moves next.
func TestPackedScheduler(t *testing.T) {
	for _, fail := range []bool{false, true} {
		f := &fakePacker{release: make(chan struct{})}
		if fail {
			f.moveErr = errors.New("no copy")
		}
		s, err := New(f, Options{MaxSeq: 16})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := s.Submit(context.Background(), Request{Prompt: []int{2, 2}, MaxTokens: 1})
		for { // wait for A's first step
			f.mu.Lock()
			n := len(f.rows)
			f.mu.Unlock()
			if n > 0 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		b, _ := s.Submit(context.Background(), Request{Prompt: []int{3}, MaxTokens: 3})
		c, _ := s.Submit(context.Background(), Request{Prompt: []int{0}, MaxTokens: 3})
		close(f.release)
		_, finA, _ := collect(a, nil)
		_, finB, errB := collect(b, nil)
		_, finC, errC := collect(c, nil)
		s.Close()
		st := s.Metrics().Snapshot()
		f.mu.Lock()
		if finA != FinishLength {
			t.Errorf("fail %v: A ended %q", fail, finA)
		}
		if !fail {
			// Steps: [A], [A B C], [C B] (C moved to slot 0, at its first generated token), ...
			if len(f.rows) < 3 || len(f.rows[0]) != 1 || len(f.rows[1]) != 3 || !slices.Equal(f.rows[2], []int{1, 1}) ||
				!slices.Equal(f.moves, [][2]int{{0, 2}}) || finB != FinishLength || finC != FinishLength {
				t.Errorf("steps %v, moves %v, B %q, C %q", f.rows, f.moves, finB, finC)
			}
			if st.Moves != 1 || st.MovedBytes != 100 {
				t.Errorf("metrics: %d moves of %d bytes, want 1 of 100", st.Moves, st.MovedBytes)
			}
		} else {
			if finB != FinishError || finC != FinishError || errB == nil || errC == nil || !slices.Equal(f.moves, [][2]int{{0, 2}, {0, 1}}) || len(f.rows) != 2 {
				t.Errorf("failing moves: steps %v, moves %v, B %q %v, C %q %v", f.rows, f.moves, finB, errB, finC, errC)
			}
			if st.Moves != 0 || st.Running != 0 {
				t.Errorf("metrics after failed moves: %d moves, %d running", st.Moves, st.Running)
			}
		}
		f.mu.Unlock()
	}
}
