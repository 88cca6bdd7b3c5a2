package lmserve

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gcomp/gcomp/lm"
)

// The load test's size: small by default so that it runs with the other tests; docs/perf.md's
// numbers come from go test ./lmserve -run TestLoad -v -load.requests 200 -load.clients 16.
var (
	loadRequests = flag.Int("load.requests", 16, "requests per load test run on ref (a quarter on sim)")
	loadClients  = flag.Int("load.clients", 4, "concurrent clients of the load test")
)

// result is what a client saw of one request.
type result struct {
	ttft   time.Duration   // to the first token
	gaps   []time.Duration // between tokens
	tokens int
	finish string
}

// tick records a token's arrival: the first sets ttft, the others add a gap.
func (r *result) tick(start time.Time, last *time.Time) {
	now := time.Now()
	if r.tokens == 0 {
		r.ttft = now.Sub(start)
	} else {
		r.gaps = append(r.gaps, now.Sub(*last))
	}
	*last = now
	r.tokens++
}

// runLoad runs n requests over clients goroutines, each request done by do, and reports.
func runLoad(t *testing.T, name string, n, clients int, do func(i int) (result, error)) {
	var mu sync.Mutex
	results := make([]*result, n)
	next := 0
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n {
					return
				}
				r, err := do(i)
				if err != nil {
					t.Errorf("%s: request %d: %v", name, i, err)
					continue
				}
				mu.Lock()
				if results[i] != nil {
					t.Errorf("%s: request %d answered twice", name, i)
				}
				results[i] = &r
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	var ttft, gaps []time.Duration
	tokens := 0
	for i, r := range results {
		if r == nil {
			t.Errorf("%s: request %d lost", name, i)
			continue
		}
		if r.finish != FinishStop && r.finish != FinishLength {
			t.Errorf("%s: request %d ended with %q", name, i, r.finish)
		}
		ttft = append(ttft, r.ttft)
		gaps = append(gaps, r.gaps...)
		tokens += r.tokens
	}
	q := func(v []time.Duration, p float64) string {
		if len(v) == 0 {
			return "-"
		}
		slices.Sort(v)
		return v[min(len(v)-1, int(p*float64(len(v))))].Round(10 * time.Microsecond).String()
	}
	t.Logf("| %s | %d | %d | %.3g | %.3g | %s | %s | %s | %s |", name, n, clients,
		float64(n)/wall.Seconds(), float64(tokens)/wall.Seconds(), q(ttft, 0.5), q(ttft, 0.99), q(gaps, 0.5), q(gaps, 0.99))
}

// The HTTP load test on ref: streamed completions from clients at once, with continuous batching
// (as many slots as clients) and one request at a time (one slot). No request is lost or answered
// twice, and every stream ends with its finish reason and [DONE].
func TestLoadHTTP(t *testing.T) {
	dir := gpt2Folder(t, "")
	t.Logf("| mode | requests | clients | requests/s | tokens/s | TTFT p50 | TTFT p99 | per token p50 | per token p99 |")
	for _, slots := range []int{*loadClients, 1} {
		ts, _, _ := testServer(t, dir, slots)
		runLoad(t, fmt.Sprintf("ref, HTTP, %d slots", slots), *loadRequests, *loadClients, func(i int) (result, error) {
			body := fmt.Sprintf(`{"prompt": "Request %d asks", "max_tokens": %d, "temperature": 0.7, "seed": %d, "stream": true}`, i, 8+i%17, i)
			start := time.Now()
			resp, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(body))
			if err != nil {
				return result{}, err
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				return result{}, fmt.Errorf("status %d", resp.StatusCode)
			}
			var r result
			last := start
			events := readStreamTimed(t, resp, func() { r.tick(start, &last) })
			_, r.finish = streamText(t, events)
			return r, nil
		})
	}
}

// The scheduler under load on ref and sim, without HTTP: the llama model, token ids in and out.
func TestLoadScheduler(t *testing.T) {
	f := testFolder(t, "llama")
	t.Logf("| mode | requests | clients | requests/s | tokens/s | TTFT p50 | TTFT p99 | per token p50 | per token p99 |")
	for _, dev := range devices() {
		n, clients := *loadRequests, *loadClients
		if dev == "sim" {
			n, clients = max(1, n/4), max(1, clients/2)
		}
		for _, slots := range []int{clients, 1} {
			e, err := f.Model.Open(lm.EngineOptions{Device: dev, Batch: slots, NoSimChecks: true})
			if err != nil {
				t.Fatal(err)
			}
			s, err := New(e, Options{MaxSeq: f.Model.MaxSeq()})
			if err != nil {
				t.Fatal(err)
			}
			runLoad(t, fmt.Sprintf("%s, scheduler, %d slots", dev, slots), n, clients, func(i int) (result, error) {
				start := time.Now()
				prompt := []int{1 + i%50, 2 + i%7, 3}[:1+i%3]
				q, err := s.Submit(context.Background(), Request{Prompt: prompt, MaxTokens: 8 + i%17, Sampling: lm.Sampling{Temperature: 0.7, Seed: uint64(i)}, StopIDs: f.StopIDs()})
				if err != nil {
					return result{}, err
				}
				var r result
				last := start
				for ev := range q.Events {
					if ev.HasToken {
						r.tick(start, &last)
					}
					if ev.Finish != "" {
						r.finish = ev.Finish
					}
				}
				return r, nil
			})
			s.Close()
			e.Close()
		}
	}
}
