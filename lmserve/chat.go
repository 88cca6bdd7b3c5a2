package lmserve

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/gcomp/gcomp/lmserve/jinja"
	"github.com/gcomp/gcomp/tensorio"
)

// ChatTemplate renders chat messages into a prompt with a model's chat template.
type ChatTemplate struct {
	bos, eos string
	t        *jinja.Template
	err      error // why the template cannot be rendered
}

// maxConfigBytes bounds tokenizer_config.json (Llama 3's is 50 KB; a vocabulary can be inline).
const maxConfigBytes = 64 << 20

// LoadChatTemplate reads dir/tokenizer_config.json's chat_template; nil, nil when the folder
// has none.
func LoadChatTemplate(dir string) (*ChatTemplate, error) {
	path := filepath.Join(dir, "tokenizer_config.json")
	if !exists(path) {
		return nil, nil
	}
	data, err := tensorio.ReadFile(path, maxConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("lmserve: %v", err)
	}
	var c struct {
		Template json.RawMessage `json:"chat_template"`
		BOS      json.RawMessage `json:"bos_token"`
		EOS      json.RawMessage `json:"eos_token"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("lmserve: %s: %v", path, err)
	}
	if len(c.Template) == 0 || string(c.Template) == "null" {
		return nil, nil
	}
	var src string
	if json.Unmarshal(c.Template, &src) != nil {
		// A list of named templates: the one named "default".
		var named []struct{ Name, Template string }
		if err := json.Unmarshal(c.Template, &named); err != nil {
			return nil, fmt.Errorf("lmserve: %s: chat_template: want a string or a list of {name, template}", path)
		}
		for _, n := range named {
			if n.Name == "default" {
				src = n.Template
			}
		}
		if src == "" {
			return nil, fmt.Errorf("lmserve: %s: chat_template: no template named \"default\"", path)
		}
	}
	return newChatTemplate(src, tokenText(c.BOS), tokenText(c.EOS)), nil
}

// newChatTemplate parses src; a template it cannot read refuses every chat request saying why.
func newChatTemplate(src, bos, eos string) *ChatTemplate {
	t := &ChatTemplate{bos: bos, eos: eos}
	if t.t, t.err = jinja.Parse(src); t.err != nil {
		t.err = fmt.Errorf("the model's chat template cannot be rendered: %v", t.err)
	}
	return t
}

// tokenText reads a special token written as a string or as {"content": ...}.
func tokenText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct{ Content string }
	json.Unmarshal(raw, &o)
	return o.Content
}

// Render writes messages as the prompt the model was trained on, ending with the assistant's turn.
func (c *ChatTemplate) Render(messages []message) (string, error) {
	if c.err != nil {
		return "", c.err
	}
	msgs := make([]any, len(messages))
	for i, m := range messages {
		msgs[i] = map[string]any{"role": m.Role, "content": m.Content}
	}
	vars := map[string]any{
		"messages": msgs, "bos_token": c.bos, "eos_token": c.eos, "add_generation_prompt": true,
		"raise_exception": jinja.Func(func(args []any, _ map[string]any) (any, error) {
			if len(args) == 0 {
				return nil, fmt.Errorf("the chat template refuses the messages")
			}
			return nil, fmt.Errorf("the chat template refuses the messages: %s", jinja.Str(args[0]))
		}),
		"namespace": jinja.Func(func(_ []any, kw map[string]any) (any, error) { return kw, nil }),
	}
	return c.t.Render(vars)
}
