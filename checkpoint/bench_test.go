package checkpoint

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gcomp/gcomp/tensorio"
)

// BenchmarkLoadGPT2Small opens a checkpoint of GPT-2 small's size (124M parameters) and converts
// every weight: f32 stored and read as f32, bf16 read as f32 (a bf16 checkpoint computing in f32),
// bf16 kept as bf16. Bytes per second are the file's.
func BenchmarkLoadGPT2Small(b *testing.B) {
	cfg, err := parseConfig("config.json", []byte(`{"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "n_positions": 1024, "vocab_size": 50257}`))
	if err != nil {
		b.Fatal(err)
	}
	for _, tt := range []struct{ name, stored, want string }{{"f32", "f32", "f32"}, {"bf16_to_f32", "bf16", "f32"}, {"bf16", "bf16", "bf16"}} {
		b.Run(tt.name, func(b *testing.B) {
			dir := b.TempDir()
			writeFolder(b, dir, map[string]any{"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "n_positions": 1024, "vocab_size": 50257},
				sharedWeights(cfg, tt.stored), 1)
			st, err := os.Stat(filepath.Join(dir, WeightsFile))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(st.Size())
			b.ResetTimer()
			for range b.N {
				ck, ws := openWeights(b, dir, cfg)
				if _, err := ws.Load(tt.want); err != nil {
					b.Fatal(err)
				}
				ck.Close()
			}
		})
	}
}

// sharedWeights builds cfg's weights as dtype over one buffer of varied bytes, so a large
// checkpoint is written without holding all of it.
func sharedWeights(cfg *Config, dtype string) map[string]*tensorio.Array {
	specs := Expected(cfg)
	largest := 0
	for _, s := range specs {
		largest = max(largest, numel(s.Shape))
	}
	vals := make([]float32, largest)
	for i := range vals {
		vals[i] = value("w", i)
	}
	buf := encode(dtype, []int{largest}, vals).Data
	out := map[string]*tensorio.Array{}
	for _, s := range specs {
		out[s.Name] = &tensorio.Array{DType: dtype, Shape: s.Shape, Data: buf[:numel(s.Shape)*sizes[dtype]]}
	}
	return out
}
