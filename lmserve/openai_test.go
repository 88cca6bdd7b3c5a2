package lmserve

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// OpenAI's Node client (npm's openai package) works against the server unchanged: models,
// completions whole and streamed, a streamed chat, and a bad request read as an API error. The
// package is looked for in $GCOMP_OPENAI_JS, else .cache/npm/openai (npm pack openai@5.23.2,
// unpacked: scripts/fetch-openai-js.sh, which make tools runs).
func TestOpenAIClient(t *testing.T) {
	pkg := os.Getenv("GCOMP_OPENAI_JS")
	if pkg == "" {
		pkg = "../.cache/npm/openai"
	}
	if _, err := os.Stat(filepath.Join(pkg, "index.mjs")); err != nil {
		if os.Getenv("GCOMP_REQUIRE_PTXAS") != "" { // CI: make tools fetches it (scripts/fetch-openai-js.sh)
			t.Fatalf("npm's openai package is not unpacked at %s: %v", pkg, err)
		}
		t.Skipf("npm's openai package is not unpacked at %s (npm pack openai@5.23.2; or set GCOMP_OPENAI_JS)", pkg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	pkg, _ = filepath.Abs(pkg)
	const chatml = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
	ts, _, f := testServer(t, gpt2Folder(t, chatml), 2)
	out, err := exec.Command(node, "testdata/openai_client.mjs", pkg, ts.URL+"/v1").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var got struct {
		Models     []string
		Completion struct {
			Text, Finish string
			Usage        struct {
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		Stream, Chat struct{ Text, Finish string }
		Error        struct {
			Status      int
			Param, Type string
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := greedyText(t, f, "The quick brown fox", 6)
	chat := greedyText(t, f, "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n", 4)
	if len(got.Models) != 1 || got.Models[0] != "tiny-gpt2" {
		t.Errorf("models %v", got.Models)
	}
	if got.Completion.Text != want || got.Completion.Finish != "length" || got.Completion.Usage.CompletionTokens != 6 {
		t.Errorf("completion %+v; want %q", got.Completion, want)
	}
	if got.Stream.Text != want || got.Stream.Finish != "length" {
		t.Errorf("stream %+v; want %q", got.Stream, want)
	}
	if got.Chat.Text != chat || got.Chat.Finish != "length" {
		t.Errorf("chat %+v; want %q", got.Chat, chat)
	}
	if got.Error.Status != 400 || got.Error.Param != "max_tokens" || got.Error.Type != "invalid_request_error" {
		t.Errorf("the bad request: %+v", got.Error)
	}
}
