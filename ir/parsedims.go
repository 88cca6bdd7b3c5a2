package ir

import (
	"strings"

	"github.com/gcomp/gcomp/ir/sym"
)

// parseDims reads `dims { batch in [1,64], seq in [1,2048] }` after its keyword t. It comes once,
// before any value, so that every type can be bounded as it is read.
func (p *parser) parseDims(g *Graph, t token) error {
	if p.dims != nil {
		return p.errAt(t, "dims declared twice")
	}
	if len(g.Values) > 0 {
		return p.errAt(t, "dims { } must come before the graph's values")
	}
	if _, err := p.expect(tPunct, "{"); err != nil {
		return err
	}
	p.dims = sym.Ranges{}
	for {
		n, err := p.next()
		if err != nil {
			return err
		}
		if n.kind == tPunct && n.text == "}" {
			return nil
		}
		if len(g.Dims) > 0 {
			if n.kind != tPunct || n.text != "," {
				return p.errAt(n, "expected ',' or '}' in dims, found %s", describe(n))
			}
			if n, err = p.next(); err != nil {
				return err
			}
		}
		if n.kind != tIdent || !sym.ValidName(n.text) {
			return p.errAt(n, "expected a dim name (a letter or _, then letters, digits or _), found %s", describe(n))
		}
		if _, dup := p.dims[n.text]; dup {
			return p.errAt(n, "dim %s declared twice", n.text)
		}
		if _, err := p.expect(tIdent, "in"); err != nil {
			return err
		}
		if _, err := p.expect(tPunct, "["); err != nil {
			return err
		}
		var r [2]int
		for i := range r {
			if i == 1 {
				if _, err := p.expect(tPunct, ","); err != nil {
					return err
				}
			}
			b, err := p.expect(tNumber, "")
			if err != nil {
				return err
			}
			x, err := p.parseNumber(b)
			if err != nil {
				return err
			}
			v, ok := x.(int)
			if !ok {
				return p.errAt(b, "dim %s: bound %s is not an integer", n.text, b.text)
			}
			r[i] = v
		}
		if _, err := p.expect(tPunct, "]"); err != nil {
			return err
		}
		d := Dim{n.text, r[0], r[1]}
		if msg := checkDim(d); msg != "" {
			return p.errAt(n, "%s", msg)
		}
		g.Dims = append(g.Dims, d)
		p.dims[d.Name] = sym.Interval{Lo: int64(d.Lo), Hi: int64(d.Hi)}
	}
}

// parseShape reads the dimensions of a type after its "[": integers, or expressions over the
// declared dims (f32[batch*seq,768], f32[(seq+1)/2]). It reads characters, not tokens, since an
// expression's operators are no tokens of the rest of the language.
func (p *parser) parseShape(d DType) (Type, error) {
	var dims []sym.Expr
	shape := Shape{}
	static := true
	for {
		p.skipSpace()
		at := token{line: p.line, col: p.col}
		if p.pos < len(p.src) && p.src[p.pos] == ']' && len(dims) == 0 {
			p.advance(1)
			break
		}
		end, depth := p.pos, 0
		for ; end < len(p.src); end++ {
			c := p.src[end]
			if c == '(' {
				depth++
			} else if c == ')' {
				depth--
			}
			if depth <= 0 && (c == ',' || c == ']') || c == '\n' || c == '{' || c == '}' {
				break
			}
		}
		text := strings.TrimRight(p.src[p.pos:end], " \t\r")
		at.text, at.kind = text, tNumber
		if end == len(p.src) || p.src[end] != ',' && p.src[end] != ']' || text == "" {
			if text == "" && end < len(p.src) {
				at.text = p.src[end : end+1]
			}
			return Type{}, p.errAt(at, "bad dimension %s", describe(at))
		}
		e, err := sym.Parse(text)
		if err != nil {
			if pe, ok := err.(*sym.ParseError); ok {
				at.col += pe.Off
			}
			return Type{}, p.errAt(at, "bad dimension %q: %v", text, err)
		}
		if n, ok := e.IsConst(); ok {
			if n < 0 {
				return Type{}, p.errAt(at, "bad dimension %s", describe(at))
			}
			shape = append(shape, int(n))
		} else {
			for _, s := range e.Symbols() {
				if _, ok := p.dims[s]; !ok {
					in := ""
					if text != s {
						in = " (in " + text + ")"
					}
					return Type{}, p.errAt(at, "dim %s is not declared in the graph's dims { }%s", s, in)
				}
			}
			lo, hi, err := e.Range(p.dims)
			switch {
			case err != nil:
				return Type{}, p.errAt(at, "dimension %s: %v", text, err)
			case lo < 0:
				return Type{}, p.errAt(at, "dimension %s can be as small as %d over the declared dims", text, lo)
			case hi > MaxElements:
				return Type{}, p.errAt(at, "dimension %s can be as large as %d, over 2^31-1", text, hi)
			}
			shape = append(shape, int(hi))
			static = false
		}
		dims = append(dims, e)
		p.advance(end - p.pos)
		c := p.src[p.pos]
		p.advance(1)
		if c == ']' {
			break
		}
	}
	t := Type{DType: d, Shape: shape}
	if !static {
		t.Sym = dims
	}
	return t, nil
}

func (p *parser) skipSpace() {
	for p.pos < len(p.src) && strings.IndexByte(" \t\r\n", p.src[p.pos]) >= 0 {
		p.advance(1)
	}
}
