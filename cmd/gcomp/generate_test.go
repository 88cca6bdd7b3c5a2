package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/internal/lmtest"
	"github.com/gcomp/gcomp/tensorio"
	"github.com/gcomp/gcomp/tokenizer"
)

// lmFolder writes reference case name (lm/testdata/reference.json) as a model folder in a
// temporary directory, with GPT-2's real tokenizer files for the gpt2 case.
func lmFolder(t *testing.T, name string) (string, *lmtest.Case) {
	t.Helper()
	r, err := lmtest.ReadReference("../../lm/testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	for i := range r.Cases {
		c := &r.Cases[i]
		if c.Name != name {
			continue
		}
		dir := t.TempDir()
		if err := lmtest.WriteFolder(dir, c, 1); err != nil {
			t.Fatal(err)
		}
		if name == "gpt2" {
			lmtest.AddGPT2Tokenizer(t, "../..", dir)
		}
		return dir, c
	}
	t.Fatalf("no reference case %s", name)
	return "", nil
}

// gcomp generate on ref streams the text of the reference's greedy tokens and writes the ids and
// the logits that chose them.
func TestGenerateCommand(t *testing.T) {
	dir, c := lmFolder(t, "gpt2")
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	prompt, err := tok.Decode(c.Prompt)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	ids, logits := filepath.Join(out, "ids.json"), filepath.Join(out, "logits.npy")
	const n = 10
	var stdout, stderr bytes.Buffer
	args := []string{"generate", dir, "--prompt", prompt, "--device", "ref", "--temperature", "0", "--max-new-tokens", "10",
		"--ids-out", ids, "--logits-out", logits, "--stats"}
	if code := Main(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	full, _ := tok.Decode(append(slices.Clone(c.Prompt), c.Generated[:n]...))
	if want := strings.TrimPrefix(full, prompt) + "\n"; stdout.String() != want {
		t.Errorf("stdout %q, want %q", stdout.String(), want)
	}
	for _, w := range []string{"prefill: 5 tokens", "decode: 9 tokens", "stopped: length after 10 tokens", "modeled on one H100"} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("--stats lacks %q:\n%s", w, stderr.String())
		}
	}
	var got struct {
		Prompt    []int `json:"prompt_ids"`
		Generated []int `json:"generated_ids"`
	}
	data, err := os.ReadFile(ids)
	if err != nil || json.Unmarshal(data, &got) != nil {
		t.Fatalf("--ids-out: %v %s", err, data)
	}
	if !slices.Equal(got.Prompt, c.Prompt) || !slices.Equal(got.Generated, c.Generated[:n]) {
		t.Errorf("--ids-out %+v, want prompt %v and %v", got, c.Prompt, c.Generated[:n])
	}
	a, err := tensorio.ReadNPYFile(logits)
	if err != nil || a.DType != "f32" || !slices.Equal(a.Shape, []int{n, 50257}) {
		t.Fatalf("--logits-out: %v %+v", err, a)
	}
}

// Bad folders and arguments are one clear error each, exit status 1, and no output file.
func TestGenerateCommandErrors(t *testing.T) {
	llama, _ := lmFolder(t, "llama")
	bad := func(edit func(dir string)) string {
		dir := t.TempDir()
		for _, f := range []string{"config.json", "model.safetensors"} {
			data, _ := os.ReadFile(filepath.Join(llama, f))
			os.WriteFile(filepath.Join(dir, f), data, 0o644)
		}
		edit(dir)
		return dir
	}
	setConfig := func(key string, v any) func(string) {
		return func(dir string) {
			var m map[string]any
			data, _ := os.ReadFile(filepath.Join(dir, "config.json"))
			json.Unmarshal(data, &m)
			m[key] = v
			data, _ = json.Marshal(m)
			os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644)
		}
	}
	ids := filepath.Join(t.TempDir(), "ids.json")
	for _, tc := range []struct {
		want string
		args []string
	}{
		{"no such", []string{filepath.Join(llama, "missing"), "--prompt-ids", "1"}},
		{"config.json", []string{bad(func(d string) { os.Remove(filepath.Join(d, "config.json")) }), "--prompt-ids", "1"}},
		{"config.json", []string{bad(func(d string) { os.WriteFile(filepath.Join(d, "config.json"), []byte("{"), 0o644) }), "--prompt-ids", "1"}},
		{"model_type", []string{bad(setConfig("model_type", "bert")), "--prompt-ids", "1"}},
		{"rope_scaling", []string{bad(setConfig("rope_scaling", map[string]any{"type": "yarn", "factor": 4})), "--prompt-ids", "1"}},
		{`tensor "lm_head.weight" has shape [320 64], config.json wants [320 96]`, []string{bad(setConfig("hidden_size", 96)), "--prompt-ids", "1"}},
		{"model-00002-of-00002.safetensors", []string{bad(func(d string) {
			os.Rename(filepath.Join(d, "model.safetensors"), filepath.Join(d, "model-00001-of-00002.safetensors"))
			os.WriteFile(filepath.Join(d, "model.safetensors.index.json"), []byte(`{"weight_map": {"model.norm.weight": "model-00002-of-00002.safetensors"}}`), 0o644)
		}), "--prompt-ids", "1"}},
		{"tokenizer.json", []string{bad(func(d string) {
			os.WriteFile(filepath.Join(d, "tokenizer.json"), []byte(`{"model": {"type": "WordPiece", "vocab": {}}}`), 0o644)
		}), "--prompt", "hi"}},
		{"has no tokenizer", []string{llama, "--prompt", "hi"}},
		{"the context holds 64", []string{llama, "--prompt-ids", strings.Repeat("1,", 64) + "1"}},
		{"outside the vocabulary", []string{llama, "--prompt-ids", "1,320"}},
		{"not a token id", []string{llama, "--prompt-ids", "1,x"}},
		{"one of them", []string{llama}},
		{"one of them", []string{llama, "--prompt", "a", "--prompt-ids", "1"}},
		{"--prompt-ids is empty", []string{llama, "--prompt-ids", ""}},
		{"--prompt-ids is empty", []string{llama, "--prompt-ids", " "}},
		{"temperature", []string{llama, "--prompt-ids", "1", "--temperature", "-1"}},
		{"top-p", []string{llama, "--prompt-ids", "1", "--top-p", "1.5"}},
		{"--dtype", []string{llama, "--prompt-ids", "1", "--dtype", "f64"}},
		{"longer than the model's 64", []string{llama, "--prompt-ids", "1", "--max-seq", "65"}},
		{"unknown device", []string{llama, "--prompt-ids", "1", "--device", "tpu"}},
	} {
		args := append([]string{"generate"}, tc.args...)
		args = append(args, "--device", "ref", "--ids-out", ids)
		if slices.Contains(tc.args, "--device") {
			args = append([]string{"generate"}, append(tc.args, "--ids-out", ids)...)
		}
		gcompFails(t, tc.want, args...)
		if _, err := os.Stat(ids); err == nil {
			t.Fatalf("%v: --ids-out written by a failing command", tc.args)
		}
	}
	// The commands that take one model file say which commands take a folder.
	for _, cmd := range []string{"build", "run", "check"} {
		gcompFails(t, "is a Hugging Face model folder, not one model file", cmd, llama)
	}
}

func TestTokenizeCommand(t *testing.T) {
	dir, c := lmFolder(t, "gpt2")
	var stdout, stderr bytes.Buffer
	text := "Hello, world! It's 2026: naïve café 東京 🙂"
	if code := Main([]string{"tokenize", dir, "--text", text}, &stdout, &stderr); code != 0 {
		t.Fatal(stderr.String())
	}
	var ids []int
	if err := json.Unmarshal(stdout.Bytes(), &ids); err != nil || len(ids) == 0 {
		t.Fatalf("%q: %v", stdout.String(), err)
	}
	stdout.Reset()
	list := strings.Trim(strings.ReplaceAll(strings.Trim(strings.TrimSpace(mustJSON(ids)), "[]"), " ", ""), ",")
	if code := Main([]string{"tokenize", dir, "--decode", list}, &stdout, &stderr); code != 0 || stdout.String() != text+"\n" {
		t.Fatalf("decode: %q %s", stdout.String(), stderr.String())
	}
	gcompFails(t, "one of them", "tokenize", dir)
	gcompFails(t, "one of them", "tokenize", dir, "--text", "a", "--decode", "1")
	// An empty text is a text (GPT-2's tokenizer adds no BOS: no ids), not a missing flag.
	for _, tc := range []struct{ args, want string }{{"--text", "[]\n"}, {"--decode", "\n"}} {
		stdout.Reset()
		if code := Main([]string{"tokenize", dir, tc.args, ""}, &stdout, &stderr); code != 0 || stdout.String() != tc.want {
			t.Errorf("tokenize %s \"\": %q, %s; want %q", tc.args, stdout.String(), stderr.String(), tc.want)
		}
	}
	gcompFails(t, "encodes to no tokens", "generate", dir, "--prompt", "", "--device", "ref")
	gcompFails(t, "not in the vocabulary", "tokenize", dir, "--decode", "50257")
	gcompFails(t, "has no tokenizer", "tokenize", t.TempDir(), "--text", "a")
	_ = c
}

func mustJSON(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// gcomp dump MODEL_DIR --program prints the prefill or decode graph from config.json alone.
func TestDumpProgram(t *testing.T) {
	dir, _ := lmFolder(t, "llama")
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"dump", dir, "--program", "decode", "--batch", "3"}, &stdout, &stderr); code != 0 ||
		!strings.Contains(stdout.String(), "input %kv_cache.1.v : f32[3,2,64,16]") || !strings.Contains(stdout.String(), "input %tokens : i64[3,1]") {
		t.Fatalf("decode: %s %s", stdout.String()[:min(400, stdout.Len())], stderr.String())
	}
	stdout.Reset()
	if code := Main([]string{"dump", dir, "--program", "prefill", "--prompt-len", "5"}, &stdout, &stderr); code != 0 ||
		!strings.Contains(stdout.String(), "input %tokens : i64[1,5]") {
		t.Fatalf("prefill: %s", stderr.String())
	}
	gcompFails(t, "choose its program", "dump", dir)
	gcompFails(t, "no program", "dump", dir, "--program", "train")
	gcompFails(t, "the context holds 1 to 64", "dump", dir, "--program", "prefill", "--prompt-len", "65")
	// A packed engine's decode program: over the dim batch, decode only, without --batch.
	stdout.Reset()
	if code := Main([]string{"dump", dir, "--program", "decode", "--max-batch", "4"}, &stdout, &stderr); code != 0 ||
		!strings.Contains(stdout.String(), "dims { batch in [1,4] }") || !strings.Contains(stdout.String(), "input %kv_cache.1.v : f32[batch,2,64,16]") {
		t.Fatalf("packed decode: %s %s", stdout.String()[:min(400, stdout.Len())], stderr.String())
	}
	gcompFails(t, "only for --program decode", "dump", dir, "--program", "prefill", "--max-batch", "4")
	gcompFails(t, "only for --program decode", "dump", "--batch", "2", "--max-batch", "4", dir, "--program", "decode")
	gcompFails(t, "want 1 to 1024", "dump", dir, "--program", "decode", "--max-batch", "2000")
}
