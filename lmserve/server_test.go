package lmserve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/internal/lmtest"
	"github.com/gcomp/gcomp/lm"
)

// gpt2Folder writes the reference's GPT-2 case with GPT-2's real tokenizer files; template, if
// not empty, goes into tokenizer_config.json as its chat_template.
func gpt2Folder(t testing.TB, template string) string {
	t.Helper()
	r, err := lmtest.ReadReference("../lm/testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := lmtest.WriteFolder(dir, &r.Cases[0], 1); err != nil {
		t.Fatal(err)
	}
	lmtest.AddGPT2Tokenizer(t, "..", dir)
	if template != "" {
		cfg, _ := json.Marshal(map[string]any{"chat_template": template, "eos_token": "<|endoftext|>", "bos_token": "<|endoftext|>"})
		if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), cfg, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// testServer serves dir's model on ref with batch slots.
func testServer(t testing.TB, dir string, batch int) (*httptest.Server, *Server, *lm.Folder) {
	t.Helper()
	f, err := lm.LoadFolder(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Open(f, OpenOptions{Engine: lm.EngineOptions{Device: "ref", Batch: batch}, Name: "tiny-gpt2"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
	})
	return ts, srv, f
}

func post(t testing.TB, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// greedyText is what greedy decoding of prompt gives alone, as text, with its finish reason.
func greedyText(t *testing.T, f *lm.Folder, prompt string, n int) string {
	ids, err := f.Tokenizer.Encode(prompt)
	if err != nil {
		t.Fatal(err)
	}
	e, err := f.Model.Open(lm.EngineOptions{Device: "ref"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var out []int
	for tok, err := range e.Generate(context.Background(), ids, lm.GenerateOptions{MaxNewTokens: n, StopIDs: f.StopIDs()}) {
		if err != nil {
			t.Fatal(err)
		}
		if tok.Stop != lm.StopEOS {
			out = append(out, tok.ID)
		}
	}
	text, err := f.Tokenizer.Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// readStream reads server-sent events: the data of each, up to [DONE] (which must come last).
func readStream(t testing.TB, r io.Reader) []map[string]any {
	t.Helper()
	return readEvents(t, r, nil)
}

// readStreamTimed is readStream calling tick as each chunk with text arrives.
func readStreamTimed(t testing.TB, resp *http.Response, tick func()) []map[string]any {
	return readEvents(t, resp.Body, tick)
}

func readEvents(t testing.TB, r io.Reader, tick func()) []map[string]any {
	var events []map[string]any
	sc := bufio.NewScanner(r)
	done := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		if done {
			t.Fatalf("%q after [DONE]", line)
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not an event: %q", line)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		events = append(events, ev)
		if tick != nil && strings.Contains(data, `"text":"`) && !strings.Contains(data, `"text":""`) {
			tick()
		}
	}
	if !done {
		t.Fatalf("the stream ended without [DONE] after %d events", len(events))
	}
	return events
}

// streamText joins the streamed text and returns the finish reason of the last chunk (the only
// one with a finish reason).
func streamText(t testing.TB, events []map[string]any) (string, string) {
	t.Helper()
	var text strings.Builder
	finish := ""
	for i, ev := range events {
		if ev["error"] != nil {
			t.Fatalf("an error event: %v", ev["error"])
		}
		c := ev["choices"].([]any)[0].(map[string]any)
		if s, ok := c["text"].(string); ok {
			text.WriteString(s)
		}
		if d, ok := c["delta"].(map[string]any); ok {
			if s, ok := d["content"].(string); ok {
				text.WriteString(s)
			}
		}
		if r, ok := c["finish_reason"].(string); ok {
			if i != len(events)-1 {
				t.Fatalf("finish_reason %q on chunk %d of %d", r, i, len(events))
			}
			finish = r
		}
	}
	return text.String(), finish
}

// A completion, whole and streamed, is the text greedy decoding gives alone; a stop string cuts
// it where the string starts.
func TestCompletions(t *testing.T) {
	ts, _, f := testServer(t, gpt2Folder(t, ""), 2)
	const prompt = "The quick brown fox"
	want := greedyText(t, f, prompt, 12)
	status, body := post(t, ts.URL+"/v1/completions", `{"model": "tiny-gpt2", "prompt": "The quick brown fox", "max_tokens": 12, "temperature": 0, "user": "ignored"}`)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	var resp struct {
		Object  string
		Choices []struct {
			Text         string
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	if c := resp.Choices[0]; c.Text != want || c.FinishReason != "length" || resp.Object != "text_completion" || resp.Usage.CompletionTokens != 12 {
		t.Errorf("got %q (%s, %s, %+v); want %q (length)", c.Text, c.FinishReason, resp.Object, resp.Usage, want)
	}

	resp2, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt": "The quick brown fox", "max_tokens": 12, "temperature": 0, "stream": true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	if ct := resp2.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	if text, finish := streamText(t, readStream(t, resp2.Body)); text != want || finish != "length" {
		t.Errorf("streamed %q (%s); want %q (length)", text, finish, want)
	}

	// A stop string: the text up to it, finish_reason "stop", whole and streamed.
	if len(want) < 4 {
		t.Fatalf("the greedy text %q is too short to cut", want)
	}
	stop := want[len(want)/2 : len(want)/2+3]
	cut := want[:strings.Index(want, stop)]
	for _, stream := range []bool{false, true} {
		req := fmt.Sprintf(`{"prompt": %q, "max_tokens": 12, "temperature": 0, "stop": [%q], "stream": %v}`, prompt, stop, stream)
		status, body := post(t, ts.URL+"/v1/completions", req)
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
		var text, finish string
		if stream {
			text, finish = streamText(t, readStream(t, bytes.NewReader(body)))
		} else {
			json.Unmarshal(body, &resp)
			text, finish = resp.Choices[0].Text, resp.Choices[0].FinishReason
		}
		if text != cut || finish != "stop" {
			t.Errorf("stream %v, stop %q: %q (%s); want %q (stop)", stream, stop, text, finish, cut)
		}
	}
}

// Bad requests get a 4xx with OpenAI's error shape, and the server goes on answering.
func TestBadRequests(t *testing.T) {
	ts, _, _ := testServer(t, gpt2Folder(t, ""), 1)
	long := strings.Repeat("hello ", 80)
	for _, c := range []struct {
		name, path, body string
		status           int
		param            string
	}{
		{"invalid JSON", "/v1/completions", `{"prompt": "a",`, 400, ""},
		{"not an object", "/v1/completions", `[1, 2]`, 400, ""},
		{"two values", "/v1/completions", `{"prompt": "a"} {}`, 400, ""},
		{"max_tokens a string", "/v1/completions", `{"prompt": "a", "max_tokens": "ten"}`, 400, "max_tokens"},
		{"max_tokens negative", "/v1/completions", `{"prompt": "a", "max_tokens": -1}`, 400, "max_tokens"},
		{"max_tokens fractional", "/v1/completions", `{"prompt": "a", "max_tokens": 1.5}`, 400, "max_tokens"},
		{"temperature a string", "/v1/completions", `{"prompt": "a", "temperature": "hot"}`, 400, "temperature"},
		{"temperature out of range", "/v1/completions", `{"prompt": "a", "temperature": 5}`, 400, "temperature"},
		{"top_p zero", "/v1/completions", `{"prompt": "a", "top_p": 0}`, 400, "top_p"},
		{"top_k negative", "/v1/completions", `{"prompt": "a", "top_k": -2}`, 400, "top_k"},
		{"stream a string", "/v1/completions", `{"prompt": "a", "stream": "yes"}`, 400, "stream"},
		{"stop a number", "/v1/completions", `{"prompt": "a", "stop": 3}`, 400, "stop"},
		{"five stops", "/v1/completions", `{"prompt": "a", "stop": ["a","b","c","d","e"]}`, 400, "stop"},
		{"no prompt", "/v1/completions", `{"max_tokens": 3}`, 400, "prompt"},
		{"prompt a number", "/v1/completions", `{"prompt": 3}`, 400, "prompt"},
		{"prompt id out of range", "/v1/completions", `{"prompt": [1, 99999999]}`, 400, "prompt"},
		{"prompt over the context", "/v1/completions", fmt.Sprintf(`{"prompt": %q}`, long), 400, "prompt"},
		{"n of 2", "/v1/completions", `{"prompt": "a", "n": 2}`, 400, "n"},
		{"unknown model", "/v1/completions", `{"model": "gpt-5", "prompt": "a"}`, 404, "model"},
		{"oversized body", "/v1/completions", fmt.Sprintf(`{"prompt": %q}`, strings.Repeat("x", DefaultMaxBodyBytes)), 413, ""},
		{"no chat template", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}]}`, 400, "messages"},
		{"messages not a list", "/v1/chat/completions", `{"messages": "hi"}`, 400, "messages"},
		{"no endpoint", "/v1/embeddings", `{}`, 404, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, body := post(t, ts.URL+c.path, c.body)
			var e struct {
				Error *struct {
					Message string
					Type    string
					Param   *string
					Code    *string
				}
			}
			if err := json.Unmarshal(body, &e); err != nil || e.Error == nil || e.Error.Message == "" || e.Error.Type == "" {
				t.Fatalf("status %d, body %s: not OpenAI's error shape", status, body)
			}
			param := ""
			if e.Error.Param != nil {
				param = *e.Error.Param
			}
			if status != c.status || param != c.param {
				t.Errorf("status %d, param %q (%s); want %d, %q", status, param, e.Error.Message, c.status, c.param)
			}
		})
	}
	if status, body := post(t, ts.URL+"/v1/completions", `{"prompt": "still", "max_tokens": 2}`); status != 200 {
		t.Errorf("after the bad requests: status %d: %s", status, body)
	}
}

// GET /v1/models, /healthz and /metrics; draining turns /healthz and new requests to 503.
func TestEndpoints(t *testing.T) {
	ts, srv, _ := testServer(t, gpt2Folder(t, ""), 1)
	get := func(path string) (int, string) {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := get("/v1/models"); status != 200 || !strings.Contains(body, `"id":"tiny-gpt2"`) {
		t.Errorf("/v1/models: %d %s", status, body)
	}
	if status, _ := get("/healthz"); status != 200 {
		t.Errorf("/healthz: %d", status)
	}
	post(t, ts.URL+"/v1/completions", `{"prompt": "a b c", "max_tokens": 3}`)
	_, m := get("/metrics")
	for _, want := range []string{"gcomp_queue_length 0", "gcomp_running_sequences 0", "gcomp_generated_tokens_total 3", "gcomp_time_to_first_token_seconds_count 1", "gcomp_tokens_per_second"} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, m)
		}
	}
	if err := srv.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if status, _ := get("/healthz"); status != 503 {
		t.Errorf("/healthz while draining: %d", status)
	}
	if status, body := post(t, ts.URL+"/v1/completions", `{"prompt": "a"}`); status != 503 || !bytes.Contains(body, []byte(`"error"`)) {
		t.Errorf("a request while draining: %d %s", status, body)
	}
}

// A client that disconnects mid-stream frees its slot: with one slot, a second request that
// waited behind it is answered.
func TestDisconnectFreesSlot(t *testing.T) {
	ts, srv, _ := testServer(t, gpt2Folder(t, ""), 1)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/completions", strings.NewReader(`{"prompt": "a", "max_tokens": 60, "stream": true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n') // the first chunk: the slot is taken
	if err != nil || !strings.HasPrefix(line, "data: {") {
		t.Fatalf("first line %q, %v", line, err)
	}
	second := make(chan int)
	go func() {
		status, _ := post(t, ts.URL+"/v1/completions", `{"prompt": "b", "max_tokens": 2}`)
		second <- status
	}()
	cancel()
	resp.Body.Close()
	if status := <-second; status != 200 {
		t.Errorf("the waiting request: status %d", status)
	}
	if st := srv.s.Metrics().Snapshot(); st.Tokens >= 60+2 {
		t.Errorf("%d tokens generated: the disconnected stream ran to its end", st.Tokens)
	}
}

// Draining lets a running request finish whole while new ones are refused.
func TestDrainFinishesRunning(t *testing.T) {
	ts, srv, _ := testServer(t, gpt2Folder(t, ""), 2)
	resp, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt": "a", "max_tokens": 40, "temperature": 0, "stream": true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	first, _ := r.ReadString('\n')
	drained := make(chan error)
	go func() { drained <- srv.Drain(context.Background()) }()
	for !srv.draining.Load() {
		runtime.Gosched()
	}
	if status, _ := post(t, ts.URL+"/v1/completions", `{"prompt": "b"}`); status != 503 {
		t.Errorf("a request while draining: %d", status)
	}
	events := readStream(t, io.MultiReader(strings.NewReader(first), r))
	if _, finish := streamText(t, events); finish != "length" {
		t.Errorf("the running request ended with %q", finish)
	}
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
}
