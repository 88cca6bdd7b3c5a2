package lmserve

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/gcomp/gcomp/tensorio"
)

// ChatTemplate renders chat messages into a prompt with a model's chat template.
type ChatTemplate struct {
	src      string
	bos, eos string
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
	t := &ChatTemplate{bos: tokenText(c.BOS), eos: tokenText(c.EOS)}
	if json.Unmarshal(c.Template, &t.src) != nil {
		// A list of named templates: the one named "default".
		var named []struct{ Name, Template string }
		if err := json.Unmarshal(c.Template, &named); err != nil {
			return nil, fmt.Errorf("lmserve: %s: chat_template: want a string or a list of {name, template}", path)
		}
		for _, n := range named {
			if n.Name == "default" {
				t.src = n.Template
			}
		}
		if t.src == "" {
			return nil, fmt.Errorf("lmserve: %s: chat_template: no template named \"default\"", path)
		}
	}
	return t, nil
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
	return "", fmt.Errorf("not yet")
}
