package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The splits JavaScript's regular expressions (the patterns as llama3-tokenizer-js rewrites them)
// give; every pattern alternative and the whitespace lookahead are exercised.
func TestSplitPatterns(t *testing.T) {
	const want = `{"texts":["abc 12345 x","I'M here, they'RE","a  \n\n b\t\tc  ","x!!\n\ny"," ?? ok","(\"quoted\")","ab\r\n\r\n  cd","3.14+2"],"gpt2":[["abc"," 12345"," x"],["I","'","M"," here",","," they","'","RE"],["a","  \n\n"," b","\t","\t","c","  "],["x","!!","\n","\n","y"],[" ??"," ok"],["(\"","quoted","\")"],["ab","\r\n\r\n "," cd"],["3",".","14","+","2"]],"llama3":[["abc"," ","123","45"," x"],["I","'M"," here",","," they","'RE"],["a","  \n\n"," b","\t","\tc","  "],["x","!!\n\n","y"],[" ??"," ok"],["(\"","quoted","\")"],["ab","\r\n\r\n"," "," cd"],["3",".","14","+","2"]],"qwen2":[["abc"," ","1","2","3","4","5"," x"],["I","'M"," here",","," they","'RE"],["a","  \n\n"," b","\t","\tc","  "],["x","!!\n\n","y"],[" ??"," ok"],["(\"","quoted","\")"],["ab","\r\n\r\n"," "," cd"],["3",".","1","4","+","2"]]}`
	var ref map[string]json.RawMessage
	if err := json.Unmarshal([]byte(want), &ref); err != nil {
		t.Fatal(err)
	}
	var texts []string
	json.Unmarshal(ref["texts"], &texts)
	for name, kind := range map[string]splitKind{"gpt2": splitGPT2, "llama3": splitLlama3, "qwen2": splitQwen2} {
		var splits [][]string
		json.Unmarshal(ref[name], &splits)
		for i, text := range texts {
			if diff := cmp.Diff(splits[i], kind.split(text, nil)); diff != "" {
				t.Errorf("%s split of %q (-want +got):\n%s", name, text, diff)
			}
		}
	}
}

func load(t *testing.T, dir string) *Tokenizer {
	t.Helper()
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func encode(t *testing.T, tok *Tokenizer, text string, o EncodeOptions) []int {
	t.Helper()
	ids, err := tok.EncodeWith(text, o)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

var withSpecial = EncodeOptions{AddSpecial: true, SplitSpecial: true}

// Special tokens come from the configuration files: GPT-2's <|endoftext|> in either form, Llama
// 2's template BOS, Llama 3's several EOS ids (tokenizer_config.json's first, then
// generation_config.json's).
func TestSpecialTokens(t *testing.T) {
	for _, c := range []struct {
		folder   string
		bos      int
		eos      []int
		text     string
		special  []int // Encode
		plainLen int   // EncodeWith(EncodeOptions{}): the special token's text as ordinary text
		empty    []int // Encode(""): the BOS a tokenizer adds, or nothing
	}{
		{"gpt2", 50256, []int{50256}, "Hi<|endoftext|>", []int{17250, 50256}, 8, nil},
		{"gpt2-json", 50256, []int{50256}, "Hi<|endoftext|>", []int{17250, 50256}, 8, nil},
		{"llama2", 1, []int{2}, "<s>Hello</s>", []int{1, 1, 15043, 2}, 7, []int{1}},
		{"llama3", 128000, []int{128001, 128008, 128009}, "Hi<|eot_id|>", []int{128000, 13347, 128009}, 8, []int{128000}},
	} {
		t.Run(c.folder, func(t *testing.T) {
			tok := load(t, cacheDir(t, c.folder))
			if tok.BOS() != c.bos || !cmp.Equal(tok.EOS(), c.eos) {
				t.Errorf("BOS %d, EOS %v; want %d, %v", tok.BOS(), tok.EOS(), c.bos, c.eos)
			}
			for _, id := range c.eos {
				if !tok.IsEOS(id) {
					t.Errorf("IsEOS(%d) = false", id)
				}
			}
			got, err := tok.Encode(c.text)
			if err != nil {
				t.Fatal(err)
			}
			if !cmp.Equal(got, c.special) {
				t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.special)
			}
			if empty, err := tok.Encode(""); err != nil || !slices.Equal(empty, c.empty) {
				t.Errorf("Encode(\"\") = %v, %v; want %v", empty, err, c.empty)
			}
			if plain := encode(t, tok, c.text, EncodeOptions{}); len(plain) != c.plainLen {
				t.Errorf("plain encoding of %q = %v, want %d ids", c.text, plain, c.plainLen)
			}
			// Decode leaves special tokens out.
			text, err := tok.Decode(got)
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.NewReplacer("<|endoftext|>", "", "<s>", "", "</s>", "", "<|eot_id|>", "").Replace(c.text); text != want {
				t.Errorf("Decode(%v) = %q, want %q", got, text, want)
			}
		})
	}
}

// A SentencePiece-style tokenizer.json may say Metaspace (Mistral's newer files) instead of the
// Prepend and Replace normalizers (Llama 2's): the same ids where the text does not start with a
// space (Metaspace's "first" adds no "▁" before one that is there already).
func TestMetaspaceForm(t *testing.T) {
	dir := cacheDir(t, "llama2")
	var f map[string]any
	readJSON(t, filepath.Join(dir, "tokenizer.json"), &f)
	f["normalizer"] = nil
	f["pre_tokenizer"] = map[string]any{"type": "Metaspace", "replacement": metaSpace, "prepend_scheme": "first", "split": false}
	out := folder(t, map[string]string{"tokenizer.json": mustJSON(f)})
	cfg, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(out, "tokenizer_config.json"), cfg, 0o644)
	meta := load(t, out)
	legacy := load(t, dir)
	n := 0
	for _, text := range texts(t) {
		if strings.HasPrefix(text, " ") {
			continue
		}
		n++
		bos := EncodeOptions{AddSpecial: true}
		if diff := cmp.Diff(encode(t, legacy, text, bos), encode(t, meta, text, bos)); diff != "" {
			t.Errorf("%q: Metaspace form differs (-Prepend/Replace +Metaspace):\n%s", text, diff)
		}
		checkRoundTrip(t, meta, text)
	}
	if n < 20 {
		t.Fatalf("only %d texts compared", n)
	}
	// "first": a text after a special token gets no "▁"; "always" gives it one.
	if got, want := encode(t, meta, "</s>Hello", withSpecial), []int{1, 2, 10994}; !cmp.Equal(got, want) {
		t.Errorf("first: %v, want %v", got, want)
	}
	f["pre_tokenizer"] = map[string]any{"type": "Metaspace", "replacement": metaSpace, "prepend_scheme": "always", "split": true}
	always := load(t, folder(t, map[string]string{"tokenizer.json": mustJSON(f)}))
	if got, want := encode(t, always, "</s>Hello world", withSpecial), []int{1, 2, 15043, 3186}; !cmp.Equal(got, want) {
		t.Errorf("always, split: %v, want %v", got, want)
	}
}

// A character outside the vocabulary becomes its bytes' pieces; the stream decoder holds a
// character's first bytes back until it is complete, and Flush writes an incomplete one as one
// U+FFFD, as Decode does.
func TestStreamBytes(t *testing.T) {
	tok := load(t, filepath.Join("testdata", "spm", "bpe"))
	ids := encode(t, tok, "a😀b", EncodeOptions{})
	var chunks []string
	d := tok.NewStreamDecoder()
	for _, id := range ids {
		s, err := d.Next(id)
		if err != nil {
			t.Fatal(err)
		}
		chunks = append(chunks, s)
	}
	want := []string{"a", "", "", "", "😀", "b"}
	if !cmp.Equal(chunks, want) {
		t.Errorf("ids %v streamed as %q, want %q", ids, chunks, want)
	}
	// The first two bytes of 😀, then the end.
	d = tok.NewStreamDecoder()
	part := ids[1:3]
	for _, id := range part {
		if s, _ := d.Next(id); s != "" {
			t.Errorf("Next(%d) = %q before the character is complete", id, s)
		}
	}
	flushed := d.Flush()
	decoded, err := tok.Decode(part)
	if err != nil {
		t.Fatal(err)
	}
	if flushed != "\uFFFD" || decoded != flushed {
		t.Errorf("Flush %q, Decode %q; want one U+FFFD", flushed, decoded)
	}
	// The dummy prefix's space is dropped once, at the start of the text only.
	d = tok.NewStreamDecoder()
	var all string
	for _, id := range encode(t, tok, "a b", EncodeOptions{}) {
		s, _ := d.Next(id)
		all += s
	}
	if all != "a b" {
		t.Errorf("streamed %q, want %q", all, "a b")
	}
}

// tokenizer.model folders follow Llama's convention: BOS is added, unless tokenizer_config.json
// says otherwise.
func TestSentencePieceBOS(t *testing.T) {
	dir := filepath.Join("testdata", "spm", "bpe")
	tok := load(t, dir)
	ids, err := tok.Encode("a")
	if err != nil {
		t.Fatal(err)
	}
	if ids[0] != 1 || tok.BOS() != 1 || !cmp.Equal(tok.EOS(), []int{2}) {
		t.Errorf("Encode(\"a\") = %v, BOS %d, EOS %v; want BOS 1 first and EOS [2]", ids, tok.BOS(), tok.EOS())
	}
	data, err := os.ReadFile(filepath.Join(dir, "tokenizer.model"))
	if err != nil {
		t.Fatal(err)
	}
	noBOS := load(t, folder(t, map[string]string{"tokenizer.model": string(data), "tokenizer_config.json": `{"add_bos_token": false, "add_eos_token": true}`}))
	got, err := noBOS.Encode("a")
	if err != nil {
		t.Fatal(err)
	}
	if want := append(append([]int{}, ids[1:]...), 2); !cmp.Equal(got, want) {
		t.Errorf("with add_bos_token false, add_eos_token true: %v, want %v", got, want)
	}
}

// Bytes that are not UTF-8 decode as JavaScript's TextDecoder and Rust's from_utf8_lossy write
// them: one U+FFFD per maximal piece that begins a character, else per byte.
func TestValidUTF8(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"ab", "ab"},
		{"\xe2\x82A", "\uFFFDA"},               // a 3-byte character cut short
		{"\xe2\x82", "\uFFFD"},                 // at the end
		{"\xf0\x9f\x98", "\uFFFD"},             // a 4-byte character cut short
		{"\xe0\x80\x80", "\uFFFD\uFFFD\uFFFD"}, // overlong: E0 needs A0..BF next
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"}, // a surrogate
		{"\xff\xfeA", "\uFFFD\uFFFDA"},
		{"\x80\x80", "\uFFFD\uFFFD"},
		{"\xc3\xa9\xc3", "é\uFFFD"},
	} {
		if got := validUTF8([]byte(c.in)); got != c.want {
			t.Errorf("validUTF8(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A Split pre-tokenizer without ByteLevel still splits: no merge crosses a word boundary.
func TestSplitWithoutByteLevel(t *testing.T) {
	f := tinyJSON()
	set(f, "model.vocab", map[string]any{"a": 0, "b": 1, " ": 2, "ab": 3, "b ": 4, " ab": 5})
	set(f, "model.merges", []any{[]any{"b", " "}, []any{"a", "b"}, []any{" ", "ab"}})
	set(f, "added_tokens", []any{})
	set(f, "pre_tokenizer", map[string]any{"type": "Split", "pattern": map[string]any{"Regex": patternGPT2}, "behavior": "Isolated"})
	tok := load(t, folder(t, map[string]string{"tokenizer.json": mustJSON(f)}))
	if got, want := encode(t, tok, "ab ab", EncodeOptions{}), []int{3, 5}; !cmp.Equal(got, want) {
		t.Errorf("split: %v, want %v", got, want)
	}
	set(f, "pre_tokenizer", nil)
	tok = load(t, folder(t, map[string]string{"tokenizer.json": mustJSON(f)}))
	if got, want := encode(t, tok, "ab ab", EncodeOptions{}), []int{0, 4, 3}; !cmp.Equal(got, want) {
		t.Errorf("no split: %v, want %v", got, want)
	}
}
