package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// cacheDir returns the folder scripts/fetch-tokenizers.sh fills, skipping the test when it is
// absent (failing under CI, where GCOMP_REQUIRE_PTXAS is set and make tools has run).
func cacheDir(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join("..", ".cache", "tokenizers", name)
	if _, err := os.Stat(dir); err != nil {
		if os.Getenv("GCOMP_REQUIRE_PTXAS") != "" {
			t.Fatalf("%s is missing: run make tools (scripts/fetch-tokenizers.sh)", dir)
		}
		t.Skipf("%s is missing: run make tools (scripts/fetch-tokenizers.sh) to test against real vocabularies", dir)
	}
	return dir
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// texts is the committed set every tokenizer is checked on.
func texts(t testing.TB) []string {
	var s []string
	readJSON(t, filepath.Join("testdata", "texts.json"), &s)
	return s
}

// The JavaScript packages' own encoders wrote testdata/js_ids.json (scripts/tokenizer-data.mjs).
// gpt-3-encoder and llama-tokenizer-js read special-token strings as text; llama3-tokenizer-js
// reads them as special tokens and adds BOS, as Encode does.
var jsReferences = []struct {
	folder, ref string
	opts        EncodeOptions
}{
	{"gpt2", "gpt-3-encoder@1.1.4", EncodeOptions{}},
	{"gpt2-json", "gpt-3-encoder@1.1.4", EncodeOptions{}},
	{"llama2", "llama-tokenizer-js@1.2.2", EncodeOptions{AddSpecial: true}},
	{"llama3", "llama3-tokenizer-js@1.2.0", EncodeOptions{AddSpecial: true, SplitSpecial: true}},
}

func TestJSReferences(t *testing.T) {
	all := texts(t)
	var refs map[string][][]int
	readJSON(t, filepath.Join("testdata", "js_ids.json"), &refs)
	for _, c := range jsReferences {
		t.Run(c.folder, func(t *testing.T) {
			tok, err := Load(cacheDir(t, c.folder))
			if err != nil {
				t.Fatal(err)
			}
			want := refs[c.ref]
			if len(want) != len(all) {
				t.Fatalf("%s has %d texts' ids, texts.json %d texts", c.ref, len(want), len(all))
			}
			for i, text := range all {
				got, err := tok.EncodeWith(text, c.opts)
				if err != nil {
					t.Errorf("%q: %v", text, err)
					continue
				}
				if diff := cmp.Diff(want[i], got); diff != "" {
					t.Errorf("%q: ids differ from %s (-want +got):\n%s", text, c.ref, diff)
				}
				checkRoundTrip(t, tok, text)
			}
		})
	}
}

// checkRoundTrip checks decode(encode(x)) == x for plain encoding, and the stream decoder on the
// ids with and without special tokens.
func checkRoundTrip(t *testing.T, tok *Tokenizer, text string) {
	t.Helper()
	ids, err := tok.EncodeWith(text, EncodeOptions{})
	if err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	got, err := tok.Decode(ids)
	if err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	if got != text {
		t.Errorf("decode(encode(%q)) = %q", text, got)
	}
	withSpecial, err := tok.Encode(text)
	if err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	for _, ids := range [][]int{ids, withSpecial} {
		checkStream(t, tok, ids)
	}
}

// checkStream checks that a stream decoder's chunks of ids are valid UTF-8 and add up to Decode.
func checkStream(t *testing.T, tok *Tokenizer, ids []int) {
	t.Helper()
	want, err := tok.Decode(ids)
	if err != nil {
		t.Fatal(err)
	}
	d := tok.NewStreamDecoder()
	var all string
	for _, id := range ids {
		chunk, err := d.Next(id)
		if err != nil {
			t.Fatal(err)
		}
		if !utf8.ValidString(chunk) {
			t.Errorf("ids %v: stream chunk %q is not valid UTF-8", ids, chunk)
		}
		all += chunk
	}
	if all += d.Flush(); all != want {
		t.Errorf("ids %v: stream decoded %q, Decode %q", ids, all, want)
	}
}

// SentencePiece itself (python3-sentencepiece) wrote testdata/sp_ids.json for the two small
// models scripts/sentencepiece-reference.py trained; sp.encode adds no BOS.
func TestSentencePieceReferences(t *testing.T) {
	all := texts(t)
	var refs struct {
		IDs     map[string][][]int  `json:"ids"`
		Decoded map[string][]string `json:"decoded"`
	}
	readJSON(t, filepath.Join("testdata", "sp_ids.json"), &refs)
	for _, name := range []string{"bpe", "unigram"} {
		t.Run(name, func(t *testing.T) {
			tok, err := Load(filepath.Join("testdata", "spm", name))
			if err != nil {
				t.Fatal(err)
			}
			for i, text := range all {
				got, err := tok.EncodeWith(text, EncodeOptions{})
				if err != nil {
					t.Errorf("%q: %v", text, err)
					continue
				}
				if diff := cmp.Diff(refs.IDs[name][i], got); diff != "" {
					t.Errorf("%q: ids differ from SentencePiece's (-want +got):\n%s", text, diff)
				}
				dec, err := tok.Decode(got)
				if err != nil {
					t.Fatal(err)
				}
				if dec != refs.Decoded[name][i] {
					t.Errorf("%q: decoded %q, SentencePiece %q", text, dec, refs.Decoded[name][i])
				}
				if name == "bpe" { // the unigram model removes extra whitespace: no round trip
					checkRoundTrip(t, tok, text)
				}
			}
		})
	}
}
