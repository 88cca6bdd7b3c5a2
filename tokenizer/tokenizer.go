package tokenizer

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Tokenizer turns text into token ids and back. It is immutable once loaded and safe for
// concurrent use.
type Tokenizer struct {
	m       model
	added   []addedToken // matched in text before the model runs, longest first
	first   [256]bool    // bytes an added token starts with
	special []bool       // id → a special token, which Decode leaves out
	text    [][]byte     // id → the bytes decoding writes
	bos     int          // -1: none
	eos     []int
	addBOS  bool
	addEOS  bool
	kind    string // the form, for messages: "byte-level BPE (tokenizer.json)"
}

// addedToken is a token matched as a whole in the text (Hugging Face's added_tokens,
// SentencePiece's control and user-defined pieces).
type addedToken struct {
	content string
	id      int
	special bool
}

// EncodeOptions choose what Encode adds to the model's ids.
type EncodeOptions struct {
	// AddSpecial adds the BOS and EOS ids the tokenizer's configuration asks for.
	AddSpecial bool
	// SplitSpecial reads added and special tokens written in the text ("<|eot_id|>") as their
	// ids; without it they are ordinary text.
	SplitSpecial bool
}

// Encode returns the ids of text as the tokenizer's configuration encodes a prompt: added tokens
// written in the text are their ids, and BOS (and EOS) are added if the configuration says so.
func (t *Tokenizer) Encode(text string) ([]int, error) {
	return t.EncodeWith(text, EncodeOptions{AddSpecial: true, SplitSpecial: true})
}

// EncodeWith returns the ids of text with the given options; EncodeOptions{} encodes plain text
// with nothing added.
func (t *Tokenizer) EncodeWith(text string, o EncodeOptions) ([]int, error) {
	if !utf8.ValidString(text) {
		i := 0
		for i < len(text) {
			r, size := utf8.DecodeRuneInString(text[i:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			i += size
		}
		return nil, fmt.Errorf("tokenizer: the text is not valid UTF-8 (byte %d)", i)
	}
	ids := make([]int, 0, len(text)/4+2)
	if o.AddSpecial && t.addBOS {
		ids = append(ids, t.bos)
	}
	start := 0 // the segment of plain text not yet encoded
	var err error
	for i := 0; o.SplitSpecial && i < len(text); i++ {
		if !t.first[text[i]] {
			continue
		}
		a, ok := t.addedAt(text[i:])
		if !ok {
			continue
		}
		if ids, err = t.m.encodeSegment(text[start:i], start == 0, ids); err != nil {
			return nil, fmt.Errorf("tokenizer: %v", err)
		}
		ids = append(ids, a.id)
		i += len(a.content) - 1
		start = i + 1
	}
	if ids, err = t.m.encodeSegment(text[start:], start == 0, ids); err != nil {
		return nil, fmt.Errorf("tokenizer: %v", err)
	}
	if o.AddSpecial && t.addEOS {
		ids = append(ids, t.eos[0])
	}
	return ids, nil
}

// addedAt returns the longest added token s starts with.
func (t *Tokenizer) addedAt(s string) (addedToken, bool) {
	for _, a := range t.added { // longest first
		if strings.HasPrefix(s, a.content) {
			return a, true
		}
	}
	return addedToken{}, false
}

// Decode returns the text of ids. Special tokens (BOS, EOS, padding, a chat template's markers)
// are left out; bytes that do not form UTF-8 become U+FFFD (one per maximal invalid piece, as in
// Hugging Face's decoders). An id outside the vocabulary is an error naming it.
func (t *Tokenizer) Decode(ids []int) (string, error) {
	var b []byte
	for _, id := range ids {
		if err := t.check(id); err != nil {
			return "", err
		}
		if !t.special[id] {
			b = append(b, t.text[id]...)
		}
	}
	if t.m.stripDecoded && len(b) > 0 && b[0] == ' ' {
		b = b[1:]
	}
	return validUTF8(b), nil
}

func (t *Tokenizer) check(id int) error {
	if id < 0 || id >= len(t.text) || t.text[id] == nil {
		return fmt.Errorf("tokenizer: token id %d is not in the vocabulary (%d ids)", id, len(t.text))
	}
	return nil
}

// validUTF8 replaces each maximal piece of b that is not UTF-8 (a byte, or the start of a
// character cut short) with one U+FFFD, as Rust's from_utf8_lossy (Hugging Face's decoders) and
// JavaScript's TextDecoder do.
func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			size = invalidPrefix(b)
		}
		sb.WriteRune(r)
		b = b[size:]
	}
	return sb.String()
}

// invalidPrefix returns the length of the maximal start of b, which is not UTF-8, that begins a
// character: the lead byte and the continuation bytes its sequence allows (at least 1).
func invalidPrefix(b []byte) int {
	lo, hi := byte(0x80), byte(0xBF) // the second byte's range
	var n int                        // the sequence's length
	switch c := b[0]; {
	case c >= 0xC2 && c <= 0xDF:
		n = 2
	case c == 0xE0:
		n, lo = 3, 0xA0
	case c == 0xED:
		n, hi = 3, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		n = 3
	case c == 0xF0:
		n, lo = 4, 0x90
	case c == 0xF4:
		n, hi = 4, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		n = 4
	default:
		return 1
	}
	i := 1
	for ; i < n && i < len(b); i++ {
		if b[i] < lo || b[i] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return i
}

// BOS returns the beginning-of-sequence id, or -1 when the tokenizer has none.
func (t *Tokenizer) BOS() int { return t.bos }

// EOS returns the ids that end a sequence (Llama 3 has several: end of text, end of turn); empty
// when the tokenizer has none.
func (t *Tokenizer) EOS() []int { return append([]int(nil), t.eos...) }

// IsEOS reports whether id ends a sequence.
func (t *Tokenizer) IsEOS(id int) bool {
	for _, e := range t.eos {
		if e == id {
			return true
		}
	}
	return false
}

// VocabSize returns the number of ids, added tokens included: every id is below it.
func (t *Tokenizer) VocabSize() int { return len(t.text) }

// String names the tokenizer's form: "byte-level BPE (tokenizer.json), 50257 ids".
func (t *Tokenizer) String() string { return fmt.Sprintf("%s, %d ids", t.kind, len(t.text)) }

// finish fills the tables Encode and Decode read, once the model and added tokens are set.
func (t *Tokenizer) finish() {
	t.m.cache = new(wordCache)
	n := len(t.m.pieces)
	for _, a := range t.added {
		n = max(n, a.id+1)
	}
	t.text = make([][]byte, n)
	t.special = make([]bool, n)
	for id := range t.m.pieces {
		if t.m.present[id] {
			t.text[id] = t.m.tokenBytes(id)
		}
	}
	for _, a := range t.added {
		t.text[a.id] = []byte(a.content)
		t.special[a.id] = a.special
		t.first[a.content[0]] = true
	}
	sort.SliceStable(t.added, func(i, j int) bool { return len(t.added[i].content) > len(t.added[j].content) })
}
