package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// The byte-level tokenizers split text into words before BPE with a regular expression that Go's
// regexp cannot run (it needs the lookahead \s+(?!\S)). The patterns in use are few and fixed, so
// each is written out as a scanner that returns the same matches as the expression does in
// Python's regex, Rust's fancy-regex and JavaScript. A tokenizer.json's Split pattern is matched
// against these texts exactly; any other pattern is refused by name.

// splitKind selects one of the known patterns.
type splitKind int

const (
	splitNone   splitKind = iota
	splitGPT2             // GPT-2, and ByteLevel's use_regex
	splitLlama3           // Llama 3 (numbers in groups of up to three)
	splitQwen2            // Qwen2 (one digit per number)
)

const (
	patternGPT2   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	patternLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patternQwen2  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

var knownPatterns = map[string]splitKind{patternGPT2: splitGPT2, patternLlama3: splitLlama3, patternQwen2: splitQwen2}

// split appends the words of text to out.
func (k splitKind) split(text string, out []string) []string {
	if k == splitNone {
		return append(out, text)
	}
	for i := 0; i < len(text); {
		n := k.match(text[i:])
		out = append(out, text[i:i+n])
		i += n
	}
	return out
}

func isSpace(r rune) bool  { return unicode.IsSpace(r) }
func isLetter(r rune) bool { return unicode.IsLetter(r) }
func isNumber(r rune) bool { return unicode.IsNumber(r) }
func isOther(r rune) bool  { return !isSpace(r) && !isLetter(r) && !isNumber(r) }
func isCRLF(r rune) bool   { return r == '\r' || r == '\n' }

// run returns the length in bytes of the longest prefix of s whose runes satisfy f, stopping after
// max runes (max < 0: no limit).
func run(s string, f func(rune) bool, max int) int {
	n := 0
	for i := 0; i < len(s) && max != 0; max-- {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !f(r) {
			break
		}
		i += size
		n = i
	}
	return n
}

// contraction matches 's 't 're 've 'm 'll 'd (any case when fold is set).
func contraction(s string, fold bool) int {
	if len(s) < 2 || s[0] != '\'' {
		return 0
	}
	lower := func(c byte) byte {
		if fold && c >= 'A' && c <= 'Z' {
			return c + 'a' - 'A'
		}
		return c
	}
	switch lower(s[1]) {
	case 's', 't', 'm', 'd':
		return 2
	}
	if len(s) >= 3 {
		switch string([]byte{lower(s[1]), lower(s[2])}) {
		case "re", "ve", "ll":
			return 3
		}
	}
	return 0
}

// spaces matches \s+(?!\S)|\s+ at the start of s, which begins with whitespace: the whole run at
// the end of the text, else the run but its last rune (which belongs to the next word), else one
// rune.
func spaces(s string) int {
	n := run(s, isSpace, -1)
	if n == len(s) {
		return n
	}
	_, last := utf8.DecodeLastRuneInString(s[:n])
	if n-last > 0 {
		return n - last
	}
	return n
}

// match returns the length of the pattern's match at the start of s (never 0 for a non-empty s:
// every rune is a letter, a number, whitespace or other, and each class has an alternative).
func (k splitKind) match(s string) int {
	r, size := utf8.DecodeRuneInString(s)
	if k == splitGPT2 {
		if n := contraction(s, false); n > 0 {
			return n
		}
		j := 0
		if s[0] == ' ' && len(s) > 1 {
			j = 1
		}
		r1, _ := utf8.DecodeRuneInString(s[j:])
		switch {
		case isLetter(r1):
			return j + run(s[j:], isLetter, -1)
		case isNumber(r1):
			return j + run(s[j:], isNumber, -1)
		case isOther(r1):
			return j + run(s[j:], isOther, -1)
		}
		return spaces(s)
	}
	if n := contraction(s, true); n > 0 {
		return n
	}
	if isLetter(r) {
		return run(s, isLetter, -1)
	}
	if !isCRLF(r) && !isNumber(r) {
		if r1, _ := utf8.DecodeRuneInString(s[size:]); size < len(s) && isLetter(r1) {
			return size + run(s[size:], isLetter, -1)
		}
	}
	if isNumber(r) {
		max := 3
		if k == splitQwen2 {
			max = 1
		}
		return run(s, isNumber, max)
	}
	j := 0
	if s[0] == ' ' && len(s) > 1 {
		j = 1
	}
	if r1, _ := utf8.DecodeRuneInString(s[j:]); isOther(r1) {
		n := j + run(s[j:], isOther, -1)
		return n + run(s[n:], isCRLF, -1)
	}
	// r is whitespace: \s*[\r\n]+ ends after the run's last line break, if it has one.
	n := run(s, isSpace, -1)
	end := 0
	for i := 0; i < n; {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if isCRLF(r) {
			end = i
		}
	}
	if end > 0 {
		return end
	}
	return spaces(s)
}
