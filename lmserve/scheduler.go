package lmserve

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gcomp/gcomp/lm"
)

// A Stepper decodes one token for each of Batch sequences, sequence b at position pos[b], and
// returns each one's next-token logits: *lm.Engine's Decode.
type Stepper interface {
	Batch() int
	Decode(ctx context.Context, tokens, pos []int) ([][]float32, error)
}

// A Packer is a Stepper that decodes only its first n slots (Decode given n rows) and moves a
// sequence's cache rows between slots: *lm.Engine opened with lm.EngineOptions.Packed. Over a
// Packer whose Packed is true the scheduler keeps the running sequences in slots [0, n) and
// decodes n rows a step.
type Packer interface {
	Stepper
	Packed() bool
	MoveSlot(dst, src int) (int64, error)
}

// Why a sequence stopped, as OpenAI's finish_reason spells it, plus the two it has no word for.
const (
	FinishStop      = "stop"      // a stop id was generated (or, in the server, a stop string)
	FinishLength    = "length"    // max_tokens reached, or the context is full
	FinishCancelled = "cancelled" // the request was cancelled (its client left)
	FinishError     = "error"     // the engine failed; Event.Err says why
)

// A Request is one sequence to continue.
type Request struct {
	Prompt    []int // at least one token, fewer than the context holds
	MaxTokens int   // generated tokens at most (the stop id included); 0: up to the context's end
	Sampling  lm.Sampling
	StopIDs   []int
}

// An Event is one generated token, or the end of a sequence (Finish set; then ID is meaningful
// only if HasToken).
type Event struct {
	ID       int
	HasToken bool
	Finish   string // on the last event
	Err      error  // with FinishError
}

// A Sequence is a submitted request's handle: its events arrive on Events, which is closed after
// the event that carries Finish.
type Sequence struct {
	Events <-chan Event
	events chan Event
	req    Request
	ctx    context.Context
	cancel atomic.Bool
	submit time.Time

	sampler   *lm.Sampler
	seq       []int // prompt and generated tokens
	fed       int   // prompt tokens already in the cache
	generated int
	limit     int
}

// Cancel ends the sequence at the scheduler's next step (its slot is freed then).
func (s *Sequence) Cancel() { s.cancel.Store(true) }

// Options tune a Scheduler.
type Options struct {
	// MaxSeq is the context's length in tokens (the model's MaxSeq).
	MaxSeq int
	// MaxQueue bounds the requests waiting for a slot; more are refused (ErrBusy). 0: 1024.
	MaxQueue int
}

// Errors Submit returns.
var (
	ErrBusy     = errors.New("lmserve: the queue is full")
	ErrDraining = errors.New("lmserve: the server is shutting down")
)

// A Scheduler runs continuous batching over one Stepper of Batch slots. A request waits in a
// first-come queue until a slot is free, then its prompt is fed through the decode step one
// token per step beside the other slots' generated tokens (chunked prefill with a chunk of one),
// then it generates one token per step until it stops; its slot is taken by the next request at
// the following step, or, over a Packer, by the last running sequence, so that the running ones
// fill the first slots and a step decodes only them. Every sequence sees only its own cache row,
// so batching never changes what a sequence generates.
type Scheduler struct {
	eng    Stepper
	packer Packer // eng when it is packed, else nil
	opts   Options
	slots  []*Sequence
	wake   chan struct{}
	done   chan struct{}
	metric *Metrics

	mu       sync.Mutex
	queue    []*Sequence
	draining bool
	closed   bool
}

// New starts a scheduler over eng; Close stops it.
func New(eng Stepper, opts Options) (*Scheduler, error) {
	if opts.MaxSeq < 2 {
		return nil, fmt.Errorf("lmserve: a context of %d tokens: want at least 2", opts.MaxSeq)
	}
	if opts.MaxQueue == 0 {
		opts.MaxQueue = 1024
	}
	s := &Scheduler{
		eng: eng, opts: opts, slots: make([]*Sequence, eng.Batch()),
		wake: make(chan struct{}, 1), done: make(chan struct{}), metric: newMetrics(),
	}
	if p, ok := eng.(Packer); ok && p.Packed() {
		s.packer = p
	}
	go s.loop()
	return s, nil
}

// Metrics returns the scheduler's counters.
func (s *Scheduler) Metrics() *Metrics { return s.metric }

// MaxSeq is the context's length in tokens.
func (s *Scheduler) MaxSeq() int { return s.opts.MaxSeq }

// Submit queues req; ctx's cancellation cancels it (at the next step). The request is checked
// here: a bad one is an error and never queued.
func (s *Scheduler) Submit(ctx context.Context, req Request) (*Sequence, error) {
	if len(req.Prompt) == 0 {
		return nil, fmt.Errorf("lmserve: an empty prompt")
	}
	if len(req.Prompt) >= s.opts.MaxSeq {
		return nil, fmt.Errorf("lmserve: a prompt of %d tokens leaves no room in the context of %d", len(req.Prompt), s.opts.MaxSeq)
	}
	if req.MaxTokens < 0 {
		return nil, fmt.Errorf("lmserve: max tokens %d: want ≥ 0", req.MaxTokens)
	}
	sampler, err := lm.NewSampler(req.Sampling)
	if err != nil {
		return nil, err
	}
	limit := s.opts.MaxSeq - len(req.Prompt)
	if req.MaxTokens > 0 && req.MaxTokens < limit {
		limit = req.MaxTokens
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ch := make(chan Event, limit+1) // never full: the loop never waits for a slow reader
	q := &Sequence{Events: ch, events: ch, req: req, ctx: ctx, submit: time.Now(),
		sampler: sampler, seq: slices.Clone(req.Prompt), limit: limit}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.draining || s.closed:
		return nil, ErrDraining
	case len(s.queue) >= s.opts.MaxQueue:
		return nil, ErrBusy
	}
	s.queue = append(s.queue, q)
	s.metric.queued.Store(int64(len(s.queue)))
	s.signal()
	return q, nil
}

func (s *Scheduler) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Drain stops admitting: queued requests end cancelled with ErrDraining, running ones finish.
// It returns once no sequence runs (or ctx ends).
func (s *Scheduler) Drain(ctx context.Context) error {
	s.mu.Lock()
	s.draining = true
	queued := s.queue
	s.queue = nil
	s.metric.queued.Store(0)
	s.mu.Unlock()
	for _, q := range queued {
		q.finish(Event{Finish: FinishCancelled, Err: ErrDraining})
	}
	s.signal()
	for {
		if s.metric.running.Load() == 0 {
			s.mu.Lock()
			n := len(s.queue)
			s.mu.Unlock()
			if n == 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Close ends every sequence (running ones cancelled) and stops the loop.
func (s *Scheduler) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	s.signal()
	<-s.done
}

func (q *Sequence) finish(ev Event) {
	q.events <- ev
	close(q.events)
}

// loop is the one goroutine that runs the engine: admit, step, hand out tokens, repeat.
func (s *Scheduler) loop() {
	defer close(s.done)
	B := len(s.slots)
	tokens, pos := make([]int, B), make([]int, B)
	for {
		s.mu.Lock()
		closed := s.closed
		if closed {
			queued := s.queue
			s.queue = nil
			s.mu.Unlock()
			for _, q := range queued {
				q.finish(Event{Finish: FinishCancelled, Err: ErrDraining})
			}
			for b, q := range s.slots {
				if q != nil {
					q.finish(Event{Finish: FinishCancelled, Err: ErrDraining})
					s.slots[b] = nil
				}
			}
			s.metric.running.Store(0)
			return
		}
		// Admission: the oldest waiting request takes the lowest free slot.
		for b := range s.slots {
			if s.slots[b] == nil && len(s.queue) > 0 {
				s.slots[b] = s.queue[0]
				s.queue = s.queue[1:]
			}
		}
		s.metric.queued.Store(int64(len(s.queue)))
		s.mu.Unlock()

		running := 0
		for b, q := range s.slots {
			if q != nil && (q.cancel.Load() || q.ctx.Err() != nil) {
				q.finish(Event{Finish: FinishCancelled, Err: context.Canceled})
				s.slots[b] = nil
			}
			if s.slots[b] != nil {
				running++
			}
		}
		s.metric.running.Store(int64(running))
		if running == 0 {
			<-s.wake
			continue
		}
		rows := len(s.slots)
		if s.packer != nil {
			rows = s.pack()
			if rows == 0 {
				continue
			}
		}
		for b, q := range s.slots[:rows] {
			// A free slot decodes token 0 at position 0 of its own row: harmless, as the next
			// sequence in that slot writes position 0 before it reads it.
			tokens[b], pos[b] = 0, 0
			if q == nil {
				continue
			}
			if q.fed < len(q.req.Prompt) {
				tokens[b], pos[b] = q.req.Prompt[q.fed], q.fed
			} else {
				tokens[b], pos[b] = q.seq[len(q.seq)-1], len(q.seq)-1
			}
		}
		start := time.Now()
		logits, err := s.eng.Decode(context.Background(), tokens[:rows], pos[:rows])
		s.metric.step(time.Since(start))
		for b, q := range s.slots[:rows] {
			if q == nil {
				continue
			}
			if err != nil {
				s.free(b)
				q.finish(Event{Finish: FinishError, Err: err})
				continue
			}
			if q.fed < len(q.req.Prompt) {
				q.fed++
				if q.fed < len(q.req.Prompt) {
					continue // more of the prompt to feed
				}
			}
			ev, done := q.next(logits[b])
			if ev.HasToken {
				if q.generated == 1 {
					s.metric.firstToken(time.Since(q.submit))
				}
				s.metric.tokens.Add(1)
			}
			if done {
				s.free(b)
				q.finish(ev)
			} else {
				q.events <- ev
			}
		}
	}
}

// pack moves the last running sequence into the lowest free slot until the running ones fill a
// prefix of the slots, and returns their number: the rows the step decodes. The sequence's cache
// rows move on the device (Packer.MoveSlot); its position, prompt progress and sampler travel
// with the Sequence. A sequence whose move fails ends with the error.
func (s *Scheduler) pack() int {
	for {
		hole := slices.Index(s.slots, nil)
		last := len(s.slots) - 1
		for last >= 0 && s.slots[last] == nil {
			last--
		}
		if hole < 0 || hole > last {
			return last + 1
		}
		q := s.slots[last]
		n, err := s.packer.MoveSlot(hole, last)
		if err != nil {
			s.free(last)
			q.finish(Event{Finish: FinishError, Err: err})
			continue
		}
		s.slots[hole], s.slots[last] = q, nil
		s.metric.moves.Add(1)
		s.metric.movedBytes.Add(n)
	}
}

// free empties slot b of a sequence that ends within a step. The running gauge drops before the
// sequence's stream ends, so a client that has seen its last event sees the metric without it.
func (s *Scheduler) free(b int) {
	s.slots[b] = nil
	s.metric.running.Add(-1)
}

// next chooses the sequence's next token and says whether it is the last.
func (q *Sequence) next(logits []float32) (Event, bool) {
	id, err := q.sampler.Next(logits, q.seq)
	if err != nil {
		return Event{Finish: FinishError, Err: err}, true
	}
	q.seq = append(q.seq, id)
	q.generated++
	ev := Event{ID: id, HasToken: true}
	switch {
	case slices.Contains(q.req.StopIDs, id):
		ev.Finish = FinishStop
	case q.generated >= q.limit:
		ev.Finish = FinishLength
	}
	return ev, ev.Finish != ""
}
