package lm

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

func collect(t *testing.T, e *Engine, ctx context.Context, prompt []int, o GenerateOptions) ([]Token, error) {
	t.Helper()
	var toks []Token
	for tok, err := range e.Generate(ctx, prompt, o) {
		if err != nil {
			return toks, err
		}
		toks = append(toks, tok)
	}
	return toks, nil
}

func ids(toks []Token) []int {
	var out []int
	for _, t := range toks {
		out = append(out, t.ID)
	}
	return out
}

func TestGenerate(t *testing.T) {
	r := reference(t)
	c := &r.Cases[1] // llama
	m := testModel(t, c)
	e, err := m.Open(EngineOptions{Device: "ref"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()

	// Greedy decoding gives the reference's tokens; the last says why it stopped.
	toks, err := collect(t, e, ctx, c.Prompt, GenerateOptions{MaxNewTokens: 32, KeepLogits: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(toks); !slices.Equal(got, c.Generated) {
		t.Fatalf("greedy tokens %v, the reference's %v", got, c.Generated)
	}
	if toks[31].Stop != StopLength || toks[30].Stop != "" || len(toks[5].Logits) != m.Vocab {
		t.Errorf("stop reasons %q %q, logits kept %d", toks[30].Stop, toks[31].Stop, len(toks[5].Logits))
	}

	// A stop id ends generation with that token.
	stop := c.Generated[3]
	toks, err = collect(t, e, ctx, c.Prompt, GenerateOptions{MaxNewTokens: 32, StopIDs: []int{stop}})
	if err != nil || len(toks) != slices.Index(c.Generated, stop)+1 || toks[len(toks)-1].Stop != StopEOS {
		t.Errorf("with stop id %d: %v, %v", stop, ids(toks), err)
	}

	// Without a limit, the context's end stops it.
	toks, err = collect(t, e, ctx, c.Prompt, GenerateOptions{})
	if err != nil || len(toks) != m.MaxSeq()-len(c.Prompt) || toks[len(toks)-1].Stop != StopContext {
		t.Errorf("to the context's end: %d tokens, %v", len(toks), err)
	}

	// Seeded sampling repeats exactly, and another seed goes elsewhere.
	s := GenerateOptions{MaxNewTokens: 20, Sampling: Sampling{Temperature: 1.5, TopK: 50, TopP: 0.95, Seed: 7}}
	a, err1 := collect(t, e, ctx, c.Prompt, s)
	b, err2 := collect(t, e, ctx, c.Prompt, s)
	s.Seed = 8
	d, err3 := collect(t, e, ctx, c.Prompt, s)
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(a), ids(b)) || slices.Equal(ids(a), ids(d)) {
		t.Errorf("seed 7 twice: %v, %v; seed 8: %v", ids(a), ids(b), ids(d))
	}

	// Cancelling stops between tokens; so does breaking out of the loop.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := 0
	var last error
	for _, err := range e.Generate(cctx, c.Prompt, GenerateOptions{MaxNewTokens: 32}) {
		if err != nil {
			last = err
			break
		}
		if n++; n == 3 {
			cancel()
		}
	}
	if n != 3 || !errors.Is(last, context.Canceled) {
		t.Errorf("cancelled after 3 tokens: %d tokens, %v", n, last)
	}
	for range e.Generate(ctx, c.Prompt, GenerateOptions{MaxNewTokens: 32}) {
		break
	}

	// Bad requests are one clear error each.
	for _, tc := range []struct {
		prompt []int
		o      GenerateOptions
		want   string
	}{
		{nil, GenerateOptions{}, "empty prompt"},
		{make([]int, m.MaxSeq()), GenerateOptions{}, "leaves no room"},
		{[]int{1, m.Vocab}, GenerateOptions{}, "outside the vocabulary"},
		{[]int{-1}, GenerateOptions{}, "outside the vocabulary"},
		{[]int{1}, GenerateOptions{MaxNewTokens: -1}, "max new tokens"},
		{[]int{1}, GenerateOptions{Sampling: Sampling{TopP: 2}}, "top-p"},
	} {
		_, err := collect(t, e, ctx, tc.prompt, tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("prompt %v, %+v: %v, want %q", len(tc.prompt), tc.o, err, tc.want)
		}
	}
}
