package checkpoint_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gcomp/gcomp/checkpoint"
)

// GPT-2 small's config.json, as published.
const gpt2Small = `{
  "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "bos_token_id": 50256,
  "eos_token_id": 50256, "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024,
  "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024, "vocab_size": 50257
}`

func ExampleDescribe() {
	dir, _ := os.MkdirTemp("", "gpt2")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(gpt2Small), 0o644)
	cfg, err := checkpoint.ReadConfig(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(checkpoint.Describe(cfg))
	// Output:
	// gpt2: 12 layers, hidden 768, 12 heads of 64, MLP 3072 (gelu_tanh), vocabulary 50257, context 1024, tied embeddings; 124,439,808 parameters (124.4M), 497.8 MB in f32.
}
