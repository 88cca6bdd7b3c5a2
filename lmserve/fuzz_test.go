package lmserve

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/lm"

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

// FuzzHandler: any body to either endpoint is answered, never a panic: 200 with a completion or
// a stream ending in [DONE], or a 4xx in OpenAI's error shape. The engine is a fake whose logits
// pick a token from the position, so the fuzzer runs fast through the whole HTTP path.
func FuzzHandler(f *testing.F) {
	dir := gpt2Folder(f, "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}")
	folder, err := lm.LoadFolder(dir, 0)
	if err != nil {
		f.Fatal(err)
	}
	V := folder.Model.Vocab
	eng := fakeStepper{2, func(tokens, pos []int) ([][]float32, error) {
		out := make([][]float32, len(pos))
		for b, p := range pos {
			out[b] = make([]float32, V)
			for i := range out[b] { // one candidate: the sampler has nothing to sort
				out[b][i] = float32(math.Inf(-1))
			}
			out[b][(p*7919+tokens[b])%V] = 1
		}
		return out, nil
	}}
	s, err := New(eng, Options{MaxSeq: folder.Model.MaxSeq()})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	chat, err := LoadChatTemplate(dir)
	if err != nil {
		f.Fatal(err)
	}
	srv, err := NewServer(s, Config{Name: "m", Tokenizer: folder.Tokenizer, StopIDs: folder.StopIDs(), Chat: chat})
	if err != nil {
		f.Fatal(err)
	}
	h := srv.Handler()
	for _, b := range []string{
		`{"prompt": "hello", "max_tokens": 3, "stream": true, "stop": ["l"]}`,
		`{"prompt": [1, 2], "temperature": 0.5, "top_k": 2, "seed": 3}`,
		`{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}`,
		`{"prompt": "x", "max_tokens": 0}`, `{}`, `[`,
	} {
		f.Add([]byte(b), false)
		f.Add([]byte(b), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, chatPath bool) {
		path := "/v1/completions"
		if chatPath {
			path = "/v1/chat/completions"
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("POST", path, bytes.NewReader(body)))
		out := w.Body.String()
		switch {
		case w.Code == 200 && strings.HasPrefix(out, "data: "):
			if !strings.HasSuffix(out, "data: [DONE]\n\n") || !strings.Contains(out, `"finish_reason":"`) {
				t.Fatalf("a stream without its end: %q", out)
			}
		case w.Code == 200:
			if !json.Valid([]byte(out)) || !strings.Contains(out, `"finish_reason":"`) {
				t.Fatalf("a response without its finish reason: %q", out)
			}
		case w.Code >= 400 && w.Code < 500:
			var e struct{ Error *apiError }
			if json.Unmarshal([]byte(out), &e) != nil || e.Error == nil || e.Error.Message == "" {
				t.Fatalf("status %d, not OpenAI's error shape: %q", w.Code, out)
			}
		default:
			t.Fatalf("status %d: %q", w.Code, out)
		}
	})
}
