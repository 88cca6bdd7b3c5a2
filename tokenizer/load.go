package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gcomp/gcomp/tensorio"
)

// maxFile bounds each tokenizer file (the largest real tokenizer.json files are about 35 MB).
const maxFile = 256 << 20

// Load reads the tokenizer of a Hugging Face model folder. It takes, in this order, the first of
//
//  1. tokenizer.json (Hugging Face's BPE model, byte-level or SentencePiece-style),
//  2. vocab.json with merges.txt (GPT-2's byte-level BPE),
//  3. tokenizer.model (SentencePiece, BPE or unigram),
//
// then the special tokens of tokenizer_config.json (bos_token, eos_token, unk_token, pad_token,
// add_bos_token, add_eos_token, added_tokens_decoder) and the eos_token_id list of
// generation_config.json, when the folder has them. Any problem is one error naming the file and
// field; nothing is half-loaded.
func Load(dir string) (*Tokenizer, error) {
	st, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such folder", dir)
		}
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a folder", dir)
	}
	exists := func(name string) bool {
		_, err := os.Lstat(filepath.Join(dir, name))
		return err == nil
	}
	read := func(name string) (string, []byte, error) {
		path, err := tensorio.Inside(dir, name)
		if err != nil {
			return filepath.Join(dir, name), nil, err
		}
		data, err := tensorio.ReadFile(path, maxFile)
		return filepath.Join(dir, name), data, err
	}
	var t *Tokenizer
	switch {
	case exists("tokenizer.json"):
		file, data, err := read("tokenizer.json")
		if err != nil {
			return nil, err
		}
		if t, err = parseHFJSON(file, data); err != nil {
			return nil, err
		}
	case exists("vocab.json"):
		if !exists("merges.txt") {
			return nil, fmt.Errorf("%s: vocab.json needs merges.txt beside it, and there is none", dir)
		}
		vfile, vdata, err := read("vocab.json")
		if err != nil {
			return nil, err
		}
		mfile, mdata, err := read("merges.txt")
		if err != nil {
			return nil, err
		}
		if t, err = parseGPT2(vfile, vdata, mfile, mdata); err != nil {
			return nil, err
		}
		gpt2Specials(t)
	case exists("tokenizer.model"):
		file, data, err := read("tokenizer.model")
		if err != nil {
			return nil, err
		}
		if t, err = parseSPModel(file, data); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%s: no tokenizer: none of tokenizer.json, vocab.json + merges.txt, tokenizer.model", dir)
	}
	for _, name := range []string{"tokenizer_config.json", "generation_config.json"} {
		if !exists(name) {
			continue
		}
		file, data, err := read(name)
		if err != nil {
			return nil, err
		}
		if name == "tokenizer_config.json" {
			err = t.applyConfig(file, data)
		} else {
			err = t.applyGeneration(file, data)
		}
		if err != nil {
			return nil, err
		}
	}
	if t.addBOS && t.bos < 0 {
		return nil, fmt.Errorf("%s: the configuration adds a BOS token but names none", dir)
	}
	if t.addEOS && len(t.eos) == 0 {
		return nil, fmt.Errorf("%s: the configuration adds an EOS token but names none", dir)
	}
	return t, nil
}

// gpt2Specials gives a vocab.json + merges.txt folder GPT-2's defaults: <|endoftext|> is BOS, EOS
// and special, and no BOS is added.
func gpt2Specials(t *Tokenizer) {
	const eot = "<|endoftext|>"
	if id, ok := t.m.vocab[eot]; ok {
		t.bos, t.eos = id, []int{id}
		t.addSpecial(eot, id)
		t.finish()
	}
}

// addSpecial marks id, spelled content, as a special added token; finish updates the tables.
func (t *Tokenizer) addSpecial(content string, id int) {
	for i, a := range t.added {
		if a.id == id {
			t.added[i].special = true
			return
		}
	}
	t.added = append(t.added, addedToken{content: content, id: id, special: true})
}

// tokenConfig is the part of tokenizer_config.json that decides ids.
type tokenConfig struct {
	BOS         json.RawMessage            `json:"bos_token"`
	EOS         json.RawMessage            `json:"eos_token"`
	UNK         json.RawMessage            `json:"unk_token"`
	PAD         json.RawMessage            `json:"pad_token"`
	AddBOS      *bool                      `json:"add_bos_token"`
	AddEOS      *bool                      `json:"add_eos_token"`
	AddedTokens map[string]json.RawMessage `json:"added_tokens_decoder"`
}

// tokenName reads a special token given as a string, as {"content": ...} or as null.
func tokenName(file, where string, raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var obj struct {
		Content *string `json:"content"`
		Special *bool   `json:"special"`
	}
	if json.Unmarshal(raw, &obj) != nil || obj.Content == nil {
		return "", errorf(file, where, "neither a string nor an object with content")
	}
	return *obj.Content, nil
}

func (t *Tokenizer) applyConfig(file string, data []byte) error {
	var c tokenConfig
	if err := decodeJSON(file, data, &c); err != nil {
		return err
	}
	// added_tokens_decoder first: the named special tokens may be among them.
	for _, k := range sortedKeys(c.AddedTokens) {
		where := "added_tokens_decoder." + k
		var id int
		if _, err := fmt.Sscan(k, &id); err != nil || fmt.Sprint(id) != k || id < 0 || id >= min(maxVocab, len(data)) {
			return errorf(file, where, "%q is not a token id", k)
		}
		var a struct {
			Content string `json:"content"`
			Special bool   `json:"special"`
		}
		if err := json.Unmarshal(c.AddedTokens[k], &a); err != nil || a.Content == "" {
			return errorf(file, where, "not an object with content")
		}
		if id < len(t.text) && t.text[id] != nil {
			if got, ok := t.idOf(a.Content); !ok || got != id {
				return errorf(file, where, "%q is not token %d of the vocabulary", a.Content, id)
			}
		}
		if a.Special {
			t.addSpecial(a.Content, id)
		} else if _, ok := t.idOf(a.Content); !ok {
			t.added = append(t.added, addedToken{content: a.Content, id: id})
		}
	}
	t.finish()
	for _, s := range []struct {
		field string
		raw   json.RawMessage
		set   func(int)
	}{
		{"bos_token", c.BOS, func(id int) { t.bos = id }},
		{"eos_token", c.EOS, func(id int) { t.eos = append([]int{id}, without(t.eos, id)...) }},
		{"unk_token", c.UNK, func(int) {}},
		{"pad_token", c.PAD, func(int) {}},
	} {
		name, err := tokenName(file, s.field, s.raw)
		if err != nil {
			return err
		}
		if name == "" {
			continue
		}
		id, ok := t.idOf(name)
		if !ok {
			return errorf(file, s.field, "%q is not in the vocabulary", name)
		}
		t.addSpecial(name, id)
		s.set(id)
	}
	t.finish()
	if c.AddBOS != nil {
		t.addBOS = *c.AddBOS
	}
	if c.AddEOS != nil {
		t.addEOS = *c.AddEOS
	}
	return nil
}

// applyGeneration adds generation_config.json's eos_token_id (one id or a list) to the EOS ids.
func (t *Tokenizer) applyGeneration(file string, data []byte) error {
	var g struct {
		EOS json.RawMessage `json:"eos_token_id"`
	}
	if err := decodeJSON(file, data, &g); err != nil {
		return err
	}
	if len(g.EOS) == 0 || string(g.EOS) == "null" {
		return nil
	}
	var ids []int
	var one int
	if json.Unmarshal(g.EOS, &one) == nil {
		ids = []int{one}
	} else if json.Unmarshal(g.EOS, &ids) != nil {
		return errorf(file, "eos_token_id", "neither an id nor a list of ids")
	}
	for _, id := range ids {
		if err := t.check(id); err != nil {
			return errorf(file, "eos_token_id", "%d is not in the vocabulary (%d ids)", id, len(t.text))
		}
		if !t.IsEOS(id) {
			t.eos = append(t.eos, id)
		}
	}
	return nil
}

func without(ids []int, id int) []int {
	var out []int
	for _, x := range ids {
		if x != id {
			out = append(out, x)
		}
	}
	return out
}
