package ir

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gcomp/gcomp/ir/sym"
)

// Parse reads a graph in the .gir text form. file names the source in error messages, which have
// the form "file:line:col: message". Parse checks the syntax and that every value is defined once
// before use; Verify (with the op table's checker) checks the rest.
func Parse(file string, src []byte) (*Graph, error) {
	p := &parser{file: file, src: string(src), line: 1, col: 1}
	g, err := p.parseGraph()
	if err != nil {
		return nil, err
	}
	g.File = file
	return g, nil
}

type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tValue  // %name
	tNumber // integer or float literal, possibly negative
	tString
	tPunct
)

type token struct {
	kind      tokKind
	text      string
	line, col int
}

type parser struct {
	file      string
	src       string
	pos       int
	line, col int
	tok       token
	peeked    bool
	dims      sym.Ranges // the graph's dims statement, once parsed
}

// ParseError is a syntax error with its position.
type ParseError struct {
	File      string
	Line, Col int
	Msg       string
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg) }

func (p *parser) errAt(t token, format string, args ...any) error {
	return &ParseError{p.file, t.line, t.col, fmt.Sprintf(format, args...)}
}

func (p *parser) advance(n int) {
	for i := 0; i < n && p.pos < len(p.src); i++ {
		if p.src[p.pos] == '\n' {
			p.line++
			p.col = 1
		} else {
			p.col++
		}
		p.pos++
	}
}

func isIdentStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isIdentChar(c byte) bool  { return isIdentStart(c) || '0' <= c && c <= '9' || c == '.' }

func (p *parser) next() (token, error) {
	if p.peeked {
		p.peeked = false
		return p.tok, nil
	}
	// Skip white space and comments (# or // to the end of the line).
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			p.advance(1)
		} else if c == '#' || strings.HasPrefix(p.src[p.pos:], "//") {
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.advance(1)
			}
		} else {
			break
		}
	}
	t := token{line: p.line, col: p.col}
	if p.pos >= len(p.src) {
		t.kind = tEOF
		return t, nil
	}
	start := p.pos
	c := p.src[p.pos]
	span := func(n int, k tokKind) (token, error) {
		t.kind, t.text = k, p.src[start:start+n]
		p.advance(n)
		return t, nil
	}
	identLen := func(from int) int {
		n := from
		for start+n < len(p.src) && isIdentChar(p.src[start+n]) {
			n++
		}
		return n
	}
	switch {
	case c == '%':
		n := identLen(1)
		if n == 1 {
			return t, p.errAt(t, "expected a value name after %%")
		}
		return span(n, tValue)
	case isIdentStart(c):
		return span(identLen(0), tIdent)
	case c == '-' || '0' <= c && c <= '9':
		n := 0
		if c == '-' {
			n = 1
			if strings.HasPrefix(p.src[start+1:], "inf") {
				return span(4, tNumber)
			}
		}
		for start+n < len(p.src) {
			d := p.src[start+n]
			if '0' <= d && d <= '9' || d == '.' || d == 'e' || d == 'E' ||
				(d == '+' || d == '-') && (p.src[start+n-1] == 'e' || p.src[start+n-1] == 'E') {
				n++
				continue
			}
			break
		}
		if n == 1 && c == '-' {
			return t, p.errAt(t, "unexpected '-'")
		}
		return span(n, tNumber)
	case c == '"':
		prefix, err := strconv.QuotedPrefix(p.src[start:])
		if err != nil {
			return t, p.errAt(t, "unterminated string")
		}
		return span(len(prefix), tString)
	case strings.IndexByte("{}()[],=:", c) >= 0:
		return span(1, tPunct)
	}
	r, _ := utf8.DecodeRuneInString(p.src[start:])
	return t, p.errAt(t, "unexpected character %q", r)
}

func (p *parser) peek() (token, error) {
	if p.peeked {
		return p.tok, nil
	}
	t, err := p.next()
	if err != nil {
		return t, err
	}
	p.tok, p.peeked = t, true
	return t, nil
}

func describe(t token) string {
	if t.kind == tEOF {
		return "end of file"
	}
	return strconv.Quote(t.text)
}

func (p *parser) expect(kind tokKind, text string) (token, error) {
	t, err := p.next()
	if err != nil {
		return t, err
	}
	if t.kind != kind || text != "" && t.text != text {
		want := text
		if want == "" {
			want = [...]string{"end of file", "a name", "a %value", "a number", "a string", "punctuation"}[kind]
		} else {
			want = strconv.Quote(want)
		}
		return t, p.errAt(t, "expected %s, found %s", want, describe(t))
	}
	return t, nil
}

func (p *parser) parseGraph() (*Graph, error) {
	if _, err := p.expect(tIdent, "graph"); err != nil {
		return nil, err
	}
	name, err := p.expect(tIdent, "")
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(tPunct, "{"); err != nil {
		return nil, err
	}
	g := NewGraph(name.text)
	defs := map[string]*Value{}
	outputs := map[string]bool{}
	define := func(t token, v *Value) error {
		key := t.text[1:]
		if defs[key] != nil {
			return p.errAt(t, "value %s defined twice", t.text)
		}
		if !isNumber(key) {
			v.Name = key
		}
		v.Line = t.line
		defs[key] = v
		g.Append(v)
		return nil
	}
	use := func() (*Value, error) {
		t, err := p.expect(tValue, "")
		if err != nil {
			return nil, err
		}
		v := defs[t.text[1:]]
		if v == nil {
			return nil, p.errAt(t, "undefined value %s", t.text)
		}
		return v, nil
	}
	for {
		t, err := p.next()
		if err != nil {
			return nil, err
		}
		switch {
		case t.kind == tPunct && t.text == "}":
			if t, err := p.next(); err != nil || t.kind != tEOF {
				if err != nil {
					return nil, err
				}
				return nil, p.errAt(t, "unexpected %s after the graph", describe(t))
			}
			return g, nil
		case t.kind == tIdent && (t.text == OpInput || t.text == OpParam):
			vt, err := p.expect(tValue, "")
			if err != nil {
				return nil, err
			}
			if isNumber(vt.text[1:]) {
				return nil, p.errAt(vt, "%s %s needs a name, not a number", t.text, vt.text)
			}
			v := &Value{Op: t.text}
			if _, err := p.expect(tPunct, ":"); err != nil {
				return nil, err
			}
			if v.Type, err = p.parseType(); err != nil {
				return nil, err
			}
			if v.Attrs, err = p.parseOptionalAttrs(); err != nil {
				return nil, err
			}
			if v.Pos, err = p.parseOptionalLoc(); err != nil {
				return nil, err
			}
			if err := define(vt, v); err != nil {
				return nil, err
			}
		case t.kind == tIdent && t.text == "dims":
			if err := p.parseDims(g, t); err != nil {
				return nil, err
			}
		case t.kind == tIdent && t.text == "output":
			name, err := p.expect(tIdent, "")
			if err != nil {
				return nil, err
			}
			if outputs[name.text] {
				return nil, p.errAt(name, "output %s declared twice", name.text)
			}
			outputs[name.text] = true
			if _, err := p.expect(tPunct, "="); err != nil {
				return nil, err
			}
			v, err := use()
			if err != nil {
				return nil, err
			}
			g.SetOutput(name.text, v)
		case t.kind == tValue:
			if _, err := p.expect(tPunct, "="); err != nil {
				return nil, err
			}
			op, err := p.expect(tIdent, "")
			if err != nil {
				return nil, err
			}
			v := &Value{Op: op.text}
			if _, err := p.expect(tPunct, "("); err != nil {
				return nil, err
			}
			for {
				n, err := p.peek()
				if err != nil {
					return nil, err
				}
				if n.kind == tPunct && n.text == ")" {
					p.next()
					break
				}
				if len(v.Args) > 0 {
					if _, err := p.expect(tPunct, ","); err != nil {
						return nil, err
					}
				}
				a, err := use()
				if err != nil {
					return nil, err
				}
				v.Args = append(v.Args, a)
			}
			if v.Attrs, err = p.parseOptionalAttrs(); err != nil {
				return nil, err
			}
			if _, err := p.expect(tPunct, ":"); err != nil {
				return nil, err
			}
			if v.Type, err = p.parseType(); err != nil {
				return nil, err
			}
			if v.Pos, err = p.parseOptionalLoc(); err != nil {
				return nil, err
			}
			if err := define(t, v); err != nil {
				return nil, err
			}
		default:
			return nil, p.errAt(t, "expected a statement (input, param, output or %%value = op(...)), found %s", describe(t))
		}
	}
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func (p *parser) parseType() (Type, error) {
	t, err := p.expect(tIdent, "")
	if err != nil {
		return Type{}, err
	}
	d, ok := ParseDType(t.text)
	if !ok {
		return Type{}, p.errAt(t, "unknown dtype %q", t.text)
	}
	if _, err := p.expect(tPunct, "["); err != nil {
		return Type{}, err
	}
	return p.parseShape(d)
}

func (p *parser) parseOptionalLoc() (string, error) {
	t, err := p.peek()
	if err != nil || t.kind != tIdent || t.text != "loc" {
		return "", err
	}
	p.next()
	if _, err := p.expect(tPunct, "("); err != nil {
		return "", err
	}
	s, err := p.expect(tString, "")
	if err != nil {
		return "", err
	}
	if _, err := p.expect(tPunct, ")"); err != nil {
		return "", err
	}
	return strconv.Unquote(s.text)
}

func (p *parser) parseOptionalAttrs() (Attrs, error) {
	t, err := p.peek()
	if err != nil || t.kind != tPunct || t.text != "{" {
		return nil, err
	}
	p.next()
	attrs := Attrs{}
	for {
		t, err := p.next()
		if err != nil {
			return nil, err
		}
		if t.kind == tPunct && t.text == "}" {
			return attrs, nil
		}
		if len(attrs) > 0 {
			if t.kind != tPunct || t.text != "," {
				return nil, p.errAt(t, "expected ',' or '}' in attributes, found %s", describe(t))
			}
			if t, err = p.next(); err != nil {
				return nil, err
			}
		}
		if t.kind != tIdent {
			return nil, p.errAt(t, "expected an attribute name, found %s", describe(t))
		}
		if _, dup := attrs[t.text]; dup {
			return nil, p.errAt(t, "attribute %s given twice", t.text)
		}
		if _, err := p.expect(tPunct, "="); err != nil {
			return nil, err
		}
		v, err := p.parseAttrValue()
		if err != nil {
			return nil, err
		}
		attrs[t.text] = v
	}
}

func (p *parser) parseAttrValue() (any, error) {
	t, err := p.next()
	if err != nil {
		return nil, err
	}
	switch t.kind {
	case tString:
		return strconv.Unquote(t.text)
	case tNumber:
		return p.parseNumber(t)
	case tIdent:
		switch t.text {
		case "true":
			return true, nil
		case "false":
			return false, nil
		case "inf", "nan":
			return p.parseNumber(t)
		}
		if d, ok := ParseDType(t.text); ok {
			return d, nil
		}
		return nil, p.errAt(t, "bad attribute value %s", describe(t))
	case tPunct:
		if t.text != "[" {
			break
		}
		var nums []any
		isFloat := false
		for {
			n, err := p.next()
			if err != nil {
				return nil, err
			}
			if n.kind == tPunct && n.text == "]" {
				break
			}
			if len(nums) > 0 {
				if n.kind != tPunct || n.text != "," {
					return nil, p.errAt(n, "expected ',' or ']' in list, found %s", describe(n))
				}
				if n, err = p.next(); err != nil {
					return nil, err
				}
			}
			if n.kind != tNumber && !(n.kind == tIdent && (n.text == "inf" || n.text == "nan")) {
				return nil, p.errAt(n, "expected a number in list, found %s", describe(n))
			}
			x, err := p.parseNumber(n)
			if err != nil {
				return nil, err
			}
			_, f := x.(float64)
			isFloat = isFloat || f
			nums = append(nums, x)
		}
		if isFloat {
			fs := make([]float64, len(nums))
			for i, x := range nums {
				if n, ok := x.(int); ok {
					fs[i] = float64(n)
				} else {
					fs[i] = x.(float64)
				}
			}
			return fs, nil
		}
		is := make([]int, len(nums))
		for i, x := range nums {
			is[i] = x.(int)
		}
		return is, nil
	}
	return nil, p.errAt(t, "bad attribute value %s", describe(t))
}

func (p *parser) parseNumber(t token) (any, error) {
	switch t.text {
	case "inf":
		return math.Inf(1), nil
	case "-inf":
		return math.Inf(-1), nil
	case "nan":
		return math.NaN(), nil
	}
	if !strings.ContainsAny(t.text, ".eE") {
		n, err := strconv.Atoi(t.text)
		if err != nil {
			return nil, p.errAt(t, "bad integer %s", t.text)
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(t.text, 64)
	if err != nil {
		return nil, p.errAt(t, "bad number %s", t.text)
	}
	return f, nil
}
