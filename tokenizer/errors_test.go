package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// tinyJSON is a small byte-level tokenizer.json: the bytes of "ab " and their merges.
func tinyJSON() map[string]any {
	return map[string]any{
		"added_tokens":   []any{map[string]any{"id": 5, "content": "<|end|>", "special": true}},
		"normalizer":     nil,
		"pre_tokenizer":  map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
		"post_processor": map[string]any{"type": "ByteLevel"},
		"model": map[string]any{
			"type":   "BPE",
			"vocab":  map[string]any{"a": 0, "b": 1, "Ġ": 2, "ab": 3, "Ġab": 4},
			"merges": []any{"a b", "Ġ ab"},
		},
	}
}

// set changes a field of a JSON object given by a dotted path.
func set(obj map[string]any, path string, v any) map[string]any {
	keys := strings.Split(path, ".")
	m := obj
	for _, k := range keys[:len(keys)-1] {
		m = m[k].(map[string]any)
	}
	m[keys[len(keys)-1]] = v
	return obj
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// folder writes files into a new folder.
func folder(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// spProto builds a tokenizer.model from its pieces and two specs' fields (number → varint, or
// string for the normalizer's name and charsmap).
func spProto(pieces []spPiece, trainer map[protowire.Number]uint64, norm map[protowire.Number]any) []byte {
	var b []byte
	for _, p := range pieces {
		var sub []byte
		sub = protowire.AppendTag(sub, fieldPiece, protowire.BytesType)
		sub = protowire.AppendString(sub, p.piece)
		sub = protowire.AppendTag(sub, fieldType, protowire.VarintType)
		sub = protowire.AppendVarint(sub, uint64(p.typ))
		b = protowire.AppendTag(b, fieldPieces, protowire.BytesType)
		b = protowire.AppendBytes(b, sub)
	}
	var ts []byte
	for num, v := range trainer {
		ts = protowire.AppendTag(ts, num, protowire.VarintType)
		ts = protowire.AppendVarint(ts, v)
	}
	b = protowire.AppendTag(b, fieldTrainerSpec, protowire.BytesType)
	b = protowire.AppendBytes(b, ts)
	var ns []byte
	for num, v := range norm {
		switch v := v.(type) {
		case string:
			ns = protowire.AppendTag(ns, num, protowire.BytesType)
			ns = protowire.AppendString(ns, v)
		case uint64:
			ns = protowire.AppendTag(ns, num, protowire.VarintType)
			ns = protowire.AppendVarint(ns, v)
		}
	}
	b = protowire.AppendTag(b, fieldNormalizerSpec, protowire.BytesType)
	return protowire.AppendBytes(b, ns)
}

var spBase = []spPiece{{"<unk>", 0, pieceUnknown}, {"<s>", 0, pieceControl}, {"</s>", 0, pieceControl}, {"▁a", -1, pieceNormal}, {"a", -2, pieceNormal}, {"▁", -3, pieceNormal}}

func TestLoadErrors(t *testing.T) {
	tiny := mustJSON(tinyJSON())
	cases := []struct {
		name  string
		files map[string]string
		want  string // a substring of the error
	}{
		{"empty folder", map[string]string{}, "no tokenizer: none of tokenizer.json, vocab.json + merges.txt, tokenizer.model"},
		{"malformed JSON", map[string]string{"tokenizer.json": "{\n \"model\": {\n  \"type\": BPE}}"}, "tokenizer.json:3:11: malformed JSON"},
		{"WordPiece", map[string]string{"tokenizer.json": mustJSON(set(tinyJSON(), "model.type", "WordPiece"))}, `tokenizer.json: model.type: "WordPiece" is not supported`},
		{"Unigram JSON", map[string]string{"tokenizer.json": mustJSON(set(tinyJSON(), "model.type", "Unigram"))}, `model.type: "Unigram" is not supported`},
		{"no model", map[string]string{"tokenizer.json": `{"added_tokens": []}`}, "tokenizer.json: model: missing"},
		{"vocab a list", map[string]string{"tokenizer.json": mustJSON(set(tinyJSON(), "model.vocab", []any{"a"}))}, "model.vocab: not an object of piece to id"},
		{"duplicate id", map[string]string{"tokenizer.json": mustJSON(set(tinyJSON(), "model.vocab", map[string]any{"a": 0, "b": 0}))}, `model.vocab: id 0 is given to both "a" and "b"`},
		{"negative id", map[string]string{"tokenizer.json": mustJSON(set(tinyJSON(), "model.vocab", map[string]any{"a": -1}))}, `model.vocab: "a" has id -1`},
		{"huge id", map[string]string{"tokenizer.json": mustJSON(set(tinyJSON(), "model.vocab", map[string]any{"a": 1 << 30}))}, `model.vocab: "a" has id 1073741824, outside [0, `},
		{"merge of unknown piece", map[string]string{"tokenizer.json": mustJSON(set(tinyJSON(), "model.merges", []any{"a c"}))}, `model.merges[0]: "c" is not in the vocabulary`},
		{"merge not a pair", map[string]string{"tokenizer.json": mustJSON(set(tinyJSON(), "model.merges", []any{"a b", "a b c"}))}, `model.merges[1]: "a b c" is not a pair of pieces`},
		{"merge a number", map[string]string{"tokenizer.json": mustJSON(set(tinyJSON(), "model.merges", []any{7}))}, `model.merges[0]: neither "a b" nor ["a", "b"]`},
		{"unk not in vocab", map[string]string{"tokenizer.json": mustJSON(set(tinyJSON(), "model.unk_token", "<unk>"))}, `model.unk_token: "<unk>" is not in the vocabulary`},
		{"byte fallback without bytes", map[string]string{"tokenizer.json": mustJSON(set(tinyJSON(), "model.byte_fallback", true))}, `model.byte_fallback: byte fallback needs the piece "<0x00>"`},
		{"word suffix", map[string]string{"tokenizer.json": mustJSON(set(tinyJSON(), "model.end_of_word_suffix", "</w>"))}, `model.end_of_word_suffix: "</w>" is not supported`},
		{"pre-tokenizer", map[string]string{"tokenizer.json": mustJSON(set(tinyJSON(), "pre_tokenizer", map[string]any{"type": "Whitespace"}))}, `pre_tokenizer.type: "Whitespace" is not supported`},
		{"split pattern", map[string]string{"tokenizer.json": mustJSON(set(tinyJSON(), "pre_tokenizer", map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `\w+`}, "behavior": "Isolated"}}}))}, `pre_tokenizer.pretokenizers[0].pattern.Regex: "\\w+" is not a supported pattern`},
		{"normalizer", map[string]string{"tokenizer.json": mustJSON(set(tinyJSON(), "normalizer", map[string]any{"type": "Lowercase"}))}, `normalizer.type: "Lowercase" is not supported`},
		{"metaspace scheme", map[string]string{"tokenizer.json": mustJSON(set(tinyJSON(), "pre_tokenizer", map[string]any{"type": "Metaspace", "prepend_scheme": "sometimes"}))}, `pre_tokenizer.prepend_scheme: "sometimes" is not one of always, first, never`},
		{"post-processor", map[string]string{"tokenizer.json": mustJSON(set(tinyJSON(), "post_processor", map[string]any{"type": "BertProcessing"}))}, `post_processor.type: "BertProcessing" is not supported`},
		{"template token", map[string]string{"tokenizer.json": mustJSON(set(tinyJSON(), "post_processor", map[string]any{"type": "TemplateProcessing",
			"single": []any{map[string]any{"SpecialToken": map[string]any{"id": "<s>"}}, map[string]any{"Sequence": map[string]any{"id": "A"}}}}))}, `post_processor: the template's special token "<s>" is not in the vocabulary`},
		{"added token rstrip", map[string]string{"tokenizer.json": mustJSON(set(tinyJSON(), "added_tokens", []any{map[string]any{"id": 5, "content": "<x>", "rstrip": true}}))}, `added_tokens[0]: "<x>": lstrip, rstrip and single_word are not supported`},
		{"added token without id", map[string]string{"tokenizer.json": mustJSON(set(tinyJSON(), "added_tokens", []any{map[string]any{"content": "x"}}))}, "added_tokens[0].id: missing"},
		{"added token against vocab", map[string]string{"tokenizer.json": mustJSON(set(tinyJSON(), "added_tokens", []any{map[string]any{"id": 0, "content": "x"}}))}, `added_tokens[0].id: 0 is "a" in model.vocab, not "x"`},
		{"vocab.json alone", map[string]string{"vocab.json": `{"a": 0}`}, "vocab.json needs merges.txt beside it"},
		{"vocab.json malformed", map[string]string{"vocab.json": `{"a": 0,}`, "merges.txt": ""}, "vocab.json:1:9: malformed JSON"},
		{"merges.txt line", map[string]string{"vocab.json": `{"a": 0, "b": 1, "ab": 2}`, "merges.txt": "#version: 0.2\na b\nab\n"}, `merges.txt:3: "ab" is not a merge "a b"`},
		{"merges.txt unknown", map[string]string{"vocab.json": `{"a": 0, "b": 1}`, "merges.txt": "a b\n"}, `merges.txt:1: "ab" is not in the vocabulary`},
		{"config bos", map[string]string{"tokenizer.json": tiny, "tokenizer_config.json": `{"bos_token": "<s>"}`}, `tokenizer_config.json: bos_token: "<s>" is not in the vocabulary`},
		{"config bos type", map[string]string{"tokenizer.json": tiny, "tokenizer_config.json": `{"bos_token": 3}`}, `tokenizer_config.json: bos_token: neither a string nor an object with content`},
		{"config add_bos type", map[string]string{"tokenizer.json": tiny, "tokenizer_config.json": `{"add_bos_token": "yes"}`}, `tokenizer_config.json: add_bos_token: a JSON string where bool is expected`},
		{"config malformed", map[string]string{"tokenizer.json": tiny, "tokenizer_config.json": `{"bos_token": }`}, "tokenizer_config.json:1:15: malformed JSON"},
		{"config add_bos without bos", map[string]string{"tokenizer.json": tiny, "tokenizer_config.json": `{"add_bos_token": true}`}, "adds a BOS token but names none"},
		{"config added id", map[string]string{"tokenizer.json": tiny, "tokenizer_config.json": `{"added_tokens_decoder": {"x1": {"content": "a"}}}`}, `added_tokens_decoder.x1: "x1" is not a token id`},
		{"config added content", map[string]string{"tokenizer.json": tiny, "tokenizer_config.json": `{"added_tokens_decoder": {"0": {"content": "b"}}}`}, `added_tokens_decoder.0: "b" is not token 0 of the vocabulary`},
		{"generation eos", map[string]string{"tokenizer.json": tiny, "generation_config.json": `{"eos_token_id": [5, 99]}`}, "generation_config.json: eos_token_id: 99 is not in the vocabulary (6 ids)"},
		{"generation eos type", map[string]string{"tokenizer.json": tiny, "generation_config.json": `{"eos_token_id": "</s>"}`}, "generation_config.json: eos_token_id: neither an id nor a list of ids"},
		{"sp garbage", map[string]string{"tokenizer.model": "\xff\xff\xff\xff"}, "tokenizer.model: not a SentencePiece model"},
		{"sp empty", map[string]string{"tokenizer.model": ""}, "tokenizer.model: pieces: empty: not a SentencePiece model"},
		{"sp WORD", map[string]string{"tokenizer.model": string(spProto(spBase, map[protowire.Number]uint64{fieldModelType: 3}, nil))}, "tokenizer.model: trainer_spec.model_type: 3 (WORD) is not supported"},
		{"sp nfkc", map[string]string{"tokenizer.model": string(spProto(spBase, nil, map[protowire.Number]any{fieldNormName: "nmt_nfkc", fieldCharsmap: "\x01\x02"}))}, `tokenizer.model: normalizer_spec: the normalization rule "nmt_nfkc" is not supported`},
		{"sp no unk", map[string]string{"tokenizer.model": string(spProto(spBase[1:], nil, nil))}, "tokenizer.model: pieces: no unknown piece"},
		{"sp bytes", map[string]string{"tokenizer.model": string(spProto(spBase, map[protowire.Number]uint64{fieldByteFallback: 1}, nil))}, "trainer_spec.byte_fallback: byte fallback needs the byte piece <0x00>"},
		{"sp bos", map[string]string{"tokenizer.model": string(spProto(spBase, map[protowire.Number]uint64{fieldBosID: 60}, nil))}, "trainer_spec.bos_id: 60 is outside the 6 pieces"},
		{"sp duplicate", map[string]string{"tokenizer.model": string(spProto(append(spBase, spPiece{"a", 0, pieceNormal}), nil, nil))}, `pieces[6].piece: "a" appears twice`},
		{"sp piece type", map[string]string{"tokenizer.model": string(spProto(append(spBase, spPiece{"q", 0, 9}), nil, nil))}, `pieces[6].type: 9 is not a piece type`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := folder(t, c.files)
			tok, err := Load(dir)
			if err == nil {
				t.Fatalf("Load succeeded (%v), want an error with %q", tok, c.want)
			}
			if tok != nil {
				t.Errorf("Load returned a tokenizer with the error")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error\n\t%v\nwant it to contain\n\t%s", err, c.want)
			}
			if len(c.files) > 0 && !strings.Contains(err.Error(), dir) {
				t.Errorf("error %q does not name the file's folder", err)
			}
		})
	}
}

func TestLoadPathErrors(t *testing.T) {
	outside := folder(t, map[string]string{"tokenizer.json": mustJSON(tinyJSON())})
	link := t.TempDir()
	if err := os.Symlink(filepath.Join(outside, "tokenizer.json"), filepath.Join(link, "tokenizer.json")); err != nil {
		t.Skip(err)
	}
	asDir := t.TempDir()
	if err := os.Mkdir(filepath.Join(asDir, "tokenizer.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(outside, "tokenizer.json")
	for _, c := range []struct{ dir, want string }{
		{filepath.Join(outside, "nope"), "no such folder"},
		{file, file + ": not a folder"},
		{link, "outside the folder"},
		{asDir, "tokenizer.json: is a directory"},
	} {
		if _, err := Load(c.dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Load(%s) = %v, want an error with %q", c.dir, err, c.want)
		}
	}
}

func TestEncodeDecodeErrors(t *testing.T) {
	tok, err := Load(folder(t, map[string]string{"tokenizer.json": mustJSON(tinyJSON())}))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int{-1, 6, 1 << 40} {
		if _, err := tok.Decode([]int{0, id}); err == nil || !strings.Contains(err.Error(), "is not in the vocabulary") || !strings.Contains(err.Error(), strings.TrimSpace(" "+itoa(id))) {
			t.Errorf("Decode(%d) = %v, want an error naming the id", id, err)
		}
		if _, err := tok.NewStreamDecoder().Next(id); err == nil {
			t.Errorf("Next(%d) succeeded", id)
		}
	}
	if _, err := tok.Encode("ab\xffab"); err == nil || !strings.Contains(err.Error(), "not valid UTF-8 (byte 2)") {
		t.Errorf("Encode of invalid UTF-8 = %v", err)
	}
	// Only a, b and space are in the vocabulary, and there is no unknown token.
	if _, err := tok.Encode("abc"); err == nil || !strings.Contains(err.Error(), `"c" is not in the vocabulary, which has no unknown token`) {
		t.Errorf("Encode of a character outside the vocabulary = %v", err)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
