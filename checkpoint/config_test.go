package checkpoint

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadConfig(t *testing.T) {
	gpt2 := &Config{Arch: "gpt2", ModelType: "gpt2", Layers: 2, Hidden: 8, Heads: 2, KVHeads: 2, HeadDim: 4,
		Intermediate: 32, Vocab: 20, MaxSeq: 16, NormEps: 1e-5, TiedEmbeddings: true, QKVBias: true,
		OutBias: true, MLPBias: true, Activation: "gelu_tanh", BOS: 19, EOS: []int{19}, DType: "f32"}
	llama := &Config{Arch: "llama", ModelType: "llama", Layers: 2, Hidden: 16, Heads: 4, KVHeads: 2, HeadDim: 4,
		Intermediate: 24, Vocab: 30, MaxSeq: 32, NormEps: 1e-5, RopeTheta: 500000, Activation: "silu",
		BOS: 1, EOS: []int{2, 3}, DType: "bf16"}
	change := func(c *Config, f func(*Config)) *Config {
		d := *c
		f(&d)
		return &d
	}
	tests := []struct {
		name   string
		config map[string]any
		want   *Config
	}{
		{"gpt2", gpt2JSON(), gpt2},
		{"gpt2 n_ctx only, no optional fields", with(gpt2JSON(), "-n_positions", nil, "-n_inner", nil, "-activation_function", nil,
			"-layer_norm_epsilon", nil, "-bos_token_id", nil, "-eos_token_id", nil, "-torch_dtype", nil),
			change(gpt2, func(c *Config) { c.BOS, c.EOS, c.DType = -1, nil, "" })},
		{"gpt2 untied, n_inner, gelu_pytorch_tanh", with(gpt2JSON(), "tie_word_embeddings", false, "n_inner", 12, "activation_function", "gelu_pytorch_tanh"),
			change(gpt2, func(c *Config) { c.TiedEmbeddings, c.Intermediate = false, 12 })},
		{"llama GQA", llamaJSON(), llama},
		{"llama defaults", with(llamaJSON(), "-num_key_value_heads", nil, "-rope_theta", nil, "-rms_norm_eps", nil, "-hidden_act", nil,
			"-tie_word_embeddings", nil, "-attention_bias", nil, "-rope_scaling", nil, "eos_token_id", 2, "dtype", "float16", "-torch_dtype", nil),
			change(llama, func(c *Config) { c.KVHeads, c.RopeTheta, c.NormEps, c.EOS, c.DType = 4, 10000, 1e-6, []int{2}, "f16" })},
		{"llama attention_bias, tied, head_dim, default rope", with(llamaJSON(), "attention_bias", true, "tie_word_embeddings", true, "head_dim", 4,
			"rope_scaling", map[string]any{"rope_type": "default"}),
			change(llama, func(c *Config) { c.QKVBias, c.OutBias, c.TiedEmbeddings = true, true, true })},
		{"mistral sliding window bounds the context", with(llamaJSON(), "model_type", "mistral", "sliding_window", 8),
			change(llama, func(c *Config) { c.ModelType, c.MaxSeq = "mistral", 8 })},
		{"mistral window past the context", with(llamaJSON(), "model_type", "mistral", "sliding_window", 4096),
			change(llama, func(c *Config) { c.ModelType = "mistral" })},
		{"qwen2: q/k/v biases, window unused", with(llamaJSON(), "model_type", "qwen2", "sliding_window", 8, "use_sliding_window", false, "-attention_bias", nil),
			change(llama, func(c *Config) { c.ModelType, c.QKVBias = "qwen2", true })},
		{"qwen2 with its window", with(llamaJSON(), "model_type", "qwen2", "sliding_window", 8, "use_sliding_window", true),
			change(llama, func(c *Config) { c.ModelType, c.QKVBias, c.MaxSeq = "qwen2", true, 8 })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeJSON(t, filepath.Join(dir, ConfigFile), tt.config)
			got, err := ReadConfig(dir)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ReadConfig (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadConfigErrors(t *testing.T) {
	tests := []struct {
		name   string
		config any // a map written as JSON, or a string written as is
		want   string
	}{
		{"malformed", `{"model_type": "gpt2",`, "config.json: malformed JSON: unexpected end of JSON input"},
		{"not an object", `[1, 2]`, "config.json: malformed JSON"},
		{"null", `null`, "config.json: malformed JSON: want an object"},
		{"no model_type", with(gpt2JSON(), "-model_type", nil), "config.json: model_type is missing"},
		{"model_type not a string", with(gpt2JSON(), "model_type", 3), "config.json: model_type: want a string, have 3"},
		{"unknown model_type", with(gpt2JSON(), "model_type", "bert"), `config.json: model_type "bert" is not supported (gpt2, llama, mistral, qwen2)`},
		{"missing size", with(gpt2JSON(), "-n_embd", nil), "config.json: n_embd is missing"},
		{"no context", with(gpt2JSON(), "-n_positions", nil, "-n_ctx", nil), "config.json: n_positions is missing"},
		{"string size", with(gpt2JSON(), "n_layer", "12"), `config.json: n_layer: want a number, have "12"`},
		{"fractional size", with(gpt2JSON(), "n_head", 1.5), "config.json: n_head: want an integer, have 1.5"},
		{"zero size", with(gpt2JSON(), "n_embd", 0), "config.json: n_embd 0 is out of range [1, 65536]"},
		{"huge vocabulary", with(gpt2JSON(), "vocab_size", 1e15), "config.json: vocab_size 1000000000000000 is out of range [1, 4194304]"},
		{"huge context", with(llamaJSON(), "max_position_embeddings", 1<<40), "config.json: max_position_embeddings 1099511627776 is out of range"},
		{"heads do not divide", with(gpt2JSON(), "n_head", 3), "config.json: n_head 3 does not divide n_embd 8"},
		{"gpt2 relu", with(gpt2JSON(), "activation_function", "relu"), `config.json: activation_function "relu" is not supported (gelu_new, gelu_pytorch_tanh)`},
		{"gpt2 inverse layer scaling", with(gpt2JSON(), "scale_attn_by_inverse_layer_idx", true), "config.json: scale_attn_by_inverse_layer_idx true is not supported"},
		{"gpt2 unscaled attention", with(gpt2JSON(), "scale_attn_weights", false), "config.json: scale_attn_weights false is not supported"},
		{"bad epsilon", with(gpt2JSON(), "layer_norm_epsilon", -1), "config.json: layer_norm_epsilon -1 is out of range (0, 1]"},
		{"tie not a bool", with(gpt2JSON(), "tie_word_embeddings", "yes"), `config.json: tie_word_embeddings: want true or false, have "yes"`},
		{"kv heads do not divide", with(llamaJSON(), "num_key_value_heads", 3), "config.json: num_key_value_heads 3 does not divide num_attention_heads 4"},
		{"kv heads zero", with(llamaJSON(), "num_key_value_heads", 0), "config.json: num_key_value_heads 0 is out of range"},
		{"head_dim disagrees", with(llamaJSON(), "head_dim", 8), "config.json: head_dim 8 is not hidden_size / num_attention_heads = 4"},
		{"odd head dimension", with(llamaJSON(), "hidden_size", 12, "num_attention_heads", 4, "num_key_value_heads", 4), "config.json: head dimension 3 (hidden_size / num_attention_heads) is odd"},
		{"rope_scaling yarn", with(llamaJSON(), "rope_scaling", map[string]any{"type": "yarn", "factor": 4.0}), `config.json: rope_scaling type "yarn" is not supported`},
		{"rope_scaling llama3", with(llamaJSON(), "rope_scaling", map[string]any{"rope_type": "llama3", "factor": 8.0}), `config.json: rope_scaling type "llama3" is not supported`},
		{"rope_scaling untyped", with(llamaJSON(), "rope_scaling", map[string]any{"factor": 2.0}), `config.json: rope_scaling { "factor": 2 } names no type; only null is supported`},
		{"rope_scaling not an object", with(llamaJSON(), "rope_scaling", 2), "config.json: rope_scaling: want an object or null, have 2"},
		{"rope_scaling type not a string", with(llamaJSON(), "rope_scaling", map[string]any{"type": 1}), "config.json: rope_scaling type: want a string, have 1"},
		{"rope_theta zero", with(llamaJSON(), "rope_theta", 0), "config.json: rope_theta 0 is out of range"},
		{"gelu llama", with(llamaJSON(), "hidden_act", "gelu"), `config.json: hidden_act "gelu" is not supported (silu)`},
		{"mlp_bias", with(llamaJSON(), "mlp_bias", true), "config.json: mlp_bias true is not supported"},
		{"eos outside the vocabulary", with(llamaJSON(), "eos_token_id", []int{2, 30}), "config.json: eos_token_id 30 is outside the vocabulary of 30 tokens"},
		{"bos negative", with(gpt2JSON(), "bos_token_id", -1), "config.json: bos_token_id -1 is outside the vocabulary of 20 tokens"},
		{"two bos", with(gpt2JSON(), "bos_token_id", []int{1, 2}), "config.json: bos_token_id: want one token id, have 2"},
		{"eos not an id", with(gpt2JSON(), "eos_token_id", "eos"), `config.json: eos_token_id: want a token id or a list of them, have "eos"`},
		{"torch_dtype", with(llamaJSON(), "torch_dtype", "float64"), `config.json: torch_dtype "float64" is not supported (float32, float16, bfloat16)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, ConfigFile)
			if s, ok := tt.config.(string); ok {
				if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				writeJSON(t, path, tt.config)
			}
			c, err := ReadConfig(dir)
			if err == nil || !strings.HasPrefix(err.Error(), "checkpoint: "+dir+"/") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadConfig = %+v, %v; want an error naming the file and containing %q", c, err, tt.want)
			}
		})
	}
}

func TestReadConfigFiles(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nothing")
	notDir := filepath.Join(dir, "file")
	os.WriteFile(notDir, nil, 0o644)
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	big := filepath.Join(dir, "big")
	os.Mkdir(big, 0o755)
	os.WriteFile(filepath.Join(big, ConfigFile), make([]byte, maxConfigBytes+1), 0o644)
	for _, tt := range []struct{ dir, want string }{
		{missing, "checkpoint: " + missing + ": no such folder"},
		{notDir, "checkpoint: " + notDir + ": not a folder"},
		{empty, "checkpoint: " + filepath.Join(empty, ConfigFile) + ": no such file"},
		{big, "checkpoint: " + filepath.Join(big, ConfigFile) + ": the file is 1048577 bytes, more than the limit of 1048576"},
	} {
		if _, err := ReadConfig(tt.dir); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("ReadConfig(%s) = %v, want %q", tt.dir, err, tt.want)
		}
	}
}

// FuzzParseConfig checks that any config.json is accepted or refused without panicking, and that
// an accepted one describes a consistent model.
func FuzzParseConfig(f *testing.F) {
	for _, m := range []map[string]any{gpt2JSON(), llamaJSON(), with(llamaJSON(), "model_type", "qwen2"), with(llamaJSON(), "rope_scaling", map[string]any{"type": "yarn"})} {
		b, _ := json.Marshal(m)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := parseConfig("config.json", in)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "checkpoint: config.json: ") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q is not one line naming the file", err)
			}
			return
		}
		if c.Heads%c.KVHeads != 0 || c.HeadDim*c.Heads != c.Hidden || c.MaxSeq < 1 || c.Vocab < 1 || c.Layers < 1 || c.Intermediate < 1 {
			t.Fatalf("inconsistent config accepted: %+v", c)
		}
		for _, s := range Expected(c) {
			for _, d := range s.Shape {
				if d < 1 {
					t.Fatalf("%s has shape %v", s.Name, s.Shape)
				}
			}
		}
		if Params(c) <= 0 || Describe(c) == "" {
			t.Fatalf("config %+v: %d parameters", c, Params(c))
		}
	})
}

// TestParams checks parameter counts against the published ones of real models' configs.
func TestParams(t *testing.T) {
	tests := []struct {
		name   string
		config map[string]any
		want   int64
	}{
		{"GPT-2 small", map[string]any{"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "n_positions": 1024, "vocab_size": 50257}, 124439808},
		{"GPT-2 XL", map[string]any{"model_type": "gpt2", "n_embd": 1600, "n_layer": 48, "n_head": 25, "n_positions": 1024, "vocab_size": 50257}, 1557611200},
		{"Llama 2 7B", map[string]any{"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
			"num_attention_heads": 32, "vocab_size": 32000, "max_position_embeddings": 4096}, 6738415616},
		{"TinyLlama 1.1B", map[string]any{"model_type": "llama", "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 22,
			"num_attention_heads": 32, "num_key_value_heads": 4, "vocab_size": 32000, "max_position_embeddings": 2048}, 1100048384},
		{"Mistral 7B", map[string]any{"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
			"num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 32768, "sliding_window": 4096}, 7241732096},
		{"Qwen2 0.5B", map[string]any{"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
			"num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936, "max_position_embeddings": 32768, "tie_word_embeddings": true}, 494032768},
	}
	for _, tt := range tests {
		c, err := parseConfig("config.json", mustJSON(t, tt.config))
		if err != nil {
			t.Fatal(err)
		}
		if got := Params(c); got != tt.want {
			t.Errorf("%s: %d parameters, want %d", tt.name, got, tt.want)
		}
	}
}
