package ptx

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Parse parses a PTX module. Errors are *Error values carrying line:col.
func Parse(src string) (m *Module, err error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	defer func() {
		if r := recover(); r != nil {
			pe, ok := r.(*Error)
			if !ok {
				panic(r)
			}
			m, err = nil, pe
		}
	}()
	return p.module(), nil
}

type scope struct {
	names  map[string]string
	ranges map[string]int // register prefix -> count, for %r<N> in this scope
	suffix string
}

type parser struct {
	toks   []token
	i      int
	scopes []*scope
	nblock int
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) failf(pos Pos, format string, args ...any) {
	panic(&Error{pos, fmt.Sprintf(format, args...)})
}

func (p *parser) is(text string) bool {
	t := p.peek()
	return t.kind != tString && t.kind != tEOF && t.text == text
}

func (p *parser) accept(text string) bool {
	if p.is(text) {
		p.i++
		return true
	}
	return false
}

func (p *parser) expect(text string) token {
	t := p.peek()
	if !p.is(text) {
		p.failf(t.pos, "expected %q, found %s", text, describe(t))
	}
	return p.next()
}

func describe(t token) string {
	switch t.kind {
	case tEOF:
		return "end of file"
	case tString:
		return fmt.Sprintf("string %q", t.text)
	}
	return fmt.Sprintf("%q", t.text)
}

func (p *parser) ident() token {
	t := p.next()
	if t.kind != tIdent {
		p.failf(t.pos, "expected a name, found %s", describe(t))
	}
	return t
}

func (p *parser) int() int {
	neg := p.accept("-")
	t := p.next()
	if t.kind != tNum {
		p.failf(t.pos, "expected an integer, found %s", describe(t))
	}
	v, ok := parseInt(t.text)
	if !ok || v > math.MaxInt32 {
		p.failf(t.pos, "bad integer %q", t.text)
	}
	if neg {
		v = -v
	}
	return int(v)
}

// skipLine skips the remaining tokens on the line of the token at pos
// (.loc and .file end at the newline, not at a semicolon).
func (p *parser) skipLine(line int) {
	for p.peek().kind != tEOF && p.peek().pos.Line == line {
		p.i++
	}
}

func (p *parser) skipBraces() {
	depth := 0
	for {
		t := p.next()
		switch {
		case t.kind == tEOF:
			p.failf(t.pos, "unterminated section")
		case t.kind == tPunct && t.text == "{":
			depth++
		case t.kind == tPunct && t.text == "}":
			depth--
			if depth == 0 {
				return
			}
		}
	}
}

func (p *parser) module() *Module {
	m := &Module{}
	for p.peek().kind != tEOF {
		t := p.next()
		if t.kind != tIdent {
			p.failf(t.pos, "unexpected %s at module level", describe(t))
		}
		switch t.text {
		case ".version":
			v := p.next()
			m.Version = v.text
		case ".target":
			for {
				m.Target = append(m.Target, p.ident().text)
				if !p.accept(",") {
					break
				}
			}
		case ".address_size":
			m.AddressSize = p.int()
		case ".file", ".loc":
			p.skipLine(t.pos.Line)
		case ".section":
			p.skipBraces()
		case ".pragma":
			p.next()
			p.expect(";")
		default:
			extern := false
			for t.text == ".visible" || t.text == ".extern" || t.text == ".weak" || t.text == ".common" {
				extern = extern || t.text == ".extern"
				t = p.ident()
			}
			switch t.text {
			case ".entry", ".func":
				f := p.function(t, extern)
				if m.Func(f.Name) != nil {
					if old := m.Func(f.Name); old.HasBody && f.HasBody {
						p.failf(f.Pos, "function %s redefined", f.Name)
					}
					for i, g := range m.Funcs {
						if g.Name == f.Name && f.HasBody {
							m.Funcs[i] = f
						}
					}
					continue
				}
				m.Funcs = append(m.Funcs, f)
			case ".global", ".shared", ".const", ".local":
				vs := p.varDecl(t, true)
				for _, v := range vs {
					v.Extern = extern
				}
				m.Vars = append(m.Vars, vs...)
			default:
				p.failf(t.pos, "unexpected %s at module level", describe(t))
			}
		}
	}
	return m
}

// varDecl parses the rest of a declaration after its state space:
// [.align N] [.v2|.v4] .type name[dims] [= init], name... ;
func (p *parser) varDecl(space token, allowInit bool) []*Var {
	proto := Var{Pos: space.pos, Space: space.text[1:]}
	p.varAttrs(&proto)
	var vs []*Var
	for {
		v := proto
		v.Pos = p.peek().pos
		v.Name = p.declName(p.ident().text)
		v.Dims = p.dims()
		if p.accept("=") {
			if !allowInit {
				p.failf(v.Pos, "initializer not allowed here")
			}
			v.Init = p.initializer()
		}
		vs = append(vs, &v)
		if !p.accept(",") {
			break
		}
	}
	p.expect(";")
	return vs
}

func (p *parser) varAttrs(v *Var) {
	for {
		t := p.peek()
		if t.kind != tIdent || !strings.HasPrefix(t.text, ".") {
			break
		}
		p.i++
		switch {
		case t.text == ".align":
			v.Align = p.int()
			if v.Align <= 0 || v.Align&(v.Align-1) != 0 {
				p.failf(t.pos, "alignment %d is not a power of two", v.Align)
			}
		case t.text == ".v2":
			v.Vec = 2
		case t.text == ".v4":
			v.Vec = 4
		case t.text == ".ptr" || t.text == ".global" || t.text == ".shared" || t.text == ".const" || t.text == ".local":
			// .param .u64 .ptr .global .align 4 p: pointer attributes, informational.
		case TypeSize(t.text[1:]) > 0:
			if v.Type != "" {
				p.failf(t.pos, "two types in declaration")
			}
			v.Type = t.text[1:]
		default:
			p.failf(t.pos, "unexpected %q in declaration", t.text)
		}
	}
	if v.Type == "" {
		p.failf(p.peek().pos, "declaration without a type")
	}
}

func (p *parser) dims() []int {
	var d []int
	for p.accept("[") {
		if p.accept("]") {
			d = append(d, 0)
			continue
		}
		n := p.int()
		if n <= 0 || n > 1<<30 {
			p.failf(p.peek().pos, "bad array size %d", n)
		}
		d = append(d, n)
		p.expect("]")
	}
	return d
}

func (p *parser) initializer() []Operand {
	if p.accept("{") {
		var ops []Operand
		for !p.accept("}") {
			if p.is("{") {
				ops = append(ops, p.initializer()...)
			} else {
				ops = append(ops, p.initOperand())
			}
			if !p.accept(",") {
				p.expect("}")
				break
			}
		}
		return ops
	}
	return []Operand{p.initOperand()}
}

// initOperand is a literal, a variable's address, or generic(var).
func (p *parser) initOperand() Operand {
	if p.is("generic") {
		p.i++
		p.expect("(")
		o := p.operand()
		p.expect(")")
		return o
	}
	return p.operand()
}

func (p *parser) paramList(entry bool) []*Var {
	var vs []*Var
	p.expect("(")
	if p.accept(")") {
		return nil
	}
	for {
		t := p.ident()
		if t.text != ".param" && !(t.text == ".reg" && !entry) {
			p.failf(t.pos, "expected .param, found %s", describe(t))
		}
		v := &Var{Space: t.text[1:]}
		p.varAttrs(v)
		v.Pos = p.peek().pos
		v.Name = p.ident().text
		v.Dims = p.dims()
		vs = append(vs, v)
		if p.accept(")") {
			return vs
		}
		p.expect(",")
	}
}

func (p *parser) function(kw token, extern bool) *Func {
	f := &Func{Pos: kw.pos, Entry: kw.text == ".entry"}
	if !f.Entry && p.is("(") {
		f.Rets = p.paramList(false)
	}
	name := p.ident()
	f.Name, f.Pos = name.text, name.pos
	if p.is("(") {
		f.Params = p.paramList(f.Entry)
	}
	for {
		t := p.peek()
		if t.kind != tIdent {
			break
		}
		p.i++
		switch t.text {
		case ".maxntid", ".reqntid", ".minnctapersm", ".maxnreg", ".maxnctapersm", ".noreturn", ".pragma",
			".maxclusterrank", ".reqnctapercluster", ".explicitcluster":
			var v []int
			if t.text == ".pragma" {
				p.next()
			} else if t.text != ".noreturn" && t.text != ".explicitcluster" {
				for {
					v = append(v, p.int())
					if !p.accept(",") {
						break
					}
				}
			}
			if t.text == ".reqntid" {
				f.ReqNTID = v
			} else if t.text == ".maxntid" {
				f.MaxNTID = v
			}
			p.accept(";")
		default:
			p.failf(t.pos, "unexpected %q in function header", t.text)
		}
	}
	if p.accept(";") {
		return f
	}
	if extern {
		p.failf(p.peek().pos, "extern function %s has a body", f.Name)
	}
	p.expect("{")
	f.HasBody = true
	p.scopes = []*scope{{names: map[string]string{}, ranges: map[string]int{}}}
	p.body(f)
	p.scopes = nil
	return f
}

// declName registers a name declared in the current scope and returns the
// unique name it is known by: names declared in nested { } blocks get a
// suffix so that blocks may reuse names (LLVM's call sequences do).
func (p *parser) declName(n string) string {
	if len(p.scopes) == 0 {
		return n
	}
	s := p.scopes[len(p.scopes)-1]
	s.names[n] = n + s.suffix
	return n + s.suffix
}

func (p *parser) resolve(n string) string {
	for i := len(p.scopes) - 1; i >= 0; i-- {
		s := p.scopes[i]
		if r, ok := s.names[n]; ok {
			return r
		}
		if len(s.ranges) > 0 {
			j := len(n)
			for j > 0 && n[j-1] >= '0' && n[j-1] <= '9' {
				j--
			}
			if j < len(n) && (j == len(n)-1 || n[j] != '0') {
				if cnt, ok := s.ranges[n[:j]]; ok {
					if k, err := strconv.Atoi(n[j:]); err == nil && k < cnt {
						return n[:j] + s.suffix + n[j:]
					}
				}
			}
		}
	}
	return n
}

func (p *parser) body(f *Func) {
	for {
		t := p.next()
		switch {
		case t.kind == tEOF:
			p.failf(t.pos, "missing } at end of function %s", f.Name)
		case t.kind == tPunct && t.text == "}":
			p.scopes = p.scopes[:len(p.scopes)-1]
			if len(p.scopes) == 0 {
				return
			}
		case t.kind == tPunct && t.text == "{":
			p.nblock++
			p.scopes = append(p.scopes, &scope{names: map[string]string{}, ranges: map[string]int{}, suffix: fmt.Sprintf("$b%d$", p.nblock)})
		case t.kind == tPunct && t.text == "@":
			p.inst(f, t.pos, true)
		case t.kind != tIdent:
			p.failf(t.pos, "unexpected %s", describe(t))
		case p.is(":"):
			p.i++
			f.Body = append(f.Body, Stmt{Label: t.text, Pos: t.pos})
		case t.text == ".reg":
			p.regDecl(f, t)
		case t.text == ".local" || t.text == ".shared" || t.text == ".param" || t.text == ".const" || t.text == ".global":
			f.Vars = append(f.Vars, p.varDecl(t, t.text != ".param")...)
		case t.text == ".loc" || t.text == ".file":
			p.skipLine(t.pos.Line)
		case t.text == ".pragma":
			p.next()
			p.expect(";")
		case strings.HasPrefix(t.text, "."):
			p.failf(t.pos, "unexpected directive %q in function body", t.text)
		default:
			p.i--
			p.inst(f, t.pos, false)
		}
	}
}

// MaxRegDecl is the most registers one .reg %name<N> declaration may declare.
const MaxRegDecl = 1 << 20

func (p *parser) regDecl(f *Func, kw token) {
	var v Var
	p.varAttrs(&v)
	if v.Vec != 0 {
		p.failf(kw.pos, "vector registers are not supported")
	}
	for {
		t := p.ident()
		d := &RegDecl{Pos: t.pos, Type: v.Type, Name: t.text}
		if p.accept("<") {
			d.Count = p.int()
			if d.Count <= 0 || d.Count > MaxRegDecl {
				p.failf(t.pos, "bad register count %d for %s in %s (1 to %d per declaration)", d.Count, d.Name, f.Name, MaxRegDecl)
			}
			p.expect(">")
			s := p.scopes[len(p.scopes)-1]
			s.ranges[d.Name] = d.Count
			d.Name += s.suffix
		} else {
			d.Name = p.declName(d.Name)
		}
		f.Regs = append(f.Regs, d)
		if !p.accept(",") {
			break
		}
	}
	p.expect(";")
}

func (p *parser) inst(f *Func, pos Pos, guarded bool) {
	in := &Inst{Pos: pos}
	if guarded {
		in.GuardNeg = p.accept("!")
		in.Guard = p.resolve(p.ident().text)
	}
	op := p.ident()
	if strings.HasPrefix(op.text, ".") {
		p.failf(op.pos, "expected an instruction, found %q", op.text)
	}
	in.Op = op.text
	if in.Guard == "" {
		in.Pos = op.pos
	}
	if !p.accept(";") {
		for {
			in.Args = append(in.Args, p.operand())
			if p.accept(";") {
				break
			}
			p.expect(",")
		}
	}
	f.Body = append(f.Body, Stmt{Pos: in.Pos, Inst: in})
}

func (p *parser) operand() Operand {
	t := p.peek()
	switch {
	case p.accept("["):
		o := Operand{Kind: OpAddr, Pos: t.pos}
		if p.peek().kind == tIdent {
			o.Name = p.resolve(p.next().text)
			if p.accept("+") {
				o.Int = p.signedInt()
			} else if p.is("-") {
				o.Int = p.signedInt()
			}
		} else {
			o.Int = p.signedInt()
		}
		p.expect("]")
		return o
	case p.accept("{"), p.accept("("):
		o := Operand{Kind: OpVec, Pos: t.pos}
		closing := "}"
		if t.text == "(" {
			o.Kind, closing = OpList, ")"
		}
		if p.accept(closing) {
			return o
		}
		for {
			o.Elems = append(o.Elems, p.operand())
			if p.accept(closing) {
				return o
			}
			p.expect(",")
		}
	case p.accept("!"):
		o := Operand{Kind: OpName, Pos: t.pos, Neg: true}
		o.Name = p.resolve(p.ident().text)
		return o
	case t.kind == tIdent:
		p.i++
		o := Operand{Kind: OpName, Pos: t.pos, Name: p.resolve(t.text)}
		if p.accept("|") {
			q := p.ident()
			o = Operand{Kind: OpPair, Pos: t.pos, Elems: []Operand{o, {Kind: OpName, Pos: q.pos, Name: p.resolve(q.text)}}}
		}
		return o
	case t.kind == tNum, t.text == "-":
		return p.number()
	}
	p.failf(t.pos, "expected an operand, found %s", describe(t))
	return Operand{}
}

func (p *parser) signedInt() int64 {
	o := p.number()
	if o.Kind != OpInt {
		p.failf(o.Pos, "expected an integer offset")
	}
	return o.Int
}

func (p *parser) number() Operand {
	neg := p.accept("-")
	t := p.next()
	if t.kind != tNum {
		p.failf(t.pos, "expected a number, found %s", describe(t))
	}
	o := Operand{Pos: t.pos}
	s := t.text
	switch {
	case len(s) == 10 && (s[1] == 'f' || s[1] == 'F') && s[0] == '0':
		v, err := strconv.ParseUint(s[2:], 16, 32)
		if err != nil {
			p.failf(t.pos, "bad float literal %q", s)
		}
		o.Kind, o.Bits, o.F32 = OpFloat, v, true
		if neg {
			o.Bits ^= 1 << 31
		}
	case len(s) == 18 && (s[1] == 'd' || s[1] == 'D') && s[0] == '0':
		v, err := strconv.ParseUint(s[2:], 16, 64)
		if err != nil {
			p.failf(t.pos, "bad double literal %q", s)
		}
		o.Kind, o.Bits = OpFloat, v
		if neg {
			o.Bits ^= 1 << 63
		}
	case strings.ContainsAny(s, ".eE") && !strings.HasPrefix(s, "0x") && !strings.HasPrefix(s, "0X"):
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			p.failf(t.pos, "bad number %q", s)
		}
		if neg {
			v = -v
		}
		o.Kind, o.Bits = OpFloat, math.Float64bits(v)
	default:
		v, ok := parseInt(s)
		if !ok {
			p.failf(t.pos, "bad number %q", s)
		}
		if neg {
			v = -v
		}
		o.Kind, o.Int = OpInt, v
	}
	return o
}

// parseInt parses a PTX integer literal: decimal, 0x hex, 0b binary or 0
// octal, with an optional U suffix. Values up to 2^64-1 wrap to int64.
func parseInt(s string) (int64, bool) {
	s = strings.TrimSuffix(strings.TrimSuffix(s, "U"), "u")
	base := 10
	switch {
	case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X"):
		base, s = 16, s[2:]
	case len(s) > 2 && (s[:2] == "0b" || s[:2] == "0B"):
		base, s = 2, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, s = 8, s[1:]
	}
	v, err := strconv.ParseUint(s, base, 64)
	if err != nil {
		return 0, false
	}
	return int64(v), true
}
