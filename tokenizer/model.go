package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// algorithm is how a word becomes ids.
type algorithm int

const (
	bpeRanks  algorithm = iota // BPE by a merges list (Hugging Face, GPT-2)
	bpeScores                  // BPE by piece scores (SentencePiece's tokenizer.model)
	unigram                    // the most likely segmentation (SentencePiece's unigram model)
)

// prefixRule says where a SentencePiece-style tokenizer puts its "▁" dummy prefix.
type prefixRule int

const (
	prefixNever   prefixRule = iota
	prefixPrepend            // every segment between added tokens (a Prepend normalizer)
	prefixAlways             // every segment that does not start with "▁" (Metaspace's "always")
	prefixFirst              // the text's first segment unless it starts with "▁" (Metaspace's "first")
	prefixStart              // the text's first segment (SentencePiece's add_dummy_prefix)
)

const metaSpace = "▁" // U+2581, SentencePiece's space

// model is a vocabulary and the rules that turn text without added tokens into its ids.
type model struct {
	pieces   []string       // id → piece as the vocabulary spells it
	present  []bool         // id → the vocabulary has it (ids may have holes)
	vocab    map[string]int // piece → id, the pieces words are made of
	algo     algorithm
	merges   map[[2]int]merge // bpeRanks
	scores   []float32        // bpeScores, unigram: id → score
	maxLen   int              // unigram: the longest piece in bytes
	unkScore float64          // unigram: the score of an unknown character

	byteLevel    bool     // pieces are in GPT-2's byte alphabet
	byteFallback bool     // a character outside the vocabulary becomes its <0xXX> byte pieces
	byteIDs      [256]int // byteFallback: the id of each byte's piece
	unk          int      // -1: none
	fuseUnk      bool     // consecutive unknown characters make one unknown token
	ignoreMerges bool     // a word found whole in the vocabulary is one token (Llama 3)

	nfc          bool       // NFC normalization first (Qwen2)
	split        splitKind  // the pre-tokenizer's word pattern
	prefixSpace  bool       // byte-level: a space before the text's first word (ByteLevel's add_prefix_space)
	metaspace    bool       // spaces become "▁"
	prefix       prefixRule // where "▁" is prepended
	metaSplit    bool       // Metaspace's split: each "▁" starts a new word
	collapseWS   bool       // SentencePiece's remove_extra_whitespaces
	stripDecoded bool       // decoding drops the one leading space the dummy prefix added

	cache *wordCache // byte-level: word → ids
}

// encodeSegment appends the ids of text, a stretch without added tokens; first says it starts
// the whole text.
func (m *model) encodeSegment(text string, first bool, out []int) ([]int, error) {
	if m.nfc {
		text = norm.NFC.String(text)
	}
	if m.collapseWS {
		text = strings.Join(strings.FieldsFunc(text, func(r rune) bool { return r == ' ' }), " ")
	}
	if text == "" {
		return out, nil
	}
	if m.byteLevel {
		if m.prefixSpace && first && text[0] != ' ' {
			text = " " + text
		}
		for _, w := range m.split.split(text, nil) {
			if ids, ok := m.cache.get(w); ok {
				out = append(out, ids...)
				continue
			}
			n := len(out)
			var err error
			if out, err = m.encodeWord(byteLevelString(w), out); err != nil {
				return out, err
			}
			m.cache.put(w, append([]int(nil), out[n:]...))
		}
		return out, nil
	}
	if m.metaspace {
		text = strings.ReplaceAll(text, " ", metaSpace)
	}
	switch {
	case m.prefix == prefixPrepend, m.prefix == prefixStart && first,
		m.prefix == prefixAlways && !strings.HasPrefix(text, metaSpace),
		m.prefix == prefixFirst && first && !strings.HasPrefix(text, metaSpace):
		text = metaSpace + text
	}
	var err error
	for _, w := range m.split.split(text, nil) { // splitNone: the whole text is one word
		for len(w) > 0 {
			n := len(w)
			if m.metaSplit {
				// Each "▁" but a leading one starts the next word.
				if i := strings.Index(w[1:], metaSpace); i >= 0 {
					n = i + 1
				}
			}
			if out, err = m.encodeWord(w[:n], out); err != nil {
				return out, err
			}
			w = w[n:]
		}
	}
	return out, nil
}

// encodeWord appends the ids of one pre-tokenized word.
func (m *model) encodeWord(w string, out []int) ([]int, error) {
	if m.ignoreMerges {
		if id, ok := m.vocab[w]; ok {
			return append(out, id), nil
		}
	}
	if m.algo == unigram {
		return m.viterbi(w, out)
	}
	syms, err := m.symbols(w, nil)
	if err != nil {
		return out, err
	}
	if m.algo == bpeScores {
		return bpe(syms, m.scorePair, out), nil
	}
	return bpe(syms, m.rankPair, out), nil
}

func (m *model) rankPair(a, b int) (int, float64, bool) {
	mg, ok := m.merges[[2]int{a, b}]
	return int(mg.id), float64(mg.rank), ok
}

func (m *model) scorePair(a, b int) (int, float64, bool) {
	id, ok := m.vocab[m.pieces[a]+m.pieces[b]]
	if !ok {
		return 0, 0, false
	}
	return id, -float64(m.scores[id]), true
}

// symbols appends the initial symbols of w: one per character, or its bytes' pieces when the
// character is not in the vocabulary and byte fallback is on, or the unknown token.
func (m *model) symbols(w string, out []int) ([]int, error) {
	prevUnk := false
	for i, size := 0, 0; i < len(w); i += size {
		_, size = utf8.DecodeRuneInString(w[i:])
		ch := w[i : i+size]
		if id, ok := m.vocab[ch]; ok {
			out = append(out, id)
			prevUnk = false
			continue
		}
		var err error
		if out, prevUnk, err = m.unknown(ch, out, prevUnk); err != nil {
			return out, err
		}
	}
	return out, nil
}

// unknown appends the ids of a character outside the vocabulary.
func (m *model) unknown(ch string, out []int, prevUnk bool) ([]int, bool, error) {
	if m.byteFallback {
		for j := 0; j < len(ch); j++ {
			out = append(out, m.byteIDs[ch[j]])
		}
		return out, false, nil
	}
	if m.unk < 0 {
		return out, false, fmt.Errorf("the character %q is not in the vocabulary, which has no unknown token", ch)
	}
	if !(prevUnk && m.fuseUnk) {
		out = append(out, m.unk)
	}
	return out, true, nil
}

// tokenBytes is the text of piece id as decoding writes it.
func (m *model) tokenBytes(id int) []byte {
	p := m.pieces[id]
	if m.byteLevel {
		return byteLevelBytes(p)
	}
	if b, ok := byteToken(p); ok && m.byteFallback && m.byteIDs[b] == id {
		return []byte{b}
	}
	if m.metaspace {
		p = strings.ReplaceAll(p, metaSpace, " ")
	}
	return []byte(p)
}

// byteToken returns the byte a "<0xXX>" piece stands for.
func byteToken(p string) (byte, bool) {
	if len(p) != 6 || !strings.HasPrefix(p, "<0x") || p[5] != '>' {
		return 0, false
	}
	hi, ok1 := hexDigit(p[3])
	lo, ok2 := hexDigit(p[4])
	return hi<<4 | lo, ok1 && ok2
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
