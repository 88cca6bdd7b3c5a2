package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// gcomp serve answers a completion on the address it prints, and a stop drains and exits 0.
func TestServeCommand(t *testing.T) {
	dir, _ := lmFolder(t, "gpt2")
	stop := make(chan struct{})
	serveStop = stop
	defer func() { serveStop = nil }()
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	code := make(chan int)
	go func() {
		c := Main([]string{"serve", dir, "--addr", "127.0.0.1:0", "--device", "ref", "--max-batch", "2", "--name", "tiny"}, pw, &stderr)
		pw.Close()
		code <- c
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no first line: %v", err)
	}
	go io.Copy(io.Discard, pr)
	i := strings.Index(line, "http://")
	if i < 0 {
		t.Fatalf("no address in %q", line)
	}
	url := strings.Fields(line[i:])[0]
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"model": "tiny", "prompt": "Hello", "max_tokens": 4}`))
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(body.Choices) != 1 || body.Usage.CompletionTokens == 0 {
		t.Errorf("status %d, %+v", resp.StatusCode, body)
	}
	close(stop)
	if c := <-code; c != 0 {
		t.Errorf("exit %d after the stop: %s", c, stderr.String())
	}
}

// Bad flags and folders are one message and exit status 1.
func TestServeCommandErrors(t *testing.T) {
	gpt2, _ := lmFolder(t, "gpt2")
	llama, _ := lmFolder(t, "llama")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no batch", []string{gpt2, "--max-batch", "0"}, "--max-batch 0"},
		{"batch too large", []string{gpt2, "--max-batch", "5000"}, "--max-batch 5000"},
		{"negative max-seq", []string{gpt2, "--max-seq", "-1"}, "--max-seq -1"},
		{"no tokenizer", []string{llama, "--device", "ref"}, "has no tokenizer"},
		{"bad address", []string{gpt2, "--device", "ref", "--addr", "127.0.0.1:99999"}, "--addr 127.0.0.1:99999"},
		{"no folder", []string{t.TempDir() + "/none"}, "gcomp serve:"},
		{"no model", nil, "no model"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(append([]string{"serve"}, c.args...), &stdout, &stderr)
			msg := stderr.String()
			if code != 1 || !strings.Contains(msg, c.want) || strings.Count(msg, "\n") != 1 || strings.Contains(msg, "goroutine") {
				t.Errorf("exit %d, stderr %q; want 1 and one line with %q", code, msg, c.want)
			}
		})
	}
}
