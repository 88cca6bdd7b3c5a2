package sym

import (
	"fmt"
	"strconv"
)

// ParseError is a syntax error at byte offset Off of the parsed text.
type ParseError struct {
	Off int
	Msg string
}

func (e *ParseError) Error() string { return e.Msg }

// Parse reads an expression in the .gir syntax:
//
//	expr  = term {("+" | "-") term}
//	term  = unary {("*" | "/" | "%") unary}      the right side of / and % is a positive constant
//	unary = "-" unary | number | name | "(" expr ")"
func Parse(s string) (Expr, error) {
	p := &exprParser{s: s}
	e, err := p.expr(0)
	if err != nil {
		return Expr{}, err
	}
	p.space()
	if p.i < len(s) {
		return Expr{}, p.errf("unexpected %q in %q", s[p.i], s)
	}
	if e.ovf {
		return Expr{}, &ParseError{0, fmt.Sprintf("%q overflows int64", s)}
	}
	return e, nil
}

type exprParser struct {
	s string
	i int
}

func (p *exprParser) errf(format string, args ...any) error {
	return &ParseError{p.i, fmt.Sprintf(format, args...)}
}

func (p *exprParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// depth limits nesting so that hostile input cannot exhaust the stack.
const maxDepth = 64

func (p *exprParser) expr(depth int) (Expr, error) {
	e, err := p.term(depth)
	for err == nil {
		p.space()
		if p.i == len(p.s) || p.s[p.i] != '+' && p.s[p.i] != '-' {
			break
		}
		op := p.s[p.i]
		p.i++
		var f Expr
		if f, err = p.term(depth); op == '+' {
			e = Add(e, f)
		} else {
			e = Sub(e, f)
		}
	}
	return e, err
}

func (p *exprParser) term(depth int) (Expr, error) {
	e, err := p.unary(depth)
	for err == nil {
		p.space()
		if p.i == len(p.s) || p.s[p.i] != '*' && p.s[p.i] != '/' && p.s[p.i] != '%' {
			break
		}
		op, at := p.s[p.i], p.i
		p.i++
		var f Expr
		if f, err = p.unary(depth); err != nil {
			break
		}
		if op == '*' {
			e = Mul(e, f)
			continue
		}
		d, ok := f.IsConst()
		if !ok || d <= 0 {
			return Expr{}, &ParseError{at, fmt.Sprintf("%c by %s: the divisor must be a positive constant", op, f)}
		}
		if op == '/' {
			e = Div(e, d)
		} else {
			e = Mod(e, d)
		}
	}
	return e, err
}

func (p *exprParser) unary(depth int) (Expr, error) {
	if depth > maxDepth {
		return Expr{}, p.errf("expression nested too deeply")
	}
	p.space()
	if p.i == len(p.s) {
		return Expr{}, p.errf("expected a dimension, found the end of %q", p.s)
	}
	c := p.s[p.i]
	switch {
	case c == '-':
		p.i++
		e, err := p.unary(depth + 1)
		return Scale(e, -1), err
	case c == '(':
		p.i++
		e, err := p.expr(depth + 1)
		if err != nil {
			return e, err
		}
		p.space()
		if p.i == len(p.s) || p.s[p.i] != ')' {
			return Expr{}, p.errf("expected ')' in %q", p.s)
		}
		p.i++
		return e, nil
	case '0' <= c && c <= '9':
		j := p.i
		for j < len(p.s) && '0' <= p.s[j] && p.s[j] <= '9' {
			j++
		}
		n, err := strconv.ParseInt(p.s[p.i:j], 10, 64)
		if err != nil {
			return Expr{}, p.errf("integer %s is too large", p.s[p.i:j])
		}
		p.i = j
		return Const(n), nil
	case isNameStart(c):
		j := p.i
		for j < len(p.s) && (isNameStart(p.s[j]) || '0' <= p.s[j] && p.s[j] <= '9') {
			j++
		}
		name := p.s[p.i:j]
		p.i = j
		return Sym(name), nil
	}
	return Expr{}, p.errf("unexpected %q in %q", c, p.s)
}

func isNameStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// ValidName reports whether s can name a dim: a letter or _, then letters, digits or _.
func ValidName(s string) bool {
	if s == "" || !isNameStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isNameStart(s[i]) && (s[i] < '0' || s[i] > '9') {
			return false
		}
	}
	return true
}
