package lmserve

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/gcomp/gcomp/lmserve/jinja"
)

// FuzzDecodeRequest: any body is a request or one 400-class error in OpenAI's shape, never a
// panic, and an accepted request is within the bounds the scheduler relies on.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"prompt": "hi", "max_tokens": 5, "temperature": 0.5, "top_p": 0.9, "top_k": 3, "seed": 7, "stop": ["\n"], "stream": true}`,
		`{"prompt": [1, 2, 3], "stop": "x"}`,
		`{"prompt": ["one"]}`,
		`{"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 3}`,
		`{"prompt": "a", "max_tokens": -1}`, `{"prompt": "a", "max_tokens": "1"}`, `{`, `null`, `[]`, `{"n": 2}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, chat bool) {
		r, e := decodeRequest(body, chat)
		if e != nil {
			if r != nil || e.Status < 400 || e.Status >= 500 || e.Message == "" || e.Type == "" {
				t.Fatalf("error %+v with request %v", e, r)
			}
			if _, err := json.Marshal(map[string]any{"error": e}); err != nil {
				t.Fatal(err)
			}
			return
		}
		if r.MaxTokens < 0 || r.Temperature < 0 || r.TopK < 0 || r.TopP <= 0 || r.TopP > 1 || len(r.Stop) > maxStops {
			t.Fatalf("accepted out of range: %+v", r)
		}
		if chat && len(r.Messages) == 0 {
			t.Fatalf("accepted without a prompt: %+v", r)
		}
	})
}

// FuzzChatTemplate: a template read from a model folder renders or is one error, never a panic
// or an unbounded output.
func FuzzChatTemplate(f *testing.F) {
	data, err := os.ReadFile("testdata/chat_templates.json")
	if err != nil {
		f.Fatal(err)
	}
	var cases []struct{ Source string }
	json.Unmarshal(data, &cases)
	for _, c := range cases {
		f.Add(c.Source)
	}
	f.Add("{% for x in [1,2] %}{% for y in [3] %}{{ x ~ y }}{% endfor %}{% else %}e{% endfor %}")
	msgs := []message{{Role: "system", Content: "s"}, {Role: "user", Content: "u"}}
	f.Fuzz(func(t *testing.T, src string) {
		out, err := newChatTemplate(src, "<s>", "</s>").Render(msgs)
		if err == nil && len(out) > jinja.MaxOutput+len(src) {
			t.Fatalf("%d bytes written", len(out))
		}
	})
}
