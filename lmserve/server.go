package lmserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gcomp/gcomp/lm"
	"github.com/gcomp/gcomp/tokenizer"
)

// Config describes what a Server serves.
type Config struct {
	// Name is the model's id in requests and responses.
	Name      string
	Tokenizer *tokenizer.Tokenizer
	// StopIDs end a sequence when generated (the model's EOS ids).
	StopIDs []int
	// Chat renders chat messages to a prompt; nil refuses chat completions with a 400.
	Chat *ChatTemplate
	// MaxBodyBytes bounds a request body; DefaultMaxBodyBytes if 0.
	MaxBodyBytes int64
}

// DefaultMaxBodyBytes bounds a request body by default: 1 MiB.
const DefaultMaxBodyBytes = 1 << 20

// A Server answers OpenAI-style completion requests from a Scheduler. Its Handler is safe for
// concurrent use.
type Server struct {
	s        *Scheduler
	cfg      Config
	ids      atomic.Int64
	draining atomic.Bool
	// closeEngine frees the engine Open opened.
	closeEngine func() error
}

// NewServer returns a server over s.
func NewServer(s *Scheduler, cfg Config) (*Server, error) {
	if cfg.Tokenizer == nil {
		return nil, fmt.Errorf("lmserve: the model has no tokenizer: a server needs one to read prompts and write text")
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	return &Server{s: s, cfg: cfg}, nil
}

// Drain stops admitting requests (they get 503) and returns once the running ones have finished
// or ctx ends. Call it before http.Server.Shutdown, which then waits for their responses.
func (v *Server) Drain(ctx context.Context) error {
	v.draining.Store(true)
	return v.s.Drain(ctx)
}

// Handler routes the API's endpoints.
func (v *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/completions", func(w http.ResponseWriter, r *http.Request) { v.complete(w, r, false) })
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { v.complete(w, r, true) })
	mux.HandleFunc("/v1/models", v.models)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if v.draining.Load() {
			http.Error(w, "draining", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		v.s.Metrics().Snapshot().WriteText(w)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{Status: http.StatusNotFound, Message: fmt.Sprintf("no endpoint %s", r.URL.Path), Type: "invalid_request_error"})
	})
	return mux
}

func (v *Server) models(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, &apiError{Status: http.StatusMethodNotAllowed, Message: "GET /v1/models", Type: "invalid_request_error"})
		return
	}
	writeJSON(w, map[string]any{"object": "list", "data": []any{
		map[string]any{"id": v.cfg.Name, "object": "model", "created": 0, "owned_by": "gcomp"},
	}})
}

func writeJSON(w http.ResponseWriter, body any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(body)
}

// prepare reads, checks and tokenizes a request.
func (v *Server) prepare(w http.ResponseWriter, r *http.Request, chat bool) (*request, []int, *apiError) {
	if r.Method != http.MethodPost {
		return nil, nil, &apiError{Status: http.StatusMethodNotAllowed, Message: "use POST", Type: "invalid_request_error"}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, v.cfg.MaxBodyBytes))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, nil, &apiError{Status: http.StatusRequestEntityTooLarge, Message: fmt.Sprintf("the body is over %d bytes", v.cfg.MaxBodyBytes), Type: "invalid_request_error"}
		}
		return nil, nil, badRequest("", "", "reading the body: %v", err)
	}
	req, e := decodeRequest(body, chat)
	if e != nil {
		return nil, nil, e
	}
	if req.Model != "" && req.Model != v.cfg.Name {
		e := badRequest("model", "model_not_found", "the model %q does not exist; this server serves %q", req.Model, v.cfg.Name)
		e.Status = http.StatusNotFound
		return nil, nil, e
	}
	ids := req.PromptIDs
	switch {
	case chat:
		if v.cfg.Chat == nil {
			return nil, nil, badRequest("messages", "no_chat_template", "the model %s has no chat template (tokenizer_config.json's chat_template): use /v1/completions", v.cfg.Name)
		}
		text, err := v.cfg.Chat.Render(req.Messages)
		if err != nil {
			return nil, nil, badRequest("messages", "chat_template_error", "%v", err)
		}
		// The template writes the special tokens itself, as transformers' apply_chat_template.
		ids, err = v.cfg.Tokenizer.EncodeWith(text, tokenizer.EncodeOptions{SplitSpecial: true})
		if err != nil {
			return nil, nil, badRequest("messages", "invalid_value", "%v", err)
		}
	case ids == nil:
		ids, err = v.cfg.Tokenizer.Encode(req.Prompt)
		if err != nil {
			return nil, nil, badRequest("prompt", "invalid_value", "%v", err)
		}
	default:
		for _, id := range ids {
			if id < 0 || id >= v.cfg.Tokenizer.VocabSize() {
				return nil, nil, badRequest("prompt", "invalid_value", "token id %d is outside the vocabulary [0, %d)", id, v.cfg.Tokenizer.VocabSize())
			}
		}
	}
	if len(ids) == 0 {
		return nil, nil, badRequest("prompt", "invalid_value", "the prompt encodes to no tokens")
	}
	if n := v.s.MaxSeq(); len(ids) >= n {
		return nil, nil, badRequest("prompt", "context_length_exceeded", "the prompt has %d tokens; the context holds %d, prompt and completion together", len(ids), n)
	}
	return req, ids, nil
}

// complete answers one completion or chat completion request.
func (v *Server) complete(w http.ResponseWriter, r *http.Request, chat bool) {
	if v.draining.Load() {
		writeError(w, unavailable(ErrDraining))
		return
	}
	req, ids, e := v.prepare(w, r, chat)
	if e != nil {
		writeError(w, e)
		return
	}
	q, err := v.s.Submit(r.Context(), Request{
		Prompt: ids, MaxTokens: req.MaxTokens, StopIDs: v.cfg.StopIDs,
		Sampling: lm.Sampling{Temperature: req.Temperature, TopK: req.TopK, TopP: req.TopP, Seed: req.Seed},
	})
	switch {
	case errors.Is(err, ErrBusy):
		writeError(w, &apiError{Status: http.StatusTooManyRequests, Message: err.Error(), Type: "server_error"})
		return
	case errors.Is(err, ErrDraining):
		writeError(w, unavailable(err))
		return
	case err != nil:
		writeError(w, badRequest("", "invalid_value", "%v", err))
		return
	}
	defer q.Cancel() // a handler that returns early (a stop string) frees the slot
	o := &output{id: v.ids.Add(1), chat: chat, model: v.cfg.Name, created: time.Now().Unix(), prompt: len(ids),
		dec: v.cfg.Tokenizer.NewStreamDecoder(), stops: req.Stop}
	if req.Stream {
		v.stream(w, q, o)
		return
	}
	var text, finish string
	if err := o.run(q, func(piece, fin string) { text, finish = text+piece, fin }); err != nil {
		writeError(w, failure(err))
		return
	}
	writeJSON(w, o.response(text, finish))
}

func unavailable(err error) *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Message: err.Error(), Type: "server_error"}
}

func failure(err error) *apiError {
	if errors.Is(err, ErrDraining) {
		return unavailable(err)
	}
	return &apiError{Status: http.StatusInternalServerError, Message: err.Error(), Type: "server_error"}
}

// stream answers with server-sent events: one chunk per piece of text, the last with its
// finish_reason, then [DONE].
func (v *Server) stream(w http.ResponseWriter, q *Sequence, o *output) {
	fl, _ := w.(http.Flusher)
	started := false
	event := func(body any) {
		data, _ := json.Marshal(body)
		fmt.Fprintf(w, "data: %s\n\n", data)
		if fl != nil {
			fl.Flush()
		}
	}
	send := func(body any) {
		if !started {
			started = true
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Cache-Control", "no-cache")
			w.WriteHeader(http.StatusOK)
			if o.chat { // the role comes first, as OpenAI sends it
				event(o.chunk(map[string]any{"role": "assistant", "content": ""}, nil))
			}
		}
		event(body)
	}
	err := o.run(q, func(piece, finish string) {
		if piece != "" {
			send(o.delta(piece, nil))
		}
		if finish != "" {
			send(o.delta("", &finish))
		}
	})
	if err != nil {
		if !started {
			writeError(w, failure(err))
			return
		}
		event(map[string]any{"error": failure(err)})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}
