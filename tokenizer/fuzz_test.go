package tokenizer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// exercise runs what a parser returned: an error names one of the files and comes without a
// tokenizer; with a tokenizer, encoding and decoding must not panic, and every id Encode returns
// must decode.
func exercise(t *testing.T, tok *Tokenizer, err error, files ...string) {
	if err != nil {
		for _, f := range files {
			if tok == nil && strings.HasPrefix(err.Error(), f) {
				return
			}
		}
		t.Fatalf("error %q does not name the file, or came with a tokenizer", err)
	}
	for _, text := range []string{"", "ab ab", "a\n\nb  c", "<|end|>x", "é中😀", " ▁a"} {
		for _, o := range []EncodeOptions{{}, withSpecial} {
			ids, err := tok.EncodeWith(text, o)
			if err != nil {
				continue // a character outside a vocabulary without unknown token
			}
			if _, err := tok.Decode(ids); err != nil {
				t.Fatalf("Encode(%q) = %v, which does not decode: %v", text, ids, err)
			}
		}
	}
	d := tok.NewStreamDecoder()
	for id := -1; id <= tok.VocabSize() && id < 300; id++ {
		tok.Decode([]int{id})
		d.Next(id)
	}
	d.Flush()
}

func FuzzTokenizerJSON(f *testing.F) {
	f.Add([]byte(mustJSON(tinyJSON())))
	f.Add([]byte(mustJSON(set(tinyJSON(), "pre_tokenizer", map[string]any{"type": "Metaspace", "prepend_scheme": "first", "split": true}))))
	f.Add([]byte(mustJSON(set(tinyJSON(), "normalizer", map[string]any{"type": "Sequence", "normalizers": []any{
		map[string]any{"type": "Prepend", "prepend": metaSpace}, map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": metaSpace}}}))))
	f.Add([]byte(mustJSON(set(tinyJSON(), "model.merges", []any{[]any{"a", "b"}}))))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := parseHFJSON("tokenizer.json", data)
		exercise(t, tok, err, "tokenizer.json")
	})
}

func FuzzGPT2Files(f *testing.F) {
	f.Add([]byte(`{"a": 0, "b": 1, "ab": 2, "Ġ": 3}`), []byte("#version: 0.2\na b\n"))
	f.Add([]byte(`{"<|endoftext|>": 0}`), []byte(""))
	f.Fuzz(func(t *testing.T, vocab, merges []byte) {
		tok, err := parseGPT2("vocab.json", vocab, "merges.txt", merges)
		if err == nil {
			gpt2Specials(tok)
		}
		exercise(t, tok, err, "vocab.json", "merges.txt")
	})
}

func FuzzSentencePieceModel(f *testing.F) {
	for _, name := range []string{"bpe", "unigram"} {
		data, err := os.ReadFile(filepath.Join("testdata", "spm", name, "tokenizer.model"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add(spProto(spBase, map[protowire.Number]uint64{fieldModelType: 2}, nil))
	f.Add(spProto(spBase, map[protowire.Number]uint64{fieldModelType: 1, fieldBosID: 0}, map[protowire.Number]any{fieldAddDummyPrefix: uint64(0)}))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := parseSPModel("tokenizer.model", data)
		exercise(t, tok, err, "tokenizer.model")
	})
}

// FuzzRoundTrip checks decode(encode(x)) == x and the stream decoder on any valid UTF-8 text, for
// the committed SentencePiece BPE model and, with the fetched data, GPT-2's and Llama 3's
// byte-level tokenizers. (SentencePiece cannot round-trip "▁", which is its space.)
func FuzzRoundTrip(f *testing.F) {
	for _, s := range texts(f) {
		f.Add(s)
	}
	toks := []*Tokenizer{loadTB(f, filepath.Join("testdata", "spm", "bpe"))}
	for _, name := range []string{"gpt2", "llama3"} {
		dir := filepath.Join("..", ".cache", "tokenizers", name)
		if _, err := os.Stat(dir); err == nil {
			toks = append(toks, loadTB(f, dir))
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) {
			if _, err := toks[0].Encode(text); err == nil {
				t.Fatalf("Encode accepted invalid UTF-8 %q", text)
			}
			return
		}
		for i, tok := range toks {
			if i == 0 && strings.Contains(text, metaSpace) {
				continue
			}
			checkRoundTrip(t, tok, text)
		}
	})
}

func loadTB(tb testing.TB, dir string) *Tokenizer {
	tb.Helper()
	tok, err := Load(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// FuzzStream feeds any sequence of byte tokens (and the odd special or word token) to the stream
// decoder: its chunks are valid UTF-8 and add up to Decode, broken characters included.
func FuzzStream(f *testing.F) {
	f.Add([]byte("\xe2\x82A\xf0\x9f\x98\x80\xe0\x80\xff"))
	f.Add([]byte("\xc3"))
	tok := loadTB(f, filepath.Join("testdata", "spm", "bpe"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ids := make([]int, 0, len(data))
		for i, b := range data {
			switch {
			case i%7 == 3:
				ids = append(ids, tok.BOS(), tok.m.byteIDs[b])
			case i%5 == 4:
				ids = append(ids, tok.m.vocab["▁the"], tok.m.byteIDs[b])
			default:
				ids = append(ids, tok.m.byteIDs[b])
			}
		}
		checkStream(t, tok, ids)
	})
}
