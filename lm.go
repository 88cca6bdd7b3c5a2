package gcomp

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/lm"
)

// LMOptions say where a language model runs.
type LMOptions struct {
	// Device is as in SessionOptions: "auto" (the default), "cuda:N", "sim" or "ref".
	Device string
	// MaxSeq bounds the KV cache (prompt and generated tokens) below the model's context; 0 is
	// the model's own context.
	MaxSeq int
	// DType "bf16" or "f16" runs the matmuls in that dtype with f32 accumulation (autocast);
	// "" or "f32" computes in f32 whatever the checkpoint's dtype.
	DType string
	// Target and Backend as in Options.
	Target, Backend string
}

// GenerateOptions say how LM.Generate chooses tokens and when it stops. The zero value is greedy
// decoding up to the context's end.
type GenerateOptions struct {
	MaxNewTokens      int     // 0: up to the context's end
	Temperature       float64 // 0: greedy
	TopK              int     // 0: all tokens
	TopP              float64 // 0 or 1: all tokens
	RepetitionPenalty float64 // 0 or 1: none
	Seed              uint64  // the same seed gives the same tokens
}

// A GeneratedToken is one token of LM.Generate: its id, the text it completes (possibly empty:
// a special token, or part of a character the next token finishes), and on the last token why
// generation stopped ("stop": an end-of-sequence id; "length": MaxNewTokens; "context": the
// sequence filled the context).
type GeneratedToken struct {
	ID   int
	Text string
	Stop string
}

// LM is a Hugging Face language model folder (GPT-2 or the Llama family: config.json,
// model.safetensors or its shards, and a tokenizer) opened on a device. Its methods are not
// safe for concurrent use: one generation at a time.
type LM struct {
	folder *lm.Folder
	engine *lm.Engine
}

// LoadLM loads the model folder dir and compiles its decode program for opts.Device.
func LoadLM(dir string, opts LMOptions) (*LM, error) {
	copt, err := Options{Target: opts.Target, Backend: opts.Backend}.compiler()
	if err != nil {
		return nil, err
	}
	switch opts.DType {
	case "", "f32":
	case "bf16", "f16":
		copt.AMP, _ = ir.ParseDType(opts.DType)
	default:
		return nil, fmt.Errorf("gcomp: dtype %q: want f32, bf16 or f16", opts.DType)
	}
	if opts.MaxSeq < 0 {
		return nil, fmt.Errorf("gcomp: MaxSeq %d: want ≥ 0", opts.MaxSeq)
	}
	f, err := lm.LoadFolder(dir, opts.MaxSeq)
	if err != nil {
		return nil, err
	}
	e, err := f.Model.Open(lm.EngineOptions{Device: opts.Device, Compiler: copt})
	if err != nil {
		return nil, &wrapped{err: err, sentinel: ErrNoDevice}
	}
	return &LM{folder: f, engine: e}, nil
}

// Device names where the model runs.
func (m *LM) Device() string { return m.engine.Device() }

// Encode returns the token ids of text as the folder's tokenizer encodes a prompt (BOS added
// where its configuration says so).
func (m *LM) Encode(text string) ([]int, error) {
	if m.folder.Tokenizer == nil {
		return nil, fmt.Errorf("gcomp: %s has no tokenizer", m.folder.Dir)
	}
	return m.folder.Tokenizer.Encode(text)
}

// Decode returns the text of token ids.
func (m *LM) Decode(ids []int) (string, error) {
	if m.folder.Tokenizer == nil {
		return "", fmt.Errorf("gcomp: %s has no tokenizer", m.folder.Dir)
	}
	return m.folder.Tokenizer.Decode(ids)
}

// Generate continues prompt, yielding each token as soon as it is chosen; the loop stops at an
// end-of-sequence id, MaxNewTokens or the context's end. Cancelling ctx or breaking out of the
// loop stops it between tokens; an error is yielded once, last.
func (m *LM) Generate(ctx context.Context, prompt string, opts GenerateOptions) iter.Seq2[GeneratedToken, error] {
	return func(yield func(GeneratedToken, error) bool) {
		ids, err := m.Encode(prompt)
		if err == nil && len(ids) == 0 {
			err = errors.New("gcomp: the prompt encodes to no tokens")
		}
		if err != nil {
			yield(GeneratedToken{}, err)
			return
		}
		m.GenerateIDs(ctx, ids, opts)(yield)
	}
}

// GenerateIDs is Generate from token ids; Text is set when the folder has a tokenizer.
func (m *LM) GenerateIDs(ctx context.Context, prompt []int, opts GenerateOptions) iter.Seq2[GeneratedToken, error] {
	return func(yield func(GeneratedToken, error) bool) {
		o := lm.GenerateOptions{
			Sampling: lm.Sampling{Temperature: opts.Temperature, TopK: opts.TopK, TopP: opts.TopP,
				RepetitionPenalty: opts.RepetitionPenalty, Seed: opts.Seed},
			MaxNewTokens: opts.MaxNewTokens,
			StopIDs:      m.folder.StopIDs(),
		}
		var text interface {
			Next(int) (string, error)
			Flush() string
		}
		if t := m.folder.Tokenizer; t != nil {
			d := t.NewStreamDecoder()
			for _, id := range prompt {
				d.Next(id)
			}
			text = d
		}
		for t, err := range m.engine.Generate(ctx, prompt, o) {
			if err != nil {
				yield(GeneratedToken{}, err)
				return
			}
			g := GeneratedToken{ID: t.ID, Stop: t.Stop}
			if text != nil {
				if g.Text, err = text.Next(t.ID); err != nil {
					yield(GeneratedToken{}, err)
					return
				}
				if t.Stop != "" {
					g.Text += text.Flush()
				}
			}
			if !yield(g, nil) {
				return
			}
		}
	}
}

// Close frees the model's device memory.
func (m *LM) Close() error { return m.engine.Close() }
