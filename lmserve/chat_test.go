package lmserve

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/tokenizer"
)

// Chat templates as models ship them render as jinja2 renders them for transformers
// (testdata/chat_templates.json, written by testdata/chat_templates.py), raise_exception included.
func TestChatTemplates(t *testing.T) {
	data, err := os.ReadFile("testdata/chat_templates.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Template, Conversation, Source, Want, Error string
		Messages                                    []message
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Template+"/"+c.Conversation, func(t *testing.T) {
			ct := newChatTemplate(c.Source, "<s>", "</s>")
			got, err := ct.Render(c.Messages)
			switch {
			case c.Error != "":
				if err == nil || !strings.Contains(err.Error(), c.Error) {
					t.Errorf("got %q, %v; want the error %q", got, err, c.Error)
				}
			case err != nil:
				t.Errorf("error %v; want %q", err, c.Want)
			case got != c.Want:
				t.Errorf("got\n%q\nwant\n%q", got, c.Want)
			}
		})
	}
}

// Templates this renderer cannot read are an error naming what it lacks, never a panic.
func TestChatTemplateUnsupported(t *testing.T) {
	msgs := []message{{Role: "user", Content: "hi"}}
	for _, c := range []struct{ src, want string }{
		{"{% macro f() %}x{% endmacro %}", "macro"},
		{"{{ strftime_now('%Y') }}", "strftime_now"},
		{"{{ messages | map(attribute='role') }}", "filter map"},
		{"{% if true %}x", "not closed"},
		{"{% endfor %}", "without its opening tag"},
		{"{{ 'a' ", "unclosed"},
		{"{{ " + strings.Repeat("(", 500) + "1" + strings.Repeat(")", 500) + " }}", "nested deeper"},
		{strings.Repeat("{% if true %}", 500), "nested deeper"},
		{"{% set ns = namespace(a='xxxxxxxx') %}{% for i in [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1] %}{% set ns.a = ns.a + ns.a %}{% endfor %}", "too much"},
		{"{{ 1 / 0 }}", "division by zero"},
		{"{{ undefined_thing.x }}", "undefined"},
	} {
		_, err := newChatTemplate(c.src, "", "").Render(msgs)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v; want an error with %q", c.src, err, c.want)
		}
	}
}

// POST /v1/chat/completions renders the folder's template and answers in the chat shapes.
func TestChatCompletions(t *testing.T) {
	const chatml = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
	dir := gpt2Folder(t, chatml)
	ts, _, f := testServer(t, dir, 2)
	prompt := "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"
	ids, err := f.Tokenizer.EncodeWith(prompt, tokenizer.EncodeOptions{SplitSpecial: true})
	if err != nil {
		t.Fatal(err)
	}
	want := greedyText(t, f, prompt, 6)
	status, body := post(t, ts.URL+"/v1/chat/completions", `{"model": "tiny-gpt2", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 6, "temperature": 0}`)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	var resp struct {
		Object  string
		Choices []struct {
			Message      message
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		}
	}
	json.Unmarshal(body, &resp)
	if resp.Object != "chat.completion" || resp.Usage.PromptTokens != len(ids) || resp.Choices[0].Message.Role != "assistant" || resp.Choices[0].Message.Content != want {
		t.Errorf("got %s; want %q from a prompt of %d tokens", body, want, len(ids))
	}
	r, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 6, "temperature": 0, "stream": true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	events := readStream(t, r.Body)
	if role := events[0]["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)["role"]; role != "assistant" || events[0]["object"] != "chat.completion.chunk" {
		t.Errorf("first chunk %v", events[0])
	}
	if text, finish := streamText(t, events); text != want || finish != "length" {
		t.Errorf("streamed %q (%s); want %q", text, finish, want)
	}
	// A template that refuses the messages is a 400.
	os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{"chat_template": "{{ raise_exception('no system role') if messages[0].role == 'system' }}"}`), 0o644)
	ts2, _, _ := testServer(t, dir, 1)
	if status, body := post(t, ts2.URL+"/v1/chat/completions", `{"messages": [{"role": "system", "content": "x"}]}`); status != 400 || !strings.Contains(string(body), "no system role") {
		t.Errorf("a refused conversation: %d %s", status, body)
	}
}

// tokenizer_config.json's chat_template: a string, a list of named templates (the default one),
// absent (no template), or one clear error.
func TestLoadChatTemplate(t *testing.T) {
	msgs := []message{{Role: "user", Content: "hi"}}
	for _, c := range []struct{ name, config, want, err string }{
		{"string", `{"chat_template": "<{{ messages[0].content }}>{{ eos_token }}", "eos_token": {"content": "</s>"}}`, "<hi></s>", ""},
		{"named", `{"chat_template": [{"name": "tool_use", "template": "t"}, {"name": "default", "template": "d{{ bos_token }}"}], "bos_token": "<s>"}`, "d<s>", ""},
		{"absent", `{"bos_token": "<s>"}`, "", ""},
		{"no file", ``, "", ""},
		{"a number", `{"chat_template": 3}`, "", "want a string or a list"},
		{"no default", `{"chat_template": [{"name": "rag", "template": "x"}]}`, "", `no template named "default"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.config != "" {
				os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(c.config), 0o644)
			}
			ct, err := LoadChatTemplate(dir)
			switch {
			case c.err != "":
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "tokenizer_config.json") {
					t.Errorf("error %v; want one naming the file with %q", err, c.err)
				}
			case err != nil:
				t.Fatal(err)
			case c.want == "":
				if ct != nil {
					t.Errorf("a template where there is none")
				}
			default:
				if got, err := ct.Render(msgs); got != c.want || err != nil {
					t.Errorf("%q, %v; want %q", got, err, c.want)
				}
			}
		})
	}
}
