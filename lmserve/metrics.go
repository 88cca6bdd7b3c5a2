package lmserve

import (
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Metrics are a scheduler's counters, written by its loop and read by the metrics endpoint.
type Metrics struct {
	queued, running, tokens, steps atomic.Int64
	moves, movedBytes              atomic.Int64 // a packed engine's slot moves (Packer) and their KV bytes

	mu      sync.Mutex
	ttft    ring // seconds from submission to the first token
	stepDur ring // seconds per decode step (one token for every running sequence)
	recent  []stamp
}

type stamp struct {
	at     time.Time
	tokens int64
}

// ring keeps the last len(v) samples.
type ring struct {
	v     []float64
	n     int
	sum   float64
	count int64
}

func (r *ring) add(x float64) {
	if r.v == nil {
		r.v = make([]float64, 1024)
	}
	r.v[r.n%len(r.v)] = x
	r.n++
	r.sum += x
	r.count++
}

// quantile of the samples kept, q in [0, 1].
func (r *ring) quantile(q float64) float64 {
	k := min(r.n, len(r.v))
	if k == 0 {
		return 0
	}
	s := slices.Clone(r.v[:k])
	slices.Sort(s)
	return s[min(k-1, int(q*float64(k)))]
}

// window is how far back tokens/s looks.
const window = 10 * time.Second

func newMetrics() *Metrics { return &Metrics{} }

func (m *Metrics) step(d time.Duration) {
	m.steps.Add(1)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stepDur.add(d.Seconds())
	now := time.Now()
	m.recent = append(m.recent, stamp{now, m.tokens.Load()})
	i := 0
	for i < len(m.recent)-1 && now.Sub(m.recent[i].at) > window {
		i++
	}
	m.recent = m.recent[i:]
}

func (m *Metrics) firstToken(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ttft.add(d.Seconds())
}

// A Snapshot is the metrics at one moment.
type Snapshot struct {
	Queued, Running, Tokens, Steps int64
	Moves, MovedBytes              int64   // slot moves of a packed engine, and the KV cache bytes they copied
	TokensPerSecond                float64 // over the last 10 s
	TTFTCount                      int64
	TTFTSum, TTFTP50, TTFTP99      float64 // seconds
	StepP50, StepP99               float64 // seconds per decode step
}

// Snapshot reads the metrics.
func (m *Metrics) Snapshot() Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Snapshot{
		Queued: m.queued.Load(), Running: m.running.Load(), Tokens: m.tokens.Load(), Steps: m.steps.Load(),
		Moves: m.moves.Load(), MovedBytes: m.movedBytes.Load(),
		TTFTCount: m.ttft.count, TTFTSum: m.ttft.sum, TTFTP50: m.ttft.quantile(0.5), TTFTP99: m.ttft.quantile(0.99),
		StepP50: m.stepDur.quantile(0.5), StepP99: m.stepDur.quantile(0.99),
	}
	if n := len(m.recent); n > 1 {
		first, last := m.recent[0], m.recent[n-1]
		if d := last.at.Sub(first.at).Seconds(); d > 0 {
			s.TokensPerSecond = float64(last.tokens-first.tokens) / d
		}
	}
	return s
}

// WriteText writes the snapshot in Prometheus' text format.
func (s Snapshot) WriteText(w io.Writer) {
	for _, l := range []struct {
		name, kind, help string
		v                any
	}{
		{"gcomp_queue_length", "gauge", "requests waiting for a slot", s.Queued},
		{"gcomp_running_sequences", "gauge", "sequences in the batch", s.Running},
		{"gcomp_generated_tokens_total", "counter", "tokens generated", s.Tokens},
		{"gcomp_decode_steps_total", "counter", "decode steps run", s.Steps},
		{"gcomp_slot_moves_total", "counter", "sequences moved into a freed slot to keep the active ones packed", s.Moves},
		{"gcomp_slot_move_bytes_total", "counter", "KV cache bytes those moves copied on the device", s.MovedBytes},
		{"gcomp_tokens_per_second", "gauge", "tokens generated per second over the last 10 s", s.TokensPerSecond},
	} {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %v\n", l.name, l.help, l.name, l.kind, l.name, l.v)
	}
	fmt.Fprintf(w, "# HELP gcomp_time_to_first_token_seconds from a request's arrival to its first token (quantiles of the last 1024)\n# TYPE gcomp_time_to_first_token_seconds summary\n")
	fmt.Fprintf(w, "gcomp_time_to_first_token_seconds{quantile=\"0.5\"} %v\ngcomp_time_to_first_token_seconds{quantile=\"0.99\"} %v\n", s.TTFTP50, s.TTFTP99)
	fmt.Fprintf(w, "gcomp_time_to_first_token_seconds_sum %v\ngcomp_time_to_first_token_seconds_count %d\n", s.TTFTSum, s.TTFTCount)
	fmt.Fprintf(w, "# HELP gcomp_decode_step_seconds one decode step (quantiles of the last 1024)\n# TYPE gcomp_decode_step_seconds summary\n")
	fmt.Fprintf(w, "gcomp_decode_step_seconds{quantile=\"0.5\"} %v\ngcomp_decode_step_seconds{quantile=\"0.99\"} %v\n", s.StepP50, s.StepP99)
}
