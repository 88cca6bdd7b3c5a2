package checkpoint

import (
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/tensorio"
)

func TestTensors(t *testing.T) {
	noPrefix := func(n string) string { return strings.TrimPrefix(n, "transformer.") }
	tests := []struct {
		name   string
		config map[string]any
		dtype  string              // stored
		rename func(string) string // stored names
		extra  func(cfg *Config) map[string]*tensorio.Array
		shards int
	}{
		{name: "gpt2 with prefix", config: gpt2JSON(), dtype: "f32"},
		{name: "gpt2 without prefix, mask buffers, tied lm_head stored", config: gpt2JSON(), dtype: "f32", rename: noPrefix,
			extra: func(cfg *Config) map[string]*tensorio.Array {
				m := map[string]*tensorio.Array{"lm_head.weight": encode("f32", []int{cfg.Vocab, cfg.Hidden}, make([]float32, cfg.Vocab*cfg.Hidden))}
				for i := range cfg.Layers {
					p := "h." + string(rune('0'+i)) + ".attn."
					m[p+"bias"] = encode("f32", []int{1, 1, cfg.MaxSeq, cfg.MaxSeq}, make([]float32, cfg.MaxSeq*cfg.MaxSeq))
					m[p+"masked_bias"] = encode("f32", []int{}, []float32{-1e4})
				}
				return m
			}},
		{name: "gpt2 untied", config: with(gpt2JSON(), "tie_word_embeddings", false), dtype: "f32"},
		{name: "gpt2 f16", config: with(gpt2JSON(), "torch_dtype", "float16"), dtype: "f16"},
		{name: "llama GQA untied bf16", config: llamaJSON(), dtype: "bf16"},
		{name: "llama tied, rotary buffers", config: with(llamaJSON(), "tie_word_embeddings", true), dtype: "bf16",
			extra: func(cfg *Config) map[string]*tensorio.Array {
				return map[string]*tensorio.Array{"model.layers.1.self_attn.rotary_emb.inv_freq": encode("f32", []int{2}, []float32{1, 0.5})}
			}},
		{name: "llama attention_bias", config: with(llamaJSON(), "attention_bias", true), dtype: "f16"},
		{name: "qwen2 biases", config: with(llamaJSON(), "model_type", "qwen2"), dtype: "bf16"},
		{name: "llama sharded", config: llamaJSON(), dtype: "bf16", shards: 2},
		{name: "gpt2 three shards", config: gpt2JSON(), dtype: "f32", shards: 3, rename: noPrefix},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg, err := parseConfig("config.json", mustJSON(t, tt.config))
			if err != nil {
				t.Fatal(err)
			}
			tensors := weightsOf(cfg, tt.dtype, tt.rename)
			if tt.extra != nil {
				for k, v := range tt.extra(cfg) {
					tensors[k] = v
				}
			}
			writeFolder(t, dir, tt.config, tensors, tt.shards)
			if cfg, err = ReadConfig(dir); err != nil {
				t.Fatal(err)
			}
			ck, ws := openWeights(t, dir, cfg)
			defer ck.Close()
			if want := max(tt.shards, 1); len(ck.Files()) != want {
				t.Errorf("Files = %v, want %d", ck.Files(), want)
			}
			specs := Expected(cfg)
			if len(ws.List) != len(specs) {
				t.Fatalf("%d weights, want %d", len(ws.List), len(specs))
			}
			for _, want := range []string{"", "f32", "f16", "bf16"} {
				arrays, err := ws.Load(want)
				if err != nil {
					t.Fatal(err)
				}
				for i, s := range specs {
					w := ws.List[i]
					a := arrays[s.Name]
					if w.Name != s.Name || ws.Get(s.Name) != w || w.DType != tt.dtype || !slices.Equal(a.Shape, s.Shape) {
						t.Fatalf("weight %d = %+v, array %s%v; want %s%v stored as %s", i, w, a.DType, a.Shape, s.Name, s.Shape, tt.dtype)
					}
					if want == "" || want == "f32" {
						if a.DType != "f32" {
							t.Fatalf("%s: dtype %s, want f32", s.Name, a.DType)
						}
						for j, v := range decodeF32(a) {
							if v != value(s.Name, j) {
								t.Fatalf("%s[%d] = %g, want %g", s.Name, j, v, value(s.Name, j))
							}
						}
						continue
					}
					vals := make([]float32, numel(s.Shape))
					for j := range vals {
						vals[j] = value(s.Name, j)
					}
					if exp := encode(want, s.Shape, vals); a.DType != want || string(a.Data) != string(exp.Data) {
						t.Fatalf("%s as %s: got %s % x, want % x", s.Name, want, a.DType, a.Data[:min(8, len(a.Data))], exp.Data[:min(8, len(exp.Data))])
					}
				}
			}
		})
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := jsonMarshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestArrayOwnsData checks that a converted array outlives the checkpoint: it never aliases the
// mapping, which Close unmaps.
func TestArrayOwnsData(t *testing.T) {
	dir := t.TempDir()
	ck, ws := openWeights(t, dir, tinyGPT2(t, dir, "f32"))
	a, err := ws.Get("transformer.wte.weight").Array("f32")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ws.Get("transformer.wte.weight").Array("f64"); err == nil || !strings.Contains(err.Error(), `dtype "f64" is not supported`) {
		t.Errorf("Array(f64) = %v", err)
	}
	ck.Close()
	a.Data[0]++ // would fault if a aliased the read-only mapping
	if _, err := ws.Get("transformer.wte.weight").Array("f32"); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Array after Close = %v", err)
	}
}

// FuzzParseIndex checks that any index is accepted or refused without panicking, and that an
// accepted one places each tensor in exactly one .safetensors shard.
func FuzzParseIndex(f *testing.F) {
	f.Add([]byte(`{"metadata": {"total_size": 8}, "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}`))
	f.Add([]byte(`{"weight_map": {"a": "x.safetensors", "a": "y.safetensors"}}`))
	f.Add([]byte(`{"weight_map": {"a": "../x.safetensors", "b": 3}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		shards, err := parseIndex("index.json", in)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q is not one line", err)
			}
			return
		}
		seen := map[string]bool{}
		for i, s := range shards {
			if len(s.names) == 0 || !strings.HasSuffix(s.file, ".safetensors") || i > 0 && shards[i-1].file >= s.file {
				t.Fatalf("shard %+v", s)
			}
			for _, n := range s.names {
				if seen[n] || !s.tensors[n] {
					t.Fatalf("tensor %q placed twice", n)
				}
				seen[n] = true
			}
		}
	})
}
