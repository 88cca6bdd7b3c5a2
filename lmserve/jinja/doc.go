// Package jinja renders the subset of Jinja that Hugging Face chat templates use
// (tokenizer_config.json's chat_template), as transformers renders them: with trim_blocks and
// lstrip_blocks on.
//
// Supported: text, {{ expression }}, {% if %}/{% elif %}/{% else %}, {% for x in xs [if c] %}
// with {% else %} and loop.index0, index, first, last, length, {% set x = e %} and
// {% set ns.x = e %} (namespace), {# comments #}, whitespace control with "-"; expressions with
// string, number, list and dict literals, attributes, subscripts and slices, + - * / // % ~,
// comparisons, in and not in, and/or/not, "a if c else b", the tests defined, undefined, none,
// string, number, mapping, sequence, even, odd, the filters trim, upper, lower, string, length,
// first, last, default, join and tojson, and the string and mapping methods templates call
// (strip, split, startswith, get, items, ...). Anything else (macros, call blocks, other
// filters) is an error that names it. Templates come from model folders: nesting, string sizes
// and the output are bounded.
//
//	t, _ := jinja.Parse("{% for m in messages %}<|{{ m.role }}|>{{ m.content | trim }}{% endfor %}")
//	s, _ := t.Render(map[string]any{"messages": []any{map[string]any{"role": "user", "content": " hi "}}})
//	// s == "<|user|>hi"
package jinja
