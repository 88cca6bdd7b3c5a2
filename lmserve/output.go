package lmserve

import (
	"fmt"

	"github.com/gcomp/gcomp/tokenizer"
)

// output turns a sequence's tokens into text and OpenAI's response bodies.
type output struct {
	id         int64
	chat       bool
	model      string
	created    int64
	prompt     int // tokens
	completion int // tokens
	dec        *tokenizer.StreamDecoder
	stops      []string
	text       string // decoded so far
	sent       int    // bytes of text yielded
}

// run yields the text as it becomes final, and the finish reason last. Text that may begin a stop
// string is held back until it cannot; a stop string ends the sequence with "stop" and is not
// part of the text. A cancelled sequence (its client gone) yields an error.
func (o *output) run(q *Sequence, yield func(piece, finish string)) error {
	for ev := range q.Events {
		if ev.Finish == FinishCancelled || ev.Finish == FinishError {
			return ev.Err
		}
		if ev.HasToken {
			o.completion++
			if ev.Finish != FinishStop { // a stop id is not text
				piece, err := o.dec.Next(ev.ID)
				if err != nil {
					return err
				}
				o.text += piece
			}
		}
		finish := ev.Finish
		if finish != "" {
			o.text += o.dec.Flush()
		}
		end := len(o.text) - held(o.text, o.stops)
		if i := stopAt(o.text, o.stops); i >= 0 {
			end, finish = i, FinishStop
		} else if finish != "" {
			end = len(o.text)
		}
		piece := o.text[o.sent:max(end, o.sent)]
		o.sent = max(end, o.sent)
		yield(piece, finish)
		if finish != "" {
			return nil
		}
	}
	return fmt.Errorf("lmserve: the sequence ended without a finish reason")
}

func (o *output) object() string {
	if o.chat {
		return "chat.completion"
	}
	return "text_completion"
}

func (o *output) idString() string {
	if o.chat {
		return fmt.Sprintf("chatcmpl-%d", o.id)
	}
	return fmt.Sprintf("cmpl-%d", o.id)
}

// response is the whole answer of a request without stream.
func (o *output) response(text, finish string) map[string]any {
	choice := map[string]any{"index": 0, "finish_reason": finish, "logprobs": nil}
	if o.chat {
		choice["message"] = map[string]any{"role": "assistant", "content": text}
	} else {
		choice["text"] = text
	}
	return map[string]any{
		"id": o.idString(), "object": o.object(), "created": o.created, "model": o.model,
		"choices": []any{choice},
		"usage":   map[string]any{"prompt_tokens": o.prompt, "completion_tokens": o.completion, "total_tokens": o.prompt + o.completion},
	}
}

// delta is one streamed chunk of text; finish is nil until the last.
func (o *output) delta(text string, finish *string) map[string]any {
	if o.chat {
		d := map[string]any{}
		if text != "" {
			d["content"] = text
		}
		return o.chunk(d, finish)
	}
	return map[string]any{
		"id": o.idString(), "object": "text_completion", "created": o.created, "model": o.model,
		"choices": []any{map[string]any{"index": 0, "text": text, "finish_reason": finish, "logprobs": nil}},
	}
}

func (o *output) chunk(delta map[string]any, finish *string) map[string]any {
	return map[string]any{
		"id": o.idString(), "object": "chat.completion.chunk", "created": o.created, "model": o.model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}},
	}
}
