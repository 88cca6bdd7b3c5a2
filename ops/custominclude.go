package ops

import (
	"strings"
)

// A custom op's CUDA C source must not read files when it is compiled: NVRTC would resolve an
// #include against the working directory, or an absolute path anywhere, and block forever on a
// named pipe. The frontend inlines the headers of the model's folder (frontend.Kernel) and the
// verifier refuses a source that still has an #include. Directives finds them.

// Directive is one preprocessing directive of a C source: `#include "a.h"` is Keyword "include",
// Rest `"a.h"`. Line and EndLine are the 1-based physical lines it spans (a backslash at the end
// of a line continues it).
type Directive struct {
	Line, EndLine int
	Keyword       string
	Rest          string
}

// Include returns the file name a directive reads and whether it is in angle brackets. ok is
// false when the directive reads a file but names it in another way (a macro).
func (d Directive) Include() (name string, angle, ok bool) {
	r := strings.TrimSpace(d.Rest)
	if len(r) >= 2 && r[0] == '"' {
		if i := strings.IndexByte(r[1:], '"'); i >= 0 {
			return r[1 : 1+i], false, strings.TrimSpace(r[2+i:]) == ""
		}
	}
	if len(r) >= 2 && r[0] == '<' {
		if i := strings.IndexByte(r, '>'); i >= 0 {
			return r[1:i], true, strings.TrimSpace(r[i+1:]) == ""
		}
	}
	return "", false, false
}

// ReadsFile reports whether the directive makes the preprocessor read a file.
func (d Directive) ReadsFile() bool {
	return d.Keyword == "include" || d.Keyword == "include_next" || d.Keyword == "import"
}

// Directives lists the preprocessing directives of src, skipping comments (a directive inside
// /* */ is none) and joining continued lines. `%:` is the digraph of `#`.
func Directives(src string) []Directive {
	lines := strings.Split(src, "\n")
	var out []Directive
	inComment := false
	for i := 0; i < len(lines); i++ {
		start := i
		logical := lines[i]
		for strings.HasSuffix(strings.TrimRight(logical, "\r"), `\`) && i+1 < len(lines) {
			logical = strings.TrimSuffix(strings.TrimRight(logical, "\r"), `\`) + lines[i+1]
			i++
		}
		code, after := stripComments(logical, inComment)
		inComment = after
		t := strings.TrimLeft(code, " \t\f\v\r")
		switch {
		case strings.HasPrefix(t, "#"):
			t = t[1:]
		case strings.HasPrefix(t, "%:"):
			t = t[2:]
		default:
			continue
		}
		t = strings.TrimLeft(t, " \t\f\v")
		n := 0
		for n < len(t) && (t[n] == '_' || 'a' <= t[n] && t[n] <= 'z' || 'A' <= t[n] && t[n] <= 'Z' || '0' <= t[n] && t[n] <= '9') {
			n++
		}
		out = append(out, Directive{Line: start + 1, EndLine: i + 1, Keyword: t[:n], Rest: strings.TrimSpace(t[n:])})
	}
	return out
}

// stripComments returns line with its comments blanked out, given whether it starts inside a
// /* comment, and whether it ends inside one. String and character literals are kept as they
// are: a "/*" inside one starts nothing.
func stripComments(line string, inComment bool) (string, bool) {
	b := []byte(line)
	for i := 0; i < len(b); i++ {
		switch {
		case inComment:
			if b[i] == '*' && i+1 < len(b) && b[i+1] == '/' {
				b[i], b[i+1] = ' ', ' '
				i++
				inComment = false
			} else {
				b[i] = ' '
			}
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '/':
			for j := i; j < len(b); j++ {
				b[j] = ' '
			}
			return string(b), false
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '*':
			b[i], b[i+1] = ' ', ' '
			i++
			inComment = true
		case b[i] == '"' || b[i] == '\'':
			q := b[i]
			for i++; i < len(b) && b[i] != q; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		}
	}
	return string(b), inComment
}
