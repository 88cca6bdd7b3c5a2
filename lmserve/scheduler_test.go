package lmserve

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gcomp/gcomp/internal/lmtest"
	"github.com/gcomp/gcomp/lm"
)

// testFolder loads reference case name (lm/testdata/reference.json) from a folder written in a
// temporary directory.
func testFolder(t testing.TB, name string) *lm.Folder {
	t.Helper()
	r, err := lmtest.ReadReference("../lm/testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	for i := range r.Cases {
		if c := &r.Cases[i]; c.Name == name {
			dir := t.TempDir()
			if err := lmtest.WriteFolder(dir, c, 1); err != nil {
				t.Fatal(err)
			}
			f, err := lm.LoadFolder(dir, 0)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("no reference case %s", name)
	return nil
}

// alone is what greedy decoding gives one sequence on an engine of its own: prefill, then decode.
func alone(t *testing.T, m *lm.Model, dev string, prompts [][]int, maxTokens []int) [][]int {
	e, err := m.Open(lm.EngineOptions{Device: dev, NoSimChecks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	out := make([][]int, len(prompts))
	for i, p := range prompts {
		for tok, err := range e.Generate(context.Background(), p, lm.GenerateOptions{MaxNewTokens: maxTokens[i]}) {
			if err != nil {
				t.Fatal(err)
			}
			out[i] = append(out[i], tok.ID)
		}
	}
	return out
}

// collect reads a sequence's events: its tokens and its finish reason. first is closed at the
// first event.
func collect(q *Sequence, first chan<- struct{}) (ids []int, finish string, err error) {
	for ev := range q.Events {
		if first != nil {
			close(first)
			first = nil
		}
		if ev.HasToken {
			ids = append(ids, ev.ID)
		}
		if ev.Finish != "" {
			finish, err = ev.Finish, ev.Err
		}
	}
	return ids, finish, err
}

// The main check: 8 requests of different prompt lengths on 3 slots, each joining at its
// own step (the next one is submitted once the previous has its first token, and some wait in the
// queue) and leaving at its own max_tokens, get token for token what greedy decoding gives each
// one alone.
// devices are the devices the scheduler's tests run on: ref and sim, or ref alone under the race
// detector with -short (the scheduler's concurrency is the same on both; the simulator's own
// races are checked in package sim, and at -race speed a sim decode takes minutes).
func devices() []string {
	if raceEnabled && testing.Short() {
		return []string{"ref"}
	}
	return []string{"ref", "sim"}
}

func TestBatchedEqualsAlone(t *testing.T) {
	f := testFolder(t, "llama")
	m := f.Model
	var prompts [][]int
	var maxTokens []int
	for i := range 8 {
		p := make([]int, 1+(i*5)%8)
		for j := range p {
			p[j] = (7 + 31*i + 13*j) % m.Vocab
		}
		prompts = append(prompts, p)
		maxTokens = append(maxTokens, 3+(i*7)%9)
	}
	for _, dev := range devices() {
		t.Run(dev, func(t *testing.T) {
			want := alone(t, m, dev, prompts, maxTokens)
			e, err := m.Open(lm.EngineOptions{Device: dev, Batch: 3, NoSimChecks: true})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			s, err := New(e, Options{MaxSeq: m.MaxSeq()})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got := make([][]int, len(prompts))
			finish := make([]string, len(prompts))
			var wg sync.WaitGroup
			for i, p := range prompts {
				q, err := s.Submit(context.Background(), Request{Prompt: p, MaxTokens: maxTokens[i]})
				if err != nil {
					t.Fatal(err)
				}
				first := make(chan struct{})
				wg.Add(1)
				go func() {
					defer wg.Done()
					got[i], finish[i], _ = collect(q, first)
				}()
				<-first
			}
			wg.Wait()
			for i := range prompts {
				if !slices.Equal(got[i], want[i]) || finish[i] != FinishLength {
					t.Errorf("request %d (prompt of %d): %v (%s), alone %v", i, len(prompts[i]), got[i], finish[i], want[i])
				}
			}
			if st := s.Metrics().Snapshot(); st.Tokens != int64(sum(maxTokens)) || st.TTFTCount != 8 {
				t.Errorf("metrics: %d tokens, %d first tokens; want %d, 8", st.Tokens, st.TTFTCount, sum(maxTokens))
			}
		})
	}
}

func sum(v []int) (n int) {
	for _, x := range v {
		n += x
	}
	return n
}

// A cancelled sequence frees its slot at the next step: with one slot, a second request waits
// until the first is cancelled, then runs; a stop id ends a sequence with "stop".
func TestCancelFreesSlot(t *testing.T) {
	f := testFolder(t, "llama")
	e, err := f.Model.Open(lm.EngineOptions{Device: "ref"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s, err := New(e, Options{MaxSeq: f.Model.MaxSeq()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	q1, err := s.Submit(ctx, Request{Prompt: []int{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	ev := <-q1.Events // running
	q2, err := s.Submit(context.Background(), Request{Prompt: []int{4}, MaxTokens: 4, StopIDs: []int{ev.ID}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if st := s.Metrics().Snapshot(); st.Queued != 1 || st.Running != 1 {
		t.Errorf("with the slot taken: %d queued, %d running; want 1, 1", st.Queued, st.Running)
	}
	cancel()
	if _, fin, _ := collect(q1, nil); fin != FinishCancelled {
		t.Errorf("the cancelled sequence ended with %q", fin)
	}
	ids, fin, err := collect(q2, nil)
	if err != nil || len(ids) == 0 {
		t.Fatalf("the waiting request: %v, %v", ids, err)
	}
	if wantFin := map[bool]string{true: FinishStop, false: FinishLength}[ids[len(ids)-1] == ev.ID]; fin != wantFin {
		t.Errorf("the waiting request ended with %q after %v; want %q", fin, ids, wantFin)
	}
}

// fakeStepper returns the logits f gives each step, or err.
type fakeStepper struct {
	batch int
	f     func(tokens, pos []int) ([][]float32, error)
}

func (s fakeStepper) Batch() int { return s.batch }
func (s fakeStepper) Decode(_ context.Context, tokens, pos []int) ([][]float32, error) {
	return s.f(tokens, pos)
}

// An engine's failure and logits nothing can be drawn from end the sequence with FinishError and
// its reason; neither counts as a generated token, and the scheduler goes on serving.
func TestSchedulerFailures(t *testing.T) {
	nan := float32(math.NaN())
	for _, c := range []struct {
		name string
		f    func(tokens, pos []int) ([][]float32, error)
		want string
	}{
		{"engine error", func([]int, []int) ([][]float32, error) { return nil, errors.New("device lost") }, "device lost"},
		{"NaN logits", func(tokens, _ []int) ([][]float32, error) { return [][]float32{{nan, nan}}, nil }, "NaN"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := New(fakeStepper{1, c.f}, Options{MaxSeq: 8})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for range 2 {
				q, err := s.Submit(context.Background(), Request{Prompt: []int{1, 0}})
				if err != nil {
					t.Fatal(err)
				}
				ids, finish, err := collect(q, nil)
				if len(ids) != 0 || finish != FinishError || err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%v, %q, %v; want no tokens, %q and an error with %q", ids, finish, err, FinishError, c.want)
				}
			}
			if st := s.Metrics().Snapshot(); st.Tokens != 0 || st.TTFTCount != 0 {
				t.Errorf("metrics count %d tokens, %d first tokens", st.Tokens, st.TTFTCount)
			}
		})
	}
}

// A sequence's stream ends after the running gauge has dropped it (a regression: the gauge was
// recounted only at the next step, so /metrics read right after a response still counted it).
// The first decode step waits until both requests are submitted, then takes the scheduler's lock
// before returning, so the loop cannot reach its next step until the test has read the metrics.
func TestRunningDropsBeforeStreamEnds(t *testing.T) {
	var s *Scheduler
	submitted := make(chan struct{})
	steps, firstStep := 0, 0 // decode steps; sequences in the first
	stepper := fakeStepper{2, func(tokens, _ []int) ([][]float32, error) {
		if steps++; steps == 1 {
			<-submitted
			for _, tok := range tokens {
				if tok == 1 { // both prompts are [1]; a free slot decodes token 0
					firstStep++
				}
			}
			s.mu.Lock() // released by the test
		}
		return [][]float32{{0, 1}, {0, 1}}, nil
	}}
	s, err := New(stepper, Options{MaxSeq: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	short, err := s.Submit(context.Background(), Request{Prompt: []int{1}, MaxTokens: 1})
	if err != nil {
		t.Fatal(err)
	}
	long, err := s.Submit(context.Background(), Request{Prompt: []int{1}, MaxTokens: 3})
	if err != nil {
		t.Fatal(err)
	}
	close(submitted)
	// The short request runs in the first step (it came first) and ends there.
	if _, fin, _ := collect(short, nil); fin != FinishLength {
		t.Fatalf("the short request ended with %q", fin)
	}
	running := s.Metrics().Snapshot().Running
	s.mu.Unlock()
	if running != int64(firstStep-1) {
		t.Errorf("after the short request's stream ended: %d running, want %d", running, firstStep-1)
	}
	if ids, fin, _ := collect(long, nil); len(ids) != 3 || fin != FinishLength {
		t.Errorf("the long request: %v, %q", ids, fin)
	}
}
