package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Hugging Face's tokenizer.json: the model (BPE only: GPT-2, Llama 2/3, Mistral, Qwen2), its
// normalizer, pre-tokenizer, post-processor and added tokens. Fields that do not change ids at
// inference (offsets, truncation, padding, the decoder, which the model's form implies) are not
// read; a component this package does not implement is refused by its JSON path.

type hfFile struct {
	AddedTokens   []hfAdded       `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Model         *hfModel        `json:"model"`
}

type hfAdded struct {
	ID         *int   `json:"id"`
	Content    string `json:"content"`
	Special    bool   `json:"special"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	SingleWord bool   `json:"single_word"`
}

type hfModel struct {
	Type                    string          `json:"type"`
	Vocab                   json.RawMessage `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
	UnkToken                *string         `json:"unk_token"`
	ByteFallback            bool            `json:"byte_fallback"`
	FuseUnk                 bool            `json:"fuse_unk"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	Dropout                 *float64        `json:"dropout"`
}

// component is one normalizer, pre-tokenizer or post-processor object; the fields of the kinds
// this package implements.
type component struct {
	Type          string            `json:"type"`
	Prepend       string            `json:"prepend"`
	Pattern       map[string]string `json:"pattern"`
	Content       string            `json:"content"`
	AddPrefix     *bool             `json:"add_prefix_space"`
	UseRegex      *bool             `json:"use_regex"`
	Replacement   string            `json:"replacement"`
	PrependScheme string            `json:"prepend_scheme"`
	Split         *bool             `json:"split"`
	Behavior      string            `json:"behavior"`
	Invert        bool              `json:"invert"`
	Normalizers   []json.RawMessage `json:"normalizers"`
	Pretokenizers []json.RawMessage `json:"pretokenizers"`
	Processors    []json.RawMessage `json:"processors"`
	Single        []struct {
		SpecialToken *struct {
			ID string `json:"id"`
		} `json:"SpecialToken"`
		Sequence *struct{} `json:"Sequence"`
	} `json:"single"`
}

// maxVocab bounds ids read from a file, so a corrupt id cannot make tables of gigabytes.
const maxVocab = 1 << 21

// parseHFJSON reads a tokenizer.json. The special tokens it returns are the template's BOS and
// EOS, if its post-processor adds them.
func parseHFJSON(file string, data []byte) (*Tokenizer, error) {
	var f hfFile
	if err := decodeJSON(file, data, &f); err != nil {
		return nil, err
	}
	if f.Model == nil {
		return nil, errorf(file, "model", "missing")
	}
	mt := f.Model.Type
	if mt == "" && len(f.Model.Merges) > 0 {
		mt = "BPE" // files written before the field existed
	}
	if mt != "BPE" {
		return nil, errorf(file, "model.type", "%q is not supported (BPE models only: GPT-2, Llama, Mistral, Qwen2)", f.Model.Type)
	}
	if p := f.Model.ContinuingSubwordPrefix; p != nil && *p != "" {
		return nil, errorf(file, "model.continuing_subword_prefix", "%q is not supported", *p)
	}
	if p := f.Model.EndOfWordSuffix; p != nil && *p != "" {
		return nil, errorf(file, "model.end_of_word_suffix", "%q is not supported", *p)
	}
	if d := f.Model.Dropout; d != nil && *d != 0 {
		return nil, errorf(file, "model.dropout", "%v is not supported (inference is deterministic)", *d)
	}
	t := &Tokenizer{bos: -1, kind: "BPE (tokenizer.json)"}
	m := &t.m
	m.algo = bpeRanks
	m.unk = -1
	var vocab map[string]int
	if err := decodeJSON(file, f.Model.Vocab, &vocab); err != nil {
		return nil, errorf(file, "model.vocab", "not an object of piece to id: %v", strings.TrimPrefix(err.Error(), file+": "))
	}
	if err := m.setVocab(file, "model.vocab", vocab, len(data)); err != nil {
		return nil, err
	}
	if err := m.setMerges(file, f.Model.Merges); err != nil {
		return nil, err
	}
	if f.Model.UnkToken != nil {
		id, ok := m.vocab[*f.Model.UnkToken]
		if !ok {
			return nil, errorf(file, "model.unk_token", "%q is not in the vocabulary", *f.Model.UnkToken)
		}
		m.unk = id
	}
	m.fuseUnk = f.Model.FuseUnk
	m.ignoreMerges = f.Model.IgnoreMerges
	if f.Model.ByteFallback {
		if err := m.setByteFallback(file, "model.byte_fallback"); err != nil {
			return nil, err
		}
	}
	for i, a := range f.AddedTokens {
		where := fmt.Sprintf("added_tokens[%d]", i)
		switch {
		case a.ID == nil:
			return nil, errorf(file, where+".id", "missing")
		case *a.ID < 0 || *a.ID >= min(maxVocab, len(data)):
			return nil, errorf(file, where+".id", "%d is outside [0, %d)", *a.ID, min(maxVocab, len(data)))
		case a.Content == "":
			return nil, errorf(file, where+".content", "empty")
		case a.LStrip || a.RStrip || a.SingleWord:
			// Matching would change around the token; the GPT-2, Llama, Mistral and Qwen2 files
			// set none of these.
			return nil, errorf(file, where, "%q: lstrip, rstrip and single_word are not supported", a.Content)
		case *a.ID < len(m.pieces) && m.present[*a.ID] && m.pieces[*a.ID] != a.Content:
			return nil, errorf(file, where+".id", "%d is %q in model.vocab, not %q", *a.ID, m.pieces[*a.ID], a.Content)
		}
		t.added = append(t.added, addedToken{content: a.Content, id: *a.ID, special: a.Special})
	}
	if err := m.normalizer(file, "normalizer", f.Normalizer); err != nil {
		return nil, err
	}
	if err := m.preTokenizer(file, "pre_tokenizer", f.PreTokenizer); err != nil {
		return nil, err
	}
	if m.byteLevel {
		t.kind = "byte-level BPE (tokenizer.json)"
	} else if m.metaspace {
		t.kind = "SentencePiece BPE (tokenizer.json)"
	}
	bos, eos, err := postProcessor(file, "post_processor", f.PostProcessor)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{bos, eos} {
		if name == "" {
			continue
		}
		if _, ok := t.idOf(name); !ok {
			return nil, errorf(file, "post_processor", "the template's special token %q is not in the vocabulary", name)
		}
	}
	if bos != "" {
		t.bos, _ = t.idOf(bos)
		t.addBOS = true
	}
	if eos != "" {
		id, _ := t.idOf(eos)
		t.eos = []int{id}
		t.addEOS = true
	}
	t.finish()
	return t, nil
}

// idOf finds a token by its text: an added token first, then the vocabulary.
func (t *Tokenizer) idOf(content string) (int, bool) {
	for _, a := range t.added {
		if a.content == content {
			return a.id, true
		}
	}
	id, ok := t.m.vocab[content]
	if !ok {
		for i, p := range t.m.pieces { // control pieces are not in vocab
			if t.m.present[i] && p == content {
				return i, true
			}
		}
	}
	return id, ok
}

// setVocab sets the pieces from a piece → id map, checking the ids: below maxVocab and below the
// file's size, so a corrupt id cannot make tables much larger than the file.
func (m *model) setVocab(file, where string, vocab map[string]int, size int) error {
	n, limit := 0, min(maxVocab, size)
	keys := sortedKeys(vocab) // for deterministic errors
	for _, p := range keys {
		if id := vocab[p]; id < 0 || id >= limit {
			return errorf(file, where, "%q has id %d, outside [0, %d)", p, id, limit)
		}
		n = max(n, vocab[p]+1)
	}
	m.pieces = make([]string, n)
	m.present = make([]bool, n)
	m.vocab = vocab
	for _, p := range keys {
		id := vocab[p]
		if m.present[id] {
			a, b := p, m.pieces[id]
			if a > b {
				a, b = b, a
			}
			return errorf(file, where, "id %d is given to both %q and %q", id, a, b)
		}
		m.pieces[id] = p
		m.present[id] = true
	}
	return nil
}

// setMerges reads merges as "a b" strings or ["a", "b"] pairs. Both forms decode whole first
// (Llama 3 has 280k merges); only a list that fits neither is read item by item, to name the bad
// item.
func (m *model) setMerges(file string, raw json.RawMessage) error {
	var pairs [][]string
	var strs []string
	switch {
	case len(raw) == 0 || string(raw) == "null":
	case json.Unmarshal(raw, &strs) == nil:
		pairs = make([][]string, len(strs))
		for i, s := range strs {
			pairs[i] = strings.Split(s, " ")
		}
	case json.Unmarshal(raw, &pairs) == nil:
	default:
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) != nil {
			return errorf(file, "model.merges", "not a list")
		}
		for i, r := range list {
			var s string
			var pair []string
			if json.Unmarshal(r, &s) != nil && json.Unmarshal(r, &pair) != nil {
				return errorf(file, fmt.Sprintf("model.merges[%d]", i), "neither \"a b\" nor [\"a\", \"b\"]")
			}
		}
		return errorf(file, "model.merges", "mixes \"a b\" strings and [\"a\", \"b\"] pairs")
	}
	m.merges = make(map[[2]int]merge, len(pairs))
	for i, pair := range pairs {
		if len(pair) != 2 {
			return errorf(file, fmt.Sprintf("model.merges[%d]", i), "%q is not a pair of pieces", strings.Join(pair, " "))
		}
		if missing, ok := m.addMerge(i, pair[0], pair[1]); !ok {
			return errorf(file, fmt.Sprintf("model.merges[%d]", i), "%q is not in the vocabulary", missing)
		}
	}
	return nil
}

// addMerge adds the merge of a and b; it returns the piece missing from the vocabulary, if one is.
func (m *model) addMerge(rank int, a, b string) (string, bool) {
	ia, ok := m.vocab[a]
	if !ok {
		return a, false
	}
	ib, ok := m.vocab[b]
	if !ok {
		return b, false
	}
	ab, ok := m.vocab[a+b]
	if !ok {
		return a + b, false
	}
	k := [2]int{ia, ib}
	if _, dup := m.merges[k]; !dup { // the first (highest-priority) occurrence wins
		m.merges[k] = merge{rank: int32(rank), id: int32(ab)}
	}
	return "", true
}

// setByteFallback finds the 256 <0xXX> pieces.
func (m *model) setByteFallback(file, where string) error {
	m.byteFallback = true
	for b := 0; b < 256; b++ {
		p := fmt.Sprintf("<0x%02X>", b)
		id, ok := m.vocab[p]
		if !ok {
			return errorf(file, where, "byte fallback needs the piece %q, which is not in the vocabulary", p)
		}
		m.byteIDs[b] = id
	}
	return nil
}

func parseComponent(file, where string, raw json.RawMessage) (*component, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, errorf(file, where, "not a %s object: %v", where, err)
	}
	return &c, nil
}

// normalizer applies a tokenizer.json normalizer to the model's settings.
func (m *model) normalizer(file, where string, raw json.RawMessage) error {
	c, err := parseComponent(file, where, raw)
	if c == nil || err != nil {
		return err
	}
	switch c.Type {
	case "Sequence":
		for i, r := range c.Normalizers {
			if err := m.normalizer(file, fmt.Sprintf("%s.normalizers[%d]", where, i), r); err != nil {
				return err
			}
		}
	case "Prepend":
		if c.Prepend != metaSpace {
			return errorf(file, where+".prepend", "%q is not supported (only %q)", c.Prepend, metaSpace)
		}
		m.prefix = prefixPrepend
	case "Replace":
		if c.Pattern["String"] != " " || c.Content != metaSpace {
			return errorf(file, where, "only Replace(\" \", %q) is supported", metaSpace)
		}
		m.metaspace = true
	case "NFC":
		m.nfc = true
	default:
		return errorf(file, where+".type", "%q is not supported (Sequence, Prepend, Replace, NFC)", c.Type)
	}
	m.stripDecoded = m.prefix != prefixNever
	return nil
}

// preTokenizer applies a tokenizer.json pre-tokenizer to the model's settings.
func (m *model) preTokenizer(file, where string, raw json.RawMessage) error {
	c, err := parseComponent(file, where, raw)
	if c == nil || err != nil {
		return err
	}
	switch c.Type {
	case "Sequence":
		for i, r := range c.Pretokenizers {
			if err := m.preTokenizer(file, fmt.Sprintf("%s.pretokenizers[%d]", where, i), r); err != nil {
				return err
			}
		}
	case "ByteLevel":
		m.byteLevel = true
		if c.AddPrefix != nil && *c.AddPrefix {
			m.prefixSpace = true
		}
		if c.UseRegex == nil || *c.UseRegex {
			if m.split != splitNone {
				return errorf(file, where, "a second split pattern")
			}
			m.split = splitGPT2
		}
	case "Split":
		re, ok := c.Pattern["Regex"]
		kind, known := knownPatterns[re]
		switch {
		case !ok:
			return errorf(file, where+".pattern", "only a Regex pattern is supported")
		case !known:
			return errorf(file, where+".pattern.Regex", "%q is not a supported pattern (GPT-2's, Llama 3's, Qwen2's)", re)
		case c.Behavior != "Isolated" || c.Invert:
			return errorf(file, where+".behavior", "%q (invert %v) is not supported (Isolated only)", c.Behavior, c.Invert)
		case m.split != splitNone:
			return errorf(file, where, "a second split pattern")
		}
		m.split = kind
	case "Metaspace":
		if c.Replacement != "" && c.Replacement != metaSpace {
			return errorf(file, where+".replacement", "%q is not supported (only %q)", c.Replacement, metaSpace)
		}
		m.metaspace = true
		scheme := c.PrependScheme
		if scheme == "" { // older files: add_prefix_space
			scheme = "always"
			if c.AddPrefix != nil && !*c.AddPrefix {
				scheme = "never"
			}
		}
		switch scheme {
		case "always":
			m.prefix = prefixAlways
		case "first":
			m.prefix = prefixFirst
		case "never":
			m.prefix = prefixNever
		default:
			return errorf(file, where+".prepend_scheme", "%q is not one of always, first, never", scheme)
		}
		m.metaSplit = c.Split == nil || *c.Split
		m.stripDecoded = m.prefix != prefixNever
	default:
		return errorf(file, where+".type", "%q is not supported (Sequence, ByteLevel, Split, Metaspace)", c.Type)
	}
	return nil
}

// postProcessor returns the special tokens a TemplateProcessing puts before and after a single
// sequence.
func postProcessor(file, where string, raw json.RawMessage) (bos, eos string, err error) {
	c, err := parseComponent(file, where, raw)
	if c == nil || err != nil {
		return "", "", err
	}
	switch c.Type {
	case "Sequence":
		for i, r := range c.Processors {
			b, e, err := postProcessor(file, fmt.Sprintf("%s.processors[%d]", where, i), r)
			if err != nil {
				return "", "", err
			}
			bos, eos = max(bos, b), max(eos, e)
		}
	case "ByteLevel":
	case "TemplateProcessing":
		seq := -1
		for i, item := range c.Single {
			if item.Sequence != nil {
				seq = i
			}
		}
		if seq < 0 || seq > 1 || len(c.Single) > seq+2 {
			return "", "", errorf(file, where+".single", "only [BOS] $A [EOS] templates are supported")
		}
		for i, item := range c.Single {
			if i == seq {
				continue
			}
			if item.SpecialToken == nil {
				return "", "", errorf(file, fmt.Sprintf("%s.single[%d]", where, i), "neither a SpecialToken nor the Sequence")
			}
			if i < seq {
				bos = item.SpecialToken.ID
			} else {
				eos = item.SpecialToken.ID
			}
		}
	default:
		return "", "", errorf(file, where+".type", "%q is not supported (TemplateProcessing, ByteLevel, Sequence)", c.Type)
	}
	return bos, eos, nil
}
