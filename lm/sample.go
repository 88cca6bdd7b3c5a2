package lm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Sampling says how the next token is chosen from the logits, in the order Hugging Face's
// generate applies its logits processors: the repetition penalty, the temperature, top-k, top-p,
// then a draw from the softmax of what is left.
type Sampling struct {
	// Temperature divides the logits; 0 is greedy decoding (the largest logit, the lowest id on
	// a tie), which ignores TopK, TopP and Seed.
	Temperature float64
	// TopK keeps the K largest logits; 0 keeps all.
	TopK int
	// TopP keeps the smallest set of the most likely tokens whose probabilities sum to at least
	// P (nucleus sampling); 0 or 1 keeps all.
	TopP float64
	// RepetitionPenalty (CTRL's, as transformers applies it) divides a positive logit of a token
	// already in the sequence and multiplies a negative one; 0 or 1 is none.
	RepetitionPenalty float64
	// Seed seeds the draws: the same seed, prompt and options give the same tokens.
	Seed uint64
}

// Check refuses options outside their ranges.
func (s Sampling) Check() error {
	switch {
	case s.Temperature < 0 || math.IsNaN(s.Temperature) || math.IsInf(s.Temperature, 0):
		return fmt.Errorf("temperature %v: want a finite number ≥ 0 (0 is greedy)", s.Temperature)
	case s.TopK < 0:
		return fmt.Errorf("top-k %d: want ≥ 0 (0 keeps every token)", s.TopK)
	case !(s.TopP >= 0 && s.TopP <= 1):
		return fmt.Errorf("top-p %v: want a number in [0, 1] (0 or 1 keeps every token)", s.TopP)
	case s.RepetitionPenalty < 0 || math.IsNaN(s.RepetitionPenalty) || math.IsInf(s.RepetitionPenalty, 0):
		return fmt.Errorf("repetition penalty %v: want a finite number ≥ 0 (0 or 1 is none)", s.RepetitionPenalty)
	}
	return nil
}

// A Sampler draws tokens with one Sampling's options and its own random stream.
type Sampler struct {
	opts Sampling
	rng  *rand.Rand
	cand []candidate // reused between draws
}

type candidate struct {
	id    int
	logit float64
}

// NewSampler returns a sampler whose draws are a function of opts.Seed alone.
func NewSampler(opts Sampling) (*Sampler, error) {
	if err := opts.Check(); err != nil {
		return nil, fmt.Errorf("lm: %v", err)
	}
	return &Sampler{opts: opts, rng: rand.New(rand.NewPCG(opts.Seed, 0x6763_6f6d_704c_4d31))}, nil
}

// Next chooses the next token from logits [vocab], given the ids of the sequence so far (for the
// repetition penalty). NaN logits are never chosen; if every logit is NaN or -Inf it is an error.
func (s *Sampler) Next(logits []float32, seen []int) (int, error) {
	o := s.opts
	c := s.cand[:0]
	for id, l := range logits {
		if v := float64(l); !math.IsNaN(v) && !math.IsInf(v, -1) {
			c = append(c, candidate{id, v})
		}
	}
	s.cand = c
	if len(c) == 0 {
		return 0, fmt.Errorf("lm: every one of the %d logits is NaN or -Inf", len(logits))
	}
	if p := o.RepetitionPenalty; p != 0 && p != 1 {
		penalized := map[int]bool{}
		for _, id := range seen {
			penalized[id] = true
		}
		for i := range c {
			if penalized[c[i].id] {
				if c[i].logit > 0 {
					c[i].logit /= p
				} else {
					c[i].logit *= p
				}
			}
		}
	}
	// Largest first, the lower id first on a tie: every choice below is deterministic.
	sort.Slice(c, func(i, j int) bool {
		if c[i].logit != c[j].logit {
			return c[i].logit > c[j].logit
		}
		return c[i].id < c[j].id
	})
	if o.Temperature == 0 {
		return c[0].id, nil
	}
	if o.TopK > 0 && o.TopK < len(c) {
		c = c[:o.TopK]
	}
	// Softmax of logit/T, relative to the largest for range.
	probs := make([]float64, len(c))
	var sum float64
	for i := range c {
		probs[i] = math.Exp((c[i].logit - c[0].logit) / o.Temperature)
		sum += probs[i]
	}
	if o.TopP > 0 && o.TopP < 1 {
		// The smallest prefix whose mass reaches TopP (at least one token), as transformers'
		// TopPLogitsWarper keeps it.
		var acc float64
		n := len(c)
		for i := range c {
			acc += probs[i] / sum
			if acc >= o.TopP {
				n = i + 1
				break
			}
		}
		c, probs = c[:n], probs[:n]
		sum = 0
		for _, p := range probs {
			sum += p
		}
	}
	u := s.rng.Float64() * sum
	for i, p := range probs {
		if u < p {
			return c[i].id, nil
		}
		u -= p
	}
	return c[len(c)-1].id, nil // rounding left u just past the last
}
