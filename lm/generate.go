package lm

import (
	"context"
	"fmt"
	"iter"
	"slices"
)

// GenerateOptions say how Generate chooses tokens and when it stops.
type GenerateOptions struct {
	Sampling
	// MaxNewTokens bounds the generated tokens (the stop token included); 0 means up to the
	// context's end.
	MaxNewTokens int
	// StopIDs end generation when generated (the model's end-of-sequence ids).
	StopIDs []int
	// KeepLogits returns with each token the logits that chose it.
	KeepLogits bool
}

// Why generation stopped, on the last Token.
const (
	StopEOS     = "stop"    // a stop id was generated (OpenAI's finish_reason "stop")
	StopLength  = "length"  // MaxNewTokens reached
	StopContext = "context" // the sequence filled the model's context
)

// A Token is one generated token.
type Token struct {
	ID     int
	Logits []float32 // what chose it, with GenerateOptions.KeepLogits
	Stop   string    // on the last token: StopEOS, StopLength or StopContext
}

// Generate continues prompt (token ids, at least one) on an engine of batch 1: one prefill, then
// one decode per token, each yielded as soon as it is chosen. Cancelling ctx, or breaking out of
// the loop, stops it between tokens; an error is yielded once, last.
func (e *Engine) Generate(ctx context.Context, prompt []int, opts GenerateOptions) iter.Seq2[Token, error] {
	return func(yield func(Token, error) bool) {
		fail := func(err error) { yield(Token{}, err) }
		if e.batch != 1 {
			fail(fmt.Errorf("lm: Generate runs one sequence; the engine decodes %d", e.batch))
			return
		}
		if len(prompt) == 0 {
			fail(fmt.Errorf("lm: an empty prompt (give at least one token, such as the BOS id)"))
			return
		}
		if len(prompt) >= e.m.MaxSeq() {
			fail(fmt.Errorf("lm: a prompt of %d tokens leaves no room in the model's context of %d", len(prompt), e.m.MaxSeq()))
			return
		}
		if opts.MaxNewTokens < 0 {
			fail(fmt.Errorf("lm: max new tokens %d: want ≥ 0", opts.MaxNewTokens))
			return
		}
		s, err := NewSampler(opts.Sampling)
		if err != nil {
			fail(err)
			return
		}
		if ctx == nil {
			ctx = context.Background()
		}
		limit := e.m.MaxSeq() - len(prompt)
		if opts.MaxNewTokens > 0 && opts.MaxNewTokens < limit {
			limit = opts.MaxNewTokens
		}
		seq := slices.Clone(prompt)
		logits, err := e.Prefill(ctx, [][]int{prompt})
		for n := 1; ; n++ {
			if err == nil {
				err = ctx.Err()
			}
			if err != nil {
				fail(err)
				return
			}
			id, err := s.Next(logits[0], seq)
			if err != nil {
				fail(err)
				return
			}
			tok := Token{ID: id}
			if opts.KeepLogits {
				tok.Logits = logits[0]
			}
			switch {
			case slices.Contains(opts.StopIDs, id):
				tok.Stop = StopEOS
			case n == opts.MaxNewTokens:
				tok.Stop = StopLength
			case n == limit:
				tok.Stop = StopContext
			}
			if !yield(tok, nil) || tok.Stop != "" {
				return
			}
			seq = append(seq, id)
			logits, err = e.Decode(ctx, []int{id}, []int{len(seq) - 1})
		}
	}
}
