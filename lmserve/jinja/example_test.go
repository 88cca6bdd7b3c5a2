package jinja_test

import (
	"fmt"

	"github.com/gcomp/gcomp/lmserve/jinja"
)

func Example() {
	t, err := jinja.Parse("{% for m in messages %}<|{{ m.role }}|>{{ m.content | trim }}\n{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}")
	if err != nil {
		panic(err)
	}
	s, err := t.Render(map[string]any{
		"messages":              []any{map[string]any{"role": "user", "content": " hi "}},
		"add_generation_prompt": true,
	})
	fmt.Printf("%q %v\n", s, err)
	// Output: "<|user|>hi\n<|assistant|>" <nil>
}
