package lmtest

import (
	"os"
	"path/filepath"
	"testing"
)

// AddGPT2Tokenizer copies GPT-2's real tokenizer files (vocab.json, merges.txt), which make tools
// fetches into .cache/tokenizers/gpt2 under the repository root root, into the model folder dir.
// Without them the test skips, or fails on CI (GCOMP_REQUIRE_PTXAS set).
func AddGPT2Tokenizer(t testing.TB, root, dir string) {
	t.Helper()
	src := filepath.Join(root, ".cache", "tokenizers", "gpt2")
	if _, err := os.Stat(src); err != nil {
		if os.Getenv("GCOMP_REQUIRE_PTXAS") != "" {
			t.Fatalf("GPT-2's tokenizer files are missing (make tools fetches them): %v", err)
		}
		t.Skip("GPT-2's tokenizer files are not fetched (make tools)")
	}
	for _, f := range []string{"vocab.json", "merges.txt"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, f), data, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
