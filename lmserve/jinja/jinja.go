package jinja

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// A Template is a parsed template, safe for concurrent Render calls.
type Template struct {
	nodes []node
}

// Parse reads a template's source.
func Parse(src string) (*Template, error) {
	nodes, err := parseTemplate(src)
	if err != nil {
		return nil, err
	}
	return &Template{nodes}, nil
}

// A Func is a function a template may call with positional and keyword arguments.
type Func func(args []any, kw map[string]any) (any, error)

// Render writes the template with vars: strings, bools, ints, float64s, nil, []any,
// map[string]any and Funcs. Maps a template assigns to (namespace attributes) must be its own.
func (t *Template) Render(vars map[string]any) (string, error) {
	r := &renderer{}
	if err := r.nodes(t.nodes, &scope{vars: vars}); err != nil {
		return "", err
	}
	return r.out.String(), nil
}

// Str writes a value as a template prints it.
func Str(v any) string { return str(v) }

// A node of a parsed template.
type node interface{}

type (
	textNode   string
	outputNode struct{ e expr }
	ifNode     struct {
		conds  []expr
		bodies [][]node // len(conds), plus one for else
	}
	forNode struct {
		vars       []string
		iter       expr
		body, els  []node
		filterCond expr // for x in xs if cond
	}
	setNode struct {
		name, attr string
		e          expr
	}
)

// parseTemplate splits src into tags and text and builds the node tree.
func parseTemplate(src string) ([]node, error) {
	type tag struct {
		kind       byte // '{' output, '%' block, 't' text
		body       string
		trimL, trR bool
	}
	var tags []tag
	for len(src) > 0 {
		i := strings.IndexAny(src, "{")
		for i >= 0 && (i+1 >= len(src) || !strings.ContainsRune("{%#", rune(src[i+1]))) {
			j := strings.IndexAny(src[i+1:], "{")
			if j < 0 {
				i = -1
			} else {
				i += 1 + j
			}
		}
		if i < 0 {
			tags = append(tags, tag{kind: 't', body: src})
			break
		}
		if i > 0 {
			tags = append(tags, tag{kind: 't', body: src[:i]})
		}
		open := src[i+1]
		closer := map[byte]string{'{': "}}", '%': "%}", '#': "#}"}[open]
		end := strings.Index(src[i+2:], closer)
		if end < 0 {
			return nil, fmt.Errorf("an unclosed %q", src[i:i+2])
		}
		body := src[i+2 : i+2+end]
		t := tag{kind: open, body: body}
		if strings.HasPrefix(body, "-") {
			t.trimL, t.body = true, t.body[1:]
		}
		if strings.HasSuffix(t.body, "-") {
			t.trR, t.body = true, t.body[:len(t.body)-1]
		}
		tags = append(tags, t)
		src = src[i+2+end+2:]
	}
	// Whitespace control: "-" trims all whitespace beside the tag; a block or comment tag also
	// takes the spaces before it on its line (lstrip_blocks) and one newline after it (trim_blocks).
	// The spaces before a tag are judged on the text as written, before the tag ahead of them
	// trims its newline.
	for k := range tags {
		t := &tags[k]
		if t.kind == 't' || k == 0 || tags[k-1].kind != 't' {
			continue
		}
		p := &tags[k-1].body
		if t.trimL {
			*p = strings.TrimRightFunc(*p, unicode.IsSpace)
		} else if t.kind != '{' {
			if line := strings.LastIndexByte(*p, '\n'); strings.Trim((*p)[line+1:], " \t") == "" && (line >= 0 || k == 1) {
				*p = (*p)[:line+1]
			}
		}
	}
	for k := range tags {
		t := &tags[k]
		if t.kind == 't' || k+1 == len(tags) || tags[k+1].kind != 't' {
			continue
		}
		n := &tags[k+1].body
		if t.trR {
			*n = strings.TrimLeftFunc(*n, unicode.IsSpace)
		} else if t.kind != '{' {
			*n = strings.TrimPrefix(*n, "\n")
		}
	}
	p := &tplParser{}
	for _, t := range tags {
		switch t.kind {
		case 't':
			p.items = append(p.items, item{text: t.body, isText: true})
		case '{':
			e, err := parseExpr(t.body)
			if err != nil {
				return nil, err
			}
			p.items = append(p.items, item{out: e})
		case '%':
			p.items = append(p.items, item{block: strings.TrimSpace(t.body)})
		}
	}
	nodes, stop, err := p.parse()
	if err != nil {
		return nil, err
	}
	if stop != "" {
		return nil, fmt.Errorf("{%% %s %%} without its opening tag", stop)
	}
	return nodes, nil
}

type item struct {
	isText bool
	text   string
	out    expr
	block  string
}

type tplParser struct {
	items []item
	i     int
	depth int
}

// parse reads nodes up to an end/else/elif tag, which it returns.
func (p *tplParser) parse() ([]node, string, error) {
	if p.depth++; p.depth > maxDepth {
		return nil, "", fmt.Errorf("blocks nested deeper than %d", maxDepth)
	}
	defer func() { p.depth-- }()
	var nodes []node
	for p.i < len(p.items) {
		it := p.items[p.i]
		p.i++
		switch {
		case it.isText:
			nodes = append(nodes, textNode(it.text))
		case it.out != nil:
			nodes = append(nodes, outputNode{it.out})
		default:
			word, rest, _ := strings.Cut(it.block, " ")
			rest = strings.TrimSpace(rest)
			switch word {
			case "endif", "endfor", "else", "elif":
				return nodes, it.block, nil
			case "if":
				n, err := p.parseIf(rest)
				if err != nil {
					return nil, "", err
				}
				nodes = append(nodes, n)
			case "for":
				n, err := p.parseFor(rest)
				if err != nil {
					return nil, "", err
				}
				nodes = append(nodes, n)
			case "set":
				lhs, rhs, ok := strings.Cut(rest, "=")
				lhs = strings.TrimSpace(lhs)
				if !ok {
					return nil, "", fmt.Errorf("{%% set %s %%}: block assignments are not supported", rest)
				}
				e, err := parseExpr(rhs)
				if err != nil {
					return nil, "", err
				}
				name, attr, _ := strings.Cut(lhs, ".")
				if !isName(name) || attr != "" && !isName(attr) {
					return nil, "", fmt.Errorf("{%% set %s %%}: cannot assign to %q", rest, lhs)
				}
				nodes = append(nodes, setNode{name, attr, e})
			default:
				return nil, "", fmt.Errorf("{%% %s %%} is not supported", word)
			}
		}
	}
	return nodes, "", nil
}

func (p *tplParser) parseIf(cond string) (node, error) {
	n := ifNode{}
	for {
		c, err := parseExpr(cond)
		if err != nil {
			return nil, err
		}
		body, stop, err := p.parse()
		if err != nil {
			return nil, err
		}
		n.conds, n.bodies = append(n.conds, c), append(n.bodies, body)
		switch {
		case strings.HasPrefix(stop, "elif "):
			cond = stop[5:]
		case stop == "else":
			body, stop, err := p.parse()
			if err != nil {
				return nil, err
			}
			if stop != "endif" {
				return nil, fmt.Errorf("{%% if %%} ... {%% else %%} ends with %q, not endif", stop)
			}
			n.bodies = append(n.bodies, body)
			return n, nil
		case stop == "endif":
			return n, nil
		default:
			return nil, fmt.Errorf("{%% if %s %%} is not closed by endif", cond)
		}
	}
}

func (p *tplParser) parseFor(head string) (node, error) {
	vars, iter, ok := strings.Cut(head, " in ")
	if !ok {
		return nil, fmt.Errorf("{%% for %s %%}: want for NAME in EXPR", head)
	}
	n := forNode{}
	for _, v := range strings.Split(vars, ",") {
		if v = strings.TrimSpace(v); !isName(v) {
			return nil, fmt.Errorf("{%% for %s %%}: %q is not a name", head, v)
		}
		n.vars = append(n.vars, v)
	}
	lx := &lexer{src: iter}
	toks, err := lx.all()
	if err != nil {
		return nil, err
	}
	ep := &exprParser{toks: toks}
	if n.iter, err = ep.parseOr(); err != nil {
		return nil, err
	}
	if ep.peek().s == "if" {
		ep.next()
		if n.filterCond, err = ep.parseExpr(); err != nil {
			return nil, err
		}
	}
	if ep.peek().kind != tEOF {
		return nil, fmt.Errorf("{%% for %s %%}: unexpected %q", head, ep.peek().s)
	}
	body, stop, err := p.parse()
	if err != nil {
		return nil, err
	}
	if stop == "else" {
		if n.els, stop, err = p.parse(); err != nil {
			return nil, err
		}
	}
	if stop != "endfor" {
		return nil, fmt.Errorf("{%% for %s %%} is not closed by endfor", head)
	}
	n.body = body
	return n, nil
}

func isName(s string) bool {
	for i, r := range s {
		if !(r == '_' || unicode.IsLetter(r) || i > 0 && unicode.IsDigit(r)) {
			return false
		}
	}
	return s != ""
}

// Expressions.

type expr interface{}

type (
	lit  struct{ v any }
	name string
	attr struct {
		x    expr
		name string
	}
	index struct{ x, i expr }
	slice struct{ x, lo, hi expr }
	call  struct {
		fn   expr
		args []expr
		kw   map[string]expr
	}
	binary struct {
		op   string
		a, b expr
	}
	unary struct {
		op string
		x  expr
	}
	cond   struct{ c, a, b expr }
	filter struct {
		x    expr
		name string
		args []expr
	}
	test struct {
		x    expr
		name string
		not  bool
		args []expr
	}
	list []expr
	dict struct{ keys, vals []expr }
)

const (
	tEOF = iota
	tName
	tString
	tNumber
	tOp
)

type token struct {
	kind int
	s    string
	v    any
}

type lexer struct {
	src string
	i   int
}

func (l *lexer) all() ([]token, error) {
	var out []token
	for {
		for l.i < len(l.src) && strings.ContainsRune(" \t\r\n", rune(l.src[l.i])) {
			l.i++
		}
		if l.i >= len(l.src) {
			return append(out, token{kind: tEOF}), nil
		}
		c, rest := l.src[l.i], l.src[l.i:]
		switch {
		case c == '\'' || c == '"':
			var b strings.Builder
			j := 1
			for ; j < len(rest) && rest[j] != c; j++ {
				if rest[j] == '\\' && j+1 < len(rest) {
					j++
					switch rest[j] {
					case 'n':
						b.WriteByte('\n')
					case 't':
						b.WriteByte('\t')
					case 'r':
						b.WriteByte('\r')
					default:
						b.WriteByte(rest[j])
					}
					continue
				}
				b.WriteByte(rest[j])
			}
			if j >= len(rest) {
				return nil, fmt.Errorf("an unclosed string in %q", l.src)
			}
			out = append(out, token{kind: tString, v: b.String()})
			l.i += j + 1
		case c >= '0' && c <= '9':
			j := 0
			for j < len(rest) && (rest[j] >= '0' && rest[j] <= '9' || rest[j] == '.') {
				j++
			}
			if n, err := strconv.Atoi(rest[:j]); err == nil {
				out = append(out, token{kind: tNumber, v: n})
			} else if f, err := strconv.ParseFloat(rest[:j], 64); err == nil {
				out = append(out, token{kind: tNumber, v: f})
			} else {
				return nil, fmt.Errorf("a bad number %q", rest[:j])
			}
			l.i += j
		case c == '_' || unicode.IsLetter(rune(c)):
			j := 0
			for j < len(rest) && (rest[j] == '_' || unicode.IsLetter(rune(rest[j])) || unicode.IsDigit(rune(rest[j]))) {
				j++
			}
			out = append(out, token{kind: tName, s: rest[:j]})
			l.i += j
		default:
			op := ""
			for _, o := range []string{"==", "!=", "<=", ">=", "//", "**", "+", "-", "*", "/", "%", "~", "<", ">", "(", ")", "[", "]", "{", "}", ".", ",", ":", "|", "="} {
				if strings.HasPrefix(rest, o) {
					op = o
					break
				}
			}
			if op == "" {
				return nil, fmt.Errorf("an unexpected %q in %q", c, l.src)
			}
			out = append(out, token{kind: tOp, s: op})
			l.i += len(op)
		}
	}
}

type exprParser struct {
	toks  []token
	i     int
	depth int
}

func (p *exprParser) peek() token { return p.toks[p.i] }
func (p *exprParser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}
func (p *exprParser) isOp(s string) bool { t := p.peek(); return t.kind == tOp && t.s == s }
func (p *exprParser) isWord(s string) bool {
	t := p.peek()
	return t.kind == tName && t.s == s
}
func (p *exprParser) expect(s string) error {
	if t := p.next(); t.kind != tOp || t.s != s {
		return fmt.Errorf("expected %q, found %q", s, t.s+fmt.Sprint(t.v))
	}
	return nil
}

func parseExpr(src string) (expr, error) {
	lx := &lexer{src: src}
	toks, err := lx.all()
	if err != nil {
		return nil, err
	}
	p := &exprParser{toks: toks}
	e, err := p.parseExpr()
	if err != nil {
		return nil, fmt.Errorf("%q: %v", strings.TrimSpace(src), err)
	}
	if p.peek().kind != tEOF {
		return nil, fmt.Errorf("%q: unexpected %q", strings.TrimSpace(src), p.peek().s)
	}
	return e, nil
}

// maxDepth bounds the nesting of an expression (a template is read from a file).
const maxDepth = 100

func (p *exprParser) parseExpr() (expr, error) {
	if p.depth++; p.depth > maxDepth {
		return nil, fmt.Errorf("expressions nested deeper than %d", maxDepth)
	}
	defer func() { p.depth-- }()
	a, err := p.parseOr()
	if err != nil || !p.isWord("if") {
		return a, err
	}
	p.next()
	c, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	var b expr = lit{undefined{}}
	if p.isWord("else") {
		p.next()
		if b, err = p.parseExpr(); err != nil {
			return nil, err
		}
	}
	return cond{c, a, b}, nil
}

func (p *exprParser) parseOr() (expr, error) {
	return p.binaryLevel([]string{"or"}, p.parseAnd)
}

func (p *exprParser) parseAnd() (expr, error) {
	return p.binaryLevel([]string{"and"}, p.parseNot)
}

func (p *exprParser) parseNot() (expr, error) {
	if p.isWord("not") {
		p.next()
		x, err := p.parseNot()
		return unary{"not", x}, err
	}
	return p.parseCompare()
}

func (p *exprParser) parseCompare() (expr, error) {
	a, err := p.parseConcat()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		switch {
		case t.kind == tOp && (t.s == "==" || t.s == "!=" || t.s == "<" || t.s == ">" || t.s == "<=" || t.s == ">="):
			p.next()
			b, err := p.parseConcat()
			if err != nil {
				return nil, err
			}
			a = binary{t.s, a, b}
		case p.isWord("in"):
			p.next()
			b, err := p.parseConcat()
			if err != nil {
				return nil, err
			}
			a = binary{"in", a, b}
		case p.isWord("not") && p.toks[p.i+1].kind == tName && p.toks[p.i+1].s == "in":
			p.i += 2
			b, err := p.parseConcat()
			if err != nil {
				return nil, err
			}
			a = unary{"not", binary{"in", a, b}}
		case p.isWord("is"):
			p.next()
			tt := test{x: a}
			if p.isWord("not") {
				p.next()
				tt.not = true
			}
			n := p.next()
			if n.kind != tName {
				return nil, fmt.Errorf("a test name after is, found %q", n.s)
			}
			tt.name = n.s
			if p.isOp("(") {
				p.next()
				if tt.args, _, err = p.parseArgs(); err != nil {
					return nil, err
				}
			}
			a = tt
		default:
			return a, nil
		}
	}
}

func (p *exprParser) parseConcat() (expr, error) {
	return p.binaryLevel([]string{"~"}, p.parseAdd)
}
func (p *exprParser) parseAdd() (expr, error) {
	return p.binaryLevel([]string{"+", "-"}, p.parseMul)
}
func (p *exprParser) parseMul() (expr, error) {
	return p.binaryLevel([]string{"*", "/", "//", "%"}, p.parseUnary)
}

func (p *exprParser) binaryLevel(ops []string, sub func() (expr, error)) (expr, error) {
	a, err := sub()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if (t.kind != tOp && t.kind != tName) || !contains(ops, t.s) {
			return a, nil
		}
		p.next()
		b, err := sub()
		if err != nil {
			return nil, err
		}
		a = binary{t.s, a, b}
	}
}

func contains(v []string, s string) bool {
	for _, x := range v {
		if x == s {
			return true
		}
	}
	return false
}

func (p *exprParser) parseUnary() (expr, error) {
	if p.isOp("-") || p.isOp("+") {
		op := p.next().s
		x, err := p.parseUnary()
		return unary{op, x}, err
	}
	x, err := p.parsePostfix()
	for err == nil && p.isOp("|") {
		p.next()
		n := p.next()
		if n.kind != tName {
			return nil, fmt.Errorf("a filter name after |, found %q", n.s)
		}
		f := filter{x: x, name: n.s}
		if p.isOp("(") {
			p.next()
			f.args, _, err = p.parseArgs()
		}
		x = f
	}
	return x, err
}

func (p *exprParser) parsePostfix() (expr, error) {
	x, err := p.parsePrimary()
	for err == nil {
		switch {
		case p.isOp("."):
			p.next()
			n := p.next()
			if n.kind != tName {
				return nil, fmt.Errorf("a name after '.', found %q", n.s)
			}
			x = attr{x, n.s}
		case p.isOp("["):
			p.next()
			var lo, hi expr
			if !p.isOp(":") {
				if lo, err = p.parseExpr(); err != nil {
					return nil, err
				}
			}
			if p.isOp(":") {
				p.next()
				if !p.isOp("]") {
					if hi, err = p.parseExpr(); err != nil {
						return nil, err
					}
				}
				x = slice{x, lo, hi}
			} else {
				x = index{x, lo}
			}
			err = p.expect("]")
		case p.isOp("("):
			p.next()
			args, kw, e := p.parseArgs()
			x, err = call{x, args, kw}, e
		default:
			return x, nil
		}
	}
	return nil, err
}

// parseArgs reads call arguments after "(" up to ")".
func (p *exprParser) parseArgs() ([]expr, map[string]expr, error) {
	var args []expr
	kw := map[string]expr{}
	for !p.isOp(")") {
		if t := p.peek(); t.kind == tName && p.toks[p.i+1].kind == tOp && p.toks[p.i+1].s == "=" {
			p.i += 2
			e, err := p.parseExpr()
			if err != nil {
				return nil, nil, err
			}
			kw[t.s] = e
		} else {
			e, err := p.parseExpr()
			if err != nil {
				return nil, nil, err
			}
			args = append(args, e)
		}
		if !p.isOp(",") {
			break
		}
		p.next()
	}
	return args, kw, p.expect(")")
}

func (p *exprParser) parsePrimary() (expr, error) {
	t := p.next()
	switch t.kind {
	case tString:
		s := t.v.(string)
		for p.peek().kind == tString { // adjacent literals concatenate
			s += p.next().v.(string)
		}
		return lit{s}, nil
	case tNumber:
		return lit{t.v}, nil
	case tName:
		switch t.s {
		case "true", "True":
			return lit{true}, nil
		case "false", "False":
			return lit{false}, nil
		case "none", "None":
			return lit{nil}, nil
		}
		return name(t.s), nil
	case tOp:
		switch t.s {
		case "(":
			e, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			return e, p.expect(")")
		case "[":
			var l list
			for !p.isOp("]") {
				e, err := p.parseExpr()
				if err != nil {
					return nil, err
				}
				l = append(l, e)
				if !p.isOp(",") {
					break
				}
				p.next()
			}
			return l, p.expect("]")
		case "{":
			var d dict
			for !p.isOp("}") {
				k, err := p.parseExpr()
				if err == nil {
					err = p.expect(":")
				}
				var v expr
				if err == nil {
					v, err = p.parseExpr()
				}
				if err != nil {
					return nil, err
				}
				d.keys, d.vals = append(d.keys, k), append(d.vals, v)
				if !p.isOp(",") {
					break
				}
				p.next()
			}
			return d, p.expect("}")
		}
	}
	if t.kind == tEOF {
		return nil, fmt.Errorf("an expression ends early")
	}
	return nil, fmt.Errorf("unexpected %q", t.s)
}

// Values: nil (none), bool, int, float64, string, []any, map[string]any, undefined, and
// callables.

type undefined struct{}

type scope struct {
	vars   map[string]any
	parent *scope
}

func (s *scope) get(n string) any {
	for ; s != nil; s = s.parent {
		if v, ok := s.vars[n]; ok {
			return v
		}
	}
	return undefined{}
}

// MaxOutput bounds what a template may write, and any string it builds (loops over a few messages write kilobytes).
const MaxOutput = 4 << 20

type renderer struct {
	out   strings.Builder
	steps int
}

func (r *renderer) nodes(ns []node, s *scope) error {
	for _, n := range ns {
		if r.steps++; r.steps > 1_000_000 || r.out.Len() > MaxOutput {
			return fmt.Errorf("the template writes too much")
		}
		switch n := n.(type) {
		case textNode:
			r.out.WriteString(string(n))
		case outputNode:
			v, err := eval(n.e, s)
			if err != nil {
				return err
			}
			r.out.WriteString(str(v))
		case ifNode:
			body, err := n.choose(s)
			if err != nil {
				return err
			}
			if err := r.nodes(body, s); err != nil {
				return err
			}
		case forNode:
			if err := r.loop(n, s); err != nil {
				return err
			}
		case setNode:
			v, err := eval(n.e, s)
			if err != nil {
				return err
			}
			if n.attr == "" {
				s.vars[n.name] = v
			} else if m, ok := s.get(n.name).(map[string]any); ok {
				m[n.attr] = v
			} else {
				return fmt.Errorf("set %s.%s: %s is not a namespace", n.name, n.attr, n.name)
			}
		}
	}
	return nil
}

// choose returns the body of the first true condition, else the else body (or none).
func (n ifNode) choose(s *scope) ([]node, error) {
	for i, c := range n.conds {
		v, err := eval(c, s)
		if err != nil {
			return nil, err
		}
		if truth(v) {
			return n.bodies[i], nil
		}
	}
	if len(n.bodies) > len(n.conds) {
		return n.bodies[len(n.conds)], nil
	}
	return nil, nil
}

func (r *renderer) loop(n forNode, s *scope) error {
	v, err := eval(n.iter, s)
	if err != nil {
		return err
	}
	var items []any
	switch v := v.(type) {
	case []any:
		items = v
	case string:
		for _, c := range v {
			items = append(items, string(c))
		}
	case map[string]any:
		for _, k := range sortedMapKeys(v) {
			items = append(items, k)
		}
	case undefined, nil:
	default:
		return fmt.Errorf("cannot loop over %s", typeName(v))
	}
	if n.filterCond != nil {
		var kept []any
		for _, it := range items {
			inner := &scope{vars: map[string]any{}, parent: s}
			bind(n.vars, it, inner)
			c, err := eval(n.filterCond, inner)
			if err != nil {
				return err
			}
			if truth(c) {
				kept = append(kept, it)
			}
		}
		items = kept
	}
	if len(items) == 0 {
		return r.nodes(n.els, s)
	}
	for i, it := range items {
		inner := &scope{vars: map[string]any{}, parent: s}
		bind(n.vars, it, inner)
		inner.vars["loop"] = map[string]any{
			"index0": i, "index": i + 1, "first": i == 0, "last": i == len(items)-1, "length": len(items),
			"revindex": len(items) - i, "revindex0": len(items) - i - 1,
			"previtem": at(items, i-1), "nextitem": at(items, i+1),
		}
		if err := r.nodes(n.body, inner); err != nil {
			return err
		}
	}
	return nil
}

func at(v []any, i int) any {
	if i < 0 || i >= len(v) {
		return undefined{}
	}
	return v[i]
}

func bind(vars []string, it any, s *scope) {
	if len(vars) == 1 {
		s.vars[vars[0]] = it
		return
	}
	l, _ := it.([]any)
	for k, v := range vars {
		s.vars[v] = at(l, k)
	}
}

func sortedMapKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "none"
	case undefined:
		return "an undefined value"
	case bool:
		return "a boolean"
	case int, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return "a function"
}

func truth(v any) bool {
	switch v := v.(type) {
	case nil, undefined:
		return false
	case bool:
		return v
	case int:
		return v != 0
	case float64:
		return v != 0
	case string:
		return v != ""
	case []any:
		return len(v) > 0
	case map[string]any:
		return len(v) > 0
	}
	return true
}

func str(v any) string {
	switch v := v.(type) {
	case nil:
		return "None"
	case undefined:
		return ""
	case bool:
		if v {
			return "True"
		}
		return "False"
	case string:
		return v
	case int:
		return strconv.Itoa(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func num(v any) (float64, bool) {
	switch v := v.(type) {
	case int:
		return float64(v), true
	case float64:
		return v, true
	case bool:
		if v {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

func eval(e expr, s *scope) (any, error) {
	switch e := e.(type) {
	case lit:
		return e.v, nil
	case name:
		return s.get(string(e)), nil
	case list:
		out := make([]any, len(e))
		for i, x := range e {
			v, err := eval(x, s)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case dict:
		out := map[string]any{}
		for i := range e.keys {
			k, err := eval(e.keys[i], s)
			if err != nil {
				return nil, err
			}
			v, err := eval(e.vals[i], s)
			if err != nil {
				return nil, err
			}
			out[str(k)] = v
		}
		return out, nil
	case attr:
		x, err := eval(e.x, s)
		if err != nil {
			return nil, err
		}
		return member(x, e.name)
	case index:
		x, err := eval(e.x, s)
		if err != nil {
			return nil, err
		}
		i, err := eval(e.i, s)
		if err != nil {
			return nil, err
		}
		return subscript(x, i)
	case slice:
		return evalSlice(e, s)
	case cond:
		c, err := eval(e.c, s)
		if err != nil {
			return nil, err
		}
		if truth(c) {
			return eval(e.a, s)
		}
		return eval(e.b, s)
	case unary:
		x, err := eval(e.x, s)
		if err != nil {
			return nil, err
		}
		if e.op == "not" {
			return !truth(x), nil
		}
		f, ok := num(x)
		if !ok {
			return nil, fmt.Errorf("%s of %s", e.op, typeName(x))
		}
		if e.op == "-" {
			f = -f
		}
		return number(f, x), nil
	case binary:
		return evalBinary(e, s)
	case call:
		return evalCall(e, s)
	case filter:
		return evalFilter(e, s)
	case test:
		return evalTest(e, s)
	}
	return nil, fmt.Errorf("an unknown expression %T", e)
}

// number returns f as an int when the operand was one and f is whole.
func number(f float64, like ...any) any {
	for _, l := range like {
		if _, ok := l.(int); !ok {
			return f
		}
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int(f)
	}
	return f
}

func member(x any, n string) (any, error) {
	switch v := x.(type) {
	case map[string]any:
		if m, ok := v[n]; ok {
			return m, nil
		}
		if n == "items" || n == "keys" || n == "values" || n == "get" {
			return method(x, n), nil
		}
		return undefined{}, nil
	case string:
		return method(x, n), nil
	case undefined:
		return nil, fmt.Errorf("the attribute %s of an undefined value", n)
	}
	return undefined{}, nil
}

func subscript(x, i any) (any, error) {
	switch v := x.(type) {
	case map[string]any:
		if m, ok := v[str(i)]; ok {
			return m, nil
		}
		return undefined{}, nil
	case []any:
		k, ok := i.(int)
		if !ok {
			return nil, fmt.Errorf("a list indexed by %s", typeName(i))
		}
		if k < 0 {
			k += len(v)
		}
		if k < 0 || k >= len(v) {
			return undefined{}, nil
		}
		return v[k], nil
	case string:
		k, ok := i.(int)
		r := []rune(v)
		if k < 0 {
			k += len(r)
		}
		if !ok || k < 0 || k >= len(r) {
			return undefined{}, nil
		}
		return string(r[k]), nil
	case undefined:
		return nil, fmt.Errorf("an undefined value indexed by %s", str(i))
	}
	return undefined{}, nil
}

func evalSlice(e slice, s *scope) (any, error) {
	x, err := eval(e.x, s)
	if err != nil {
		return nil, err
	}
	var n int
	switch v := x.(type) {
	case []any:
		n = len(v)
	case string:
		n = len([]rune(v))
	default:
		return nil, fmt.Errorf("a slice of %s", typeName(x))
	}
	bound := func(b expr, def int) (int, error) {
		if b == nil {
			return def, nil
		}
		v, err := eval(b, s)
		if err != nil {
			return 0, err
		}
		k, ok := v.(int)
		if !ok {
			return 0, fmt.Errorf("a slice bound of %s", typeName(v))
		}
		if k < 0 {
			k += n
		}
		return min(max(k, 0), n), nil
	}
	lo, err := bound(e.lo, 0)
	if err != nil {
		return nil, err
	}
	hi, err := bound(e.hi, n)
	if err != nil {
		return nil, err
	}
	hi = max(hi, lo)
	if v, ok := x.([]any); ok {
		return v[lo:hi], nil
	}
	return string([]rune(x.(string))[lo:hi]), nil
}

func evalBinary(e binary, s *scope) (any, error) {
	a, err := eval(e.a, s)
	if err != nil {
		return nil, err
	}
	switch e.op { // short-circuit, returning the operand as Jinja does
	case "and":
		if !truth(a) {
			return a, nil
		}
		return eval(e.b, s)
	case "or":
		if truth(a) {
			return a, nil
		}
		return eval(e.b, s)
	}
	b, err := eval(e.b, s)
	if err != nil {
		return nil, err
	}
	switch e.op {
	case "~":
		return bounded(str(a) + str(b))
	case "==":
		return equal(a, b), nil
	case "!=":
		return !equal(a, b), nil
	case "in":
		switch c := b.(type) {
		case string:
			return strings.Contains(c, str(a)), nil
		case []any:
			for _, x := range c {
				if equal(x, a) {
					return true, nil
				}
			}
			return false, nil
		case map[string]any:
			_, ok := c[str(a)]
			return ok, nil
		}
		return nil, fmt.Errorf("in %s", typeName(b))
	}
	if e.op == "+" {
		if as, ok := a.(string); ok {
			if bs, ok := b.(string); ok {
				return bounded(as + bs)
			}
		}
		if al, ok := a.([]any); ok {
			if bl, ok := b.([]any); ok {
				if len(al)+len(bl) > MaxOutput {
					return nil, fmt.Errorf("a list of more than %d items", MaxOutput)
				}
				return append(append([]any{}, al...), bl...), nil
			}
		}
	}
	if as, ok := a.(string); ok && e.op != "%" {
		if bs, ok := b.(string); ok {
			switch e.op {
			case "<":
				return as < bs, nil
			case ">":
				return as > bs, nil
			case "<=":
				return as <= bs, nil
			case ">=":
				return as >= bs, nil
			}
		}
	}
	x, ok1 := num(a)
	y, ok2 := num(b)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("%s %s %s", typeName(a), e.op, typeName(b))
	}
	switch e.op {
	case "+":
		return number(x+y, a, b), nil
	case "-":
		return number(x-y, a, b), nil
	case "*":
		return number(x*y, a, b), nil
	case "/":
		if y == 0 {
			return nil, fmt.Errorf("a division by zero")
		}
		return x / y, nil
	case "//", "%":
		if y == 0 {
			return nil, fmt.Errorf("a division by zero")
		}
		if e.op == "//" {
			return number(math.Floor(x/y), a, b), nil
		}
		return number(x-y*math.Floor(x/y), a, b), nil
	case "<":
		return x < y, nil
	case ">":
		return x > y, nil
	case "<=":
		return x <= y, nil
	case ">=":
		return x >= y, nil
	}
	return nil, fmt.Errorf("the operator %s is not supported", e.op)
}

func equal(a, b any) bool {
	x, ok1 := num(a)
	y, ok2 := num(b)
	_, aBool := a.(bool)
	_, bBool := b.(bool)
	if ok1 && ok2 && aBool == bBool {
		return x == y
	}
	switch av := a.(type) {
	case string:
		bv, ok := b.(string)
		return ok && av == bv
	case nil:
		return b == nil
	case undefined:
		_, ok := b.(undefined)
		return ok
	case bool:
		bv, ok := b.(bool)
		return ok && av == bv
	}
	return str(a) == str(b)
}

func evalArgs(es []expr, kw map[string]expr, s *scope) ([]any, map[string]any, error) {
	args := make([]any, len(es))
	for i, e := range es {
		v, err := eval(e, s)
		if err != nil {
			return nil, nil, err
		}
		args[i] = v
	}
	kv := map[string]any{}
	for k, e := range kw {
		v, err := eval(e, s)
		if err != nil {
			return nil, nil, err
		}
		kv[k] = v
	}
	return args, kv, nil
}

func evalCall(e call, s *scope) (any, error) {
	fn, err := eval(e.fn, s)
	if err != nil {
		return nil, err
	}
	args, kw, err := evalArgs(e.args, e.kw, s)
	if err != nil {
		return nil, err
	}
	f, ok := fn.(Func)
	if !ok {
		what := fmt.Sprintf("%v", e.fn)
		if n, ok := e.fn.(name); ok {
			what = string(n)
		} else if a, ok := e.fn.(attr); ok {
			what = "." + a.name
		}
		return nil, fmt.Errorf("the chat template calls %s, which this server does not provide", what)
	}
	return f(args, kw)
}

// method returns x's method n as a builtin, or undefined.
func method(x any, n string) any {
	if m, ok := x.(map[string]any); ok {
		switch n {
		case "items":
			return Func(func([]any, map[string]any) (any, error) {
				var out []any
				for _, k := range sortedMapKeys(m) {
					out = append(out, []any{k, m[k]})
				}
				return out, nil
			})
		case "keys", "values":
			return Func(func([]any, map[string]any) (any, error) {
				var out []any
				for _, k := range sortedMapKeys(m) {
					out = append(out, map[bool]any{true: k, false: m[k]}[n == "keys"])
				}
				return out, nil
			})
		case "get":
			return Func(func(args []any, _ map[string]any) (any, error) {
				if len(args) == 0 {
					return nil, fmt.Errorf("get() takes a key")
				}
				if v, ok := m[str(args[0])]; ok {
					return v, nil
				}
				if len(args) > 1 {
					return args[1], nil
				}
				return nil, nil
			})
		}
		return undefined{}
	}
	sv := x.(string)
	arg := func(args []any, i int, def string) string {
		if i < len(args) {
			return str(args[i])
		}
		return def
	}
	strFn := map[string]func(args []any) any{
		"strip": func(a []any) any { return trimWith(sv, a, strings.Trim, strings.TrimSpace) },
		"lstrip": func(a []any) any {
			return trimWith(sv, a, strings.TrimLeft, func(s string) string { return strings.TrimLeftFunc(s, unicode.IsSpace) })
		},
		"rstrip": func(a []any) any {
			return trimWith(sv, a, strings.TrimRight, func(s string) string { return strings.TrimRightFunc(s, unicode.IsSpace) })
		},
		"upper":      func([]any) any { return strings.ToUpper(sv) },
		"lower":      func([]any) any { return strings.ToLower(sv) },
		"title":      func([]any) any { return strings.Title(sv) },
		"startswith": func(a []any) any { return strings.HasPrefix(sv, arg(a, 0, "")) },
		"endswith":   func(a []any) any { return strings.HasSuffix(sv, arg(a, 0, "")) },
		"replace":    func(a []any) any { return strings.ReplaceAll(sv, arg(a, 0, ""), arg(a, 1, "")) },
		"split": func(a []any) any {
			var parts []string
			if len(a) == 0 {
				parts = strings.Fields(sv)
			} else {
				parts = strings.Split(sv, arg(a, 0, ""))
			}
			out := make([]any, len(parts))
			for i, p := range parts {
				out[i] = p
			}
			return out
		},
	}[n]
	if strFn == nil {
		return undefined{}
	}
	return Func(func(args []any, _ map[string]any) (any, error) {
		v := strFn(args)
		if r, ok := v.(string); ok {
			return bounded(r)
		}
		return v, nil
	})
}

// bounded refuses a string longer than a template may write (doubling a string in a loop).
func bounded(s string) (any, error) {
	if len(s) > MaxOutput {
		return nil, fmt.Errorf("the template writes too much (a string of %d bytes)", len(s))
	}
	return s, nil
}

func trimWith(s string, args []any, cut func(string, string) string, space func(string) string) string {
	if len(args) > 0 && args[0] != nil {
		return cut(s, str(args[0]))
	}
	return space(s)
}

func evalFilter(e filter, s *scope) (any, error) {
	x, err := eval(e.x, s)
	if err != nil {
		return nil, err
	}
	args, _, err := evalArgs(e.args, nil, s)
	if err != nil {
		return nil, err
	}
	switch e.name {
	case "trim":
		return strings.TrimSpace(str(x)), nil
	case "upper":
		return strings.ToUpper(str(x)), nil
	case "lower":
		return strings.ToLower(str(x)), nil
	case "string":
		return str(x), nil
	case "length", "count":
		switch v := x.(type) {
		case string:
			return len([]rune(v)), nil
		case []any:
			return len(v), nil
		case map[string]any:
			return len(v), nil
		}
		return nil, fmt.Errorf("the length of %s", typeName(x))
	case "first", "last":
		l, ok := x.([]any)
		if !ok {
			return nil, fmt.Errorf("%s of %s", e.name, typeName(x))
		}
		if e.name == "first" {
			return at(l, 0), nil
		}
		return at(l, len(l)-1), nil
	case "default", "d":
		if _, undef := x.(undefined); undef && len(args) > 0 {
			return args[0], nil
		}
		return x, nil
	case "join":
		l, ok := x.([]any)
		if !ok {
			return nil, fmt.Errorf("join of %s", typeName(x))
		}
		parts := make([]string, len(l))
		for i, v := range l {
			parts[i] = str(v)
		}
		sep := ""
		if len(args) > 0 {
			sep = str(args[0])
		}
		return bounded(strings.Join(parts, sep))
	case "tojson":
		b, err := json.Marshal(jsonable(x))
		return string(b), err
	}
	return nil, fmt.Errorf("the filter %s is not supported", e.name)
}

func jsonable(v any) any {
	if _, ok := v.(undefined); ok {
		return nil
	}
	return v
}

func evalTest(e test, s *scope) (any, error) {
	x, err := eval(e.x, s)
	if err != nil {
		return nil, err
	}
	var r bool
	switch e.name {
	case "defined":
		_, undef := x.(undefined)
		r = !undef
	case "undefined":
		_, r = x.(undefined)
	case "none":
		r = x == nil
	case "string":
		_, r = x.(string)
	case "number":
		_, isBool := x.(bool)
		_, isNum := num(x)
		r = isNum && !isBool
	case "mapping":
		_, r = x.(map[string]any)
	case "sequence", "iterable":
		switch x.(type) {
		case []any, string, map[string]any:
			r = true
		}
	case "true":
		r = x == true
	case "false":
		r = x == false
	case "even", "odd":
		n, ok := x.(int)
		r = ok && (n%2 == 0) == (e.name == "even")
	default:
		return nil, fmt.Errorf("the test %s is not supported", e.name)
	}
	return r != e.not, nil
}
