package checkpoint

import (
	"fmt"
	"regexp"
	"strings"
)

// Spec is one weight a model expects: its canonical Hugging Face name and its shape.
type Spec struct {
	Name  string
	Shape []int
}

// Expected lists the weights a model of cfg holds, in model order (embeddings, each layer, the
// final norm, the output projection), under the names Hugging Face's transformers gives them.
// GPT-2's Conv1D weights are [in, out]; Llama's Linear weights are [out, in]. lm_head.weight is
// listed only when the embeddings are not tied.
func Expected(cfg *Config) []Spec {
	if cfg.Arch == "gpt2" {
		return gpt2Specs(cfg)
	}
	return llamaSpecs(cfg)
}

func gpt2Specs(c *Config) []Spec {
	d, n := c.Hidden, c.Intermediate
	s := []Spec{{"transformer.wte.weight", []int{c.Vocab, d}}, {"transformer.wpe.weight", []int{c.MaxSeq, d}}}
	for i := range c.Layers {
		p := fmt.Sprintf("transformer.h.%d.", i)
		s = append(s,
			Spec{p + "ln_1.weight", []int{d}}, Spec{p + "ln_1.bias", []int{d}},
			Spec{p + "attn.c_attn.weight", []int{d, 3 * d}}, Spec{p + "attn.c_attn.bias", []int{3 * d}},
			Spec{p + "attn.c_proj.weight", []int{d, d}}, Spec{p + "attn.c_proj.bias", []int{d}},
			Spec{p + "ln_2.weight", []int{d}}, Spec{p + "ln_2.bias", []int{d}},
			Spec{p + "mlp.c_fc.weight", []int{d, n}}, Spec{p + "mlp.c_fc.bias", []int{n}},
			Spec{p + "mlp.c_proj.weight", []int{n, d}}, Spec{p + "mlp.c_proj.bias", []int{d}})
	}
	s = append(s, Spec{"transformer.ln_f.weight", []int{d}}, Spec{"transformer.ln_f.bias", []int{d}})
	if !c.TiedEmbeddings {
		s = append(s, Spec{"lm_head.weight", []int{c.Vocab, d}})
	}
	return s
}

func llamaSpecs(c *Config) []Spec {
	d, n, q, kv := c.Hidden, c.Intermediate, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	s := []Spec{{"model.embed_tokens.weight", []int{c.Vocab, d}}}
	for i := range c.Layers {
		p := fmt.Sprintf("model.layers.%d.", i)
		s = append(s, Spec{p + "input_layernorm.weight", []int{d}},
			Spec{p + "self_attn.q_proj.weight", []int{q, d}},
			Spec{p + "self_attn.k_proj.weight", []int{kv, d}},
			Spec{p + "self_attn.v_proj.weight", []int{kv, d}})
		if c.QKVBias {
			s = append(s, Spec{p + "self_attn.q_proj.bias", []int{q}},
				Spec{p + "self_attn.k_proj.bias", []int{kv}},
				Spec{p + "self_attn.v_proj.bias", []int{kv}})
		}
		s = append(s, Spec{p + "self_attn.o_proj.weight", []int{d, q}})
		if c.OutBias {
			s = append(s, Spec{p + "self_attn.o_proj.bias", []int{d}})
		}
		s = append(s, Spec{p + "post_attention_layernorm.weight", []int{d}},
			Spec{p + "mlp.gate_proj.weight", []int{n, d}},
			Spec{p + "mlp.up_proj.weight", []int{n, d}},
			Spec{p + "mlp.down_proj.weight", []int{d, n}})
	}
	s = append(s, Spec{"model.norm.weight", []int{d}})
	if !c.TiedEmbeddings {
		s = append(s, Spec{"lm_head.weight", []int{c.Vocab, d}})
	}
	return s
}

// Buffers that files carry beside the weights and that a model recomputes: GPT-2's causal mask
// (attn.bias, [1, 1, n_positions, n_positions]) and masked_bias, and the rotary inverse
// frequencies older Llama files saved.
var (
	gpt2Buffer  = regexp.MustCompile(`^transformer\.h\.[0-9]+\.attn\.(bias|masked_bias)$`)
	llamaBuffer = regexp.MustCompile(`^model\.layers\.[0-9]+\.self_attn\.rotary_emb\.inv_freq$`)
)

// canonical returns the canonical name of a tensor as a file names it, or "" for a buffer the
// model does not read. GPT-2 files come with and without the "transformer." prefix (GPT2Model
// against GPT2LMHeadModel), Llama files with and without "model.".
func canonical(arch, name string) string {
	if name == "lm_head.weight" {
		return name
	}
	prefix, buffer := "model.", llamaBuffer
	if arch == "gpt2" {
		prefix, buffer = "transformer.", gpt2Buffer
	}
	if !strings.HasPrefix(name, prefix) {
		name = prefix + name
	}
	if buffer.MatchString(name) {
		return ""
	}
	return name
}
