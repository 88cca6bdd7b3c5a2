package lmserve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
)

// apiError is an OpenAI error: its HTTP status and the body {"error": {...}}.
type apiError struct {
	Status  int     `json:"-"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *apiError) Error() string { return e.Message }

func badRequest(param, code, format string, args ...any) *apiError {
	e := &apiError{Status: http.StatusBadRequest, Message: fmt.Sprintf(format, args...), Type: "invalid_request_error"}
	if param != "" {
		e.Param = &param
	}
	if code != "" {
		e.Code = &code
	}
	return e
}

func writeError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	json.NewEncoder(w).Encode(map[string]any{"error": e})
}

// A message of a chat.
type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// request is a completion or chat completion request, as decoded and checked.
type request struct {
	Model       string
	Prompt      string // completions: text
	PromptIDs   []int  // completions: token ids instead of text
	Messages    []message
	MaxTokens   int // 0: up to the context's end
	Temperature float64
	TopP        float64
	TopK        int
	Seed        uint64
	Stop        []string
	Stream      bool
}

// rawRequest holds the fields whose JSON types vary; the others decode as they are.
type rawRequest struct {
	Model               *string          `json:"model"`
	Prompt              json.RawMessage  `json:"prompt"`
	Messages            json.RawMessage  `json:"messages"`
	MaxTokens           *json.RawMessage `json:"max_tokens"`
	MaxCompletionTokens *json.RawMessage `json:"max_completion_tokens"`
	Temperature         *float64         `json:"temperature"`
	TopP                *float64         `json:"top_p"`
	TopK                *int             `json:"top_k"`
	Seed                *int64           `json:"seed"`
	Stop                json.RawMessage  `json:"stop"`
	Stream              *bool            `json:"stream"`
	N                   *int             `json:"n"`
}

// Bounds on what one request may ask for.
const (
	maxStops   = 4
	maxStopLen = 256
)

// decodeRequest reads and checks a request body; chat says which endpoint. Fields this server
// does not know are ignored, as OpenAI's clients send some (user, logit_bias, ...); a known field
// of the wrong type or out of range is a 400.
func decodeRequest(body []byte, chat bool) (*request, *apiError) {
	var raw rawRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&raw); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, badRequest(te.Field, "invalid_type", "%s: want a JSON %s, not %s", te.Field, te.Type, te.Value)
		}
		return nil, badRequest("", "invalid_json", "the body is not a JSON object: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, badRequest("", "invalid_json", "the body holds more than one JSON value")
	}
	r := &request{Temperature: 1, TopP: 1}
	if raw.Model != nil {
		r.Model = *raw.Model
	}
	if chat {
		if len(raw.Messages) == 0 || string(raw.Messages) == "null" {
			return nil, badRequest("messages", "missing", "messages is required")
		}
		if err := json.Unmarshal(raw.Messages, &r.Messages); err != nil || len(r.Messages) == 0 {
			return nil, badRequest("messages", "invalid_type", "messages: want a non-empty array of {\"role\": string, \"content\": string}")
		}
		for i, m := range r.Messages {
			if m.Role == "" {
				return nil, badRequest(fmt.Sprintf("messages[%d].role", i), "missing", "messages[%d] has no role", i)
			}
		}
	} else if e := decodePrompt(raw.Prompt, r); e != nil {
		return nil, e
	}
	mt := raw.MaxTokens
	if mt == nil {
		mt = raw.MaxCompletionTokens
	}
	if mt != nil && string(*mt) != "null" {
		var n int64
		if err := json.Unmarshal(*mt, &n); err != nil {
			return nil, badRequest("max_tokens", "invalid_type", "max_tokens: want an integer")
		}
		if n < 1 || n > math.MaxInt32 {
			return nil, badRequest("max_tokens", "invalid_value", "max_tokens %d: want at least 1", n)
		}
		r.MaxTokens = int(n)
	} else if !chat {
		r.MaxTokens = 16 // OpenAI's default for completions
	}
	if raw.Temperature != nil {
		if t := *raw.Temperature; t < 0 || t > 2 {
			return nil, badRequest("temperature", "invalid_value", "temperature %v: want a number in [0, 2]", t)
		}
		r.Temperature = *raw.Temperature
	}
	if raw.TopP != nil {
		if p := *raw.TopP; !(p > 0 && p <= 1) {
			return nil, badRequest("top_p", "invalid_value", "top_p %v: want a number in (0, 1]", p)
		}
		r.TopP = *raw.TopP
	}
	if raw.TopK != nil {
		if *raw.TopK < 0 {
			return nil, badRequest("top_k", "invalid_value", "top_k %d: want ≥ 0 (0 keeps every token)", *raw.TopK)
		}
		r.TopK = *raw.TopK
	}
	if raw.Seed != nil {
		r.Seed = uint64(*raw.Seed)
	}
	if raw.N != nil && *raw.N != 1 {
		return nil, badRequest("n", "invalid_value", "n %d: this server returns one choice", *raw.N)
	}
	if raw.Stream != nil {
		r.Stream = *raw.Stream
	}
	if e := decodeStop(raw.Stop, r); e != nil {
		return nil, e
	}
	return r, nil
}

func decodePrompt(raw json.RawMessage, r *request) *apiError {
	if len(raw) == 0 || string(raw) == "null" {
		return badRequest("prompt", "missing", "prompt is required")
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		r.Prompt = text
		return nil
	}
	var texts []string
	if json.Unmarshal(raw, &texts) == nil {
		if len(texts) != 1 {
			return badRequest("prompt", "invalid_value", "prompt: %d texts; this server takes one per request", len(texts))
		}
		r.Prompt = texts[0]
		return nil
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil {
		if len(ids) == 0 {
			return badRequest("prompt", "invalid_value", "prompt: an empty list of token ids")
		}
		r.PromptIDs = ids
		return nil
	}
	return badRequest("prompt", "invalid_type", "prompt: want a string, a list of one string, or a list of token ids")
}

func decodeStop(raw json.RawMessage, r *request) *apiError {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		r.Stop = []string{one}
	} else if json.Unmarshal(raw, &r.Stop) != nil {
		return badRequest("stop", "invalid_type", "stop: want a string or a list of strings")
	}
	if len(r.Stop) > maxStops {
		return badRequest("stop", "invalid_value", "stop: %d sequences; at most %d", len(r.Stop), maxStops)
	}
	for _, s := range r.Stop {
		if s == "" || len(s) > maxStopLen {
			return badRequest("stop", "invalid_value", "stop: a sequence of %d bytes; want 1 to %d", len(s), maxStopLen)
		}
	}
	return nil
}

// stopAt returns where the first stop string starts in text, or -1.
func stopAt(text string, stops []string) int {
	at := -1
	for _, s := range stops {
		if i := strings.Index(text, s); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	return at
}

// held is how many bytes at text's end may begin a stop string, and so are not sent yet.
func held(text string, stops []string) int {
	n := 0
	for _, s := range stops {
		for k := min(len(s)-1, len(text)); k > n; k-- {
			if strings.HasSuffix(text, s[:k]) {
				n = k
				break
			}
		}
	}
	return n
}
