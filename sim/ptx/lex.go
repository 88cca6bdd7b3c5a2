package ptx

import "fmt"

// Pos is a position in the PTX text, 1-based.
type Pos struct{ Line, Col int }

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// Error is a parse error at a position.
type Error struct {
	Pos Pos
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("%d:%d: %s", e.Pos.Line, e.Pos.Col, e.Msg) }

type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tNum
	tString
	tPunct
)

type token struct {
	kind tokKind
	text string
	pos  Pos
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || c == '%' || c == '.' || (c|0x20) >= 'a' && (c|0x20) <= 'z'
}

func isIdentChar(c byte) bool {
	return isIdentStart(c) || c >= '0' && c <= '9'
}

// lex splits src into tokens. Identifiers keep their dots ("ld.global.f32",
// "%tid.x") and "::" sub-qualifiers (".shared::cta", ".L2::128B"); numbers keep their letters ("0f3F800000") and are decoded by the
// parser.
func lex(src string) ([]token, error) {
	var toks []token
	line, col := 1, 1
	i := 0
	adv := func(n int) {
		for ; n > 0 && i < len(src); n-- {
			if src[i] == '\n' {
				line++
				col = 1
			} else {
				col++
			}
			i++
		}
	}
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			adv(1)
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				adv(1)
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			start := Pos{line, col}
			adv(2)
			for i < len(src) && !(src[i] == '*' && i+1 < len(src) && src[i+1] == '/') {
				adv(1)
			}
			if i >= len(src) {
				return nil, &Error{start, "unterminated comment"}
			}
			adv(2)
		case c == '"':
			start := Pos{line, col}
			j := i + 1
			for j < len(src) && src[j] != '"' && src[j] != '\n' {
				j++
			}
			if j >= len(src) || src[j] != '"' {
				return nil, &Error{start, "unterminated string"}
			}
			toks = append(toks, token{tString, src[i+1 : j], start})
			adv(j + 1 - i)
		case isIdentStart(c):
			start := Pos{line, col}
			j := i + 1
			for j < len(src) {
				if isIdentChar(src[j]) {
					j++
				} else if src[j] == ':' && j+2 < len(src) && src[j+1] == ':' && isIdentChar(src[j+2]) && src[j+2] != '.' {
					// A sub-qualifier stays in its name: ld.global.L1::evict_last.f32.
					j += 3
				} else {
					break
				}
			}
			toks = append(toks, token{tIdent, src[i:j], start})
			adv(j - i)
		case c >= '0' && c <= '9':
			start := Pos{line, col}
			j := i + 1
			for j < len(src) && (isIdentChar(src[j]) && src[j] != '%' && src[j] != '$') {
				// An exponent sign belongs to a decimal float: 1.5e-3.
				j++
				if j < len(src) && (src[j] == '-' || src[j] == '+') && (src[j-1]|0x20) == 'e' &&
					!(src[i+1]|0x20 == 'x' || src[i+1]|0x20 == 'f' || src[i+1]|0x20 == 'd') {
					j++
				}
			}
			toks = append(toks, token{tNum, src[i:j], start})
			adv(j - i)
		default:
			switch c {
			case '{', '}', '[', ']', '(', ')', ',', ';', ':', '+', '-', '@', '!', '<', '>', '=', '|', '*':
				toks = append(toks, token{tPunct, src[i : i+1], Pos{line, col}})
				adv(1)
			default:
				return nil, &Error{Pos{line, col}, fmt.Sprintf("unexpected character %q", c)}
			}
		}
	}
	toks = append(toks, token{tEOF, "", Pos{line, col}})
	return toks, nil
}
