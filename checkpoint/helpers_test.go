package checkpoint

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gcomp/gcomp/tensorio"
)

// Tiny configurations of each family, as Hugging Face writes them.
func gpt2JSON() map[string]any {
	return map[string]any{
		"model_type": "gpt2", "architectures": []string{"GPT2LMHeadModel"},
		"n_embd": 8, "n_layer": 2, "n_head": 2, "n_positions": 16, "n_ctx": 16, "vocab_size": 20,
		"n_inner": nil, "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
		"bos_token_id": 19, "eos_token_id": 19, "torch_dtype": "float32",
	}
}

func llamaJSON() map[string]any {
	return map[string]any{
		"model_type": "llama", "hidden_size": 16, "intermediate_size": 24, "num_hidden_layers": 2,
		"num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 30,
		"max_position_embeddings": 32, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
		"rope_scaling": nil, "hidden_act": "silu", "tie_word_embeddings": false,
		"attention_bias": false, "bos_token_id": 1, "eos_token_id": []int{2, 3}, "torch_dtype": "bfloat16",
	}
}

// with returns a copy of m with the given key/value pairs set (a nil value writes null) or,
// for a key prefixed "-", removed.
func with(m map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		k := kv[i].(string)
		if k[0] == '-' {
			delete(out, k[1:])
			continue
		}
		out[k] = kv[i+1]
	}
	return out
}

func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// value is the deterministic value of element i of tensor name: a multiple of 1/64 below 2 in
// magnitude, exact in f32, f16 and bf16, so every conversion can be checked exactly.
func value(name string, i int) float32 {
	var h uint32
	for _, c := range name {
		h = h*31 + uint32(c)
	}
	return float32(int((h+7*uint32(i))%255)-127) / 64
}

// encode stores vals as dtype.
func encode(dtype string, shape []int, vals []float32) *tensorio.Array {
	size := sizes[dtype]
	a := &tensorio.Array{DType: dtype, Shape: shape, Data: make([]byte, len(vals)*size)}
	for i, v := range vals {
		converters[dtype](a.Data[i*size:], v)
	}
	return a
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// weightsOf builds every weight cfg expects, stored as dtype, under names rename gives (nil keeps
// the canonical ones).
func weightsOf(cfg *Config, dtype string, rename func(string) string) map[string]*tensorio.Array {
	out := map[string]*tensorio.Array{}
	for _, s := range Expected(cfg) {
		vals := make([]float32, numel(s.Shape))
		for i := range vals {
			vals[i] = value(s.Name, i)
		}
		name := s.Name
		if rename != nil {
			name = rename(name)
		}
		out[name] = encode(dtype, s.Shape, vals)
	}
	return out
}

// writeFolder writes a checkpoint folder: config.json and the tensors in one model.safetensors or,
// with shards > 1, in that many shards and an index.
func writeFolder(t testing.TB, dir string, config map[string]any, tensors map[string]*tensorio.Array, shards int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeJSON(t, filepath.Join(dir, ConfigFile), config)
	if shards <= 1 {
		if err := tensorio.WriteSafetensorsFile(filepath.Join(dir, WeightsFile), tensors, map[string]string{"format": "pt"}); err != nil {
			t.Fatal(err)
		}
		return
	}
	parts := make([]map[string]*tensorio.Array, shards)
	weightMap := map[string]string{}
	i := 0
	for _, name := range sortedKeys(tensors) {
		k := i * shards / len(tensors)
		if parts[k] == nil {
			parts[k] = map[string]*tensorio.Array{}
		}
		parts[k][name] = tensors[name]
		weightMap[name] = fmt.Sprintf("model-%05d-of-%05d.safetensors", k+1, shards)
		i++
	}
	for k, p := range parts {
		if err := tensorio.WriteSafetensorsFile(filepath.Join(dir, fmt.Sprintf("model-%05d-of-%05d.safetensors", k+1, shards)), p, nil); err != nil {
			t.Fatal(err)
		}
	}
	writeJSON(t, filepath.Join(dir, IndexFile), map[string]any{"metadata": map[string]any{"total_size": 0}, "weight_map": weightMap})
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// decodeF32 reads an f32 array's values.
func decodeF32(a *tensorio.Array) []float32 {
	out := make([]float32, len(a.Data)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(a.Data[4*i:]))
	}
	return out
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// tinyGPT2 writes the tiny GPT-2 folder with its weights stored as dtype.
func tinyGPT2(t testing.TB, dir, dtype string) *Config {
	t.Helper()
	cfg, err := parseConfig("config.json", mustJSON(t, gpt2JSON()))
	if err != nil {
		t.Fatal(err)
	}
	writeFolder(t, dir, gpt2JSON(), weightsOf(cfg, dtype, nil), 1)
	return cfg
}

// openWeights opens dir's weights and matches them to cfg; any error fails the test.
func openWeights(t testing.TB, dir string, cfg *Config) (*Checkpoint, *Weights) {
	t.Helper()
	ck, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := ck.Tensors(cfg)
	if err != nil {
		ck.Close()
		t.Fatal(err)
	}
	return ck, ws
}
