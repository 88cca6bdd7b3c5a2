package lm

import (
	"context"
	"testing"

	"github.com/gcomp/gcomp/internal/lmtest"
)

// Checkpoint folders as published (GPT-2 without the transformer. prefix and with its mask
// buffers; the bf16 Llama in two shards) load into models whose greedy decoding on ref equals
// PyTorch's.
func TestLoadCheckpointMatchesReference(t *testing.T) {
	r := reference(t)
	for i := range r.Cases {
		c := &r.Cases[i]
		t.Run(c.Name, func(t *testing.T) {
			dir := t.TempDir()
			shards := 1
			if c.DType == "bf16" {
				shards = 2
			}
			if err := lmtest.WriteFolder(dir, c, shards); err != nil {
				t.Fatal(err)
			}
			m, _, err := LoadCheckpoint(dir, 0)
			if err != nil {
				t.Fatal(err)
			}
			e, err := m.Open(EngineOptions{Device: "ref"})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			k := 0
			for tok, err := range e.Generate(context.Background(), c.Prompt, GenerateOptions{MaxNewTokens: len(c.Generated), KeepLogits: true}) {
				if err != nil {
					t.Fatal(err)
				}
				if d := relErr(tok.Logits, c.Steps[k], c.ProbeIDs); d > 1e-4 || tok.ID != c.Generated[k] {
					t.Fatalf("token %d: %d (reference %d), logits off by %.3g", k, tok.ID, c.Generated[k], d)
				}
				k++
			}
			if k != len(c.Generated) {
				t.Fatalf("%d tokens, want %d", k, len(c.Generated))
			}
		})
	}
}
