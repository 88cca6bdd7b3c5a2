package gcomp_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp"
	"github.com/gcomp/gcomp/internal/lmtest"
)

// gpt2Folder writes the reference's tiny GPT-2 (real vocabulary) with GPT-2's tokenizer files.
func gpt2Folder(t *testing.T) (string, *lmtest.Case) {
	t.Helper()
	r, err := lmtest.ReadReference("lm/testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	c := &r.Cases[0]
	dir := t.TempDir()
	if err := lmtest.WriteFolder(dir, c, 1); err != nil {
		t.Fatal(err)
	}
	lmtest.AddGPT2Tokenizer(t, ".", dir)
	return dir, c
}

func TestLoadLM(t *testing.T) {
	dir, c := gpt2Folder(t)
	m, err := gcomp.LoadLM(dir, gcomp.LMOptions{Device: "ref"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	prompt, err := m.Decode(c.Prompt)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	var text strings.Builder
	for tok, err := range m.Generate(context.Background(), prompt, gcomp.GenerateOptions{MaxNewTokens: 8}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tok.ID)
		text.WriteString(tok.Text)
		if len(ids) == 8 && tok.Stop != "length" {
			t.Errorf("last token's stop reason %q", tok.Stop)
		}
	}
	if !slices.Equal(ids, c.Generated[:8]) {
		t.Fatalf("greedy ids %v, the reference's %v", ids, c.Generated[:8])
	}
	if full, _ := m.Decode(append(slices.Clone(c.Prompt), ids...)); prompt+text.String() != full {
		t.Errorf("streamed text %q after %q, decoded whole %q", text.String(), prompt, full)
	}

	if _, err := gcomp.LoadLM(dir, gcomp.LMOptions{Device: "ref", DType: "f64"}); err == nil || !strings.Contains(err.Error(), "dtype") {
		t.Errorf("dtype f64: %v", err)
	}
	if _, err := gcomp.LoadLM(dir, gcomp.LMOptions{Device: "cuda:7"}); !errors.Is(err, gcomp.ErrNoDevice) {
		t.Errorf("cuda:7 without a GPU: %v, want ErrNoDevice", err)
	}
	if _, err := gcomp.LoadLM(filepath.Join(dir, "none"), gcomp.LMOptions{Device: "ref"}); err == nil {
		t.Error("a missing folder loaded")
	}
}
