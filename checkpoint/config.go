package checkpoint

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/gcomp/gcomp/quant"
	"github.com/gcomp/gcomp/tensorio"
)

// Config is a checkpoint's config.json, normalized over the model families gcomp reads: the sizes
// a model is built from, whatever names its family gives them.
type Config struct {
	Arch      string // "gpt2" or "llama"
	ModelType string // model_type as written: gpt2, llama, mistral, qwen2

	Layers       int // transformer blocks
	Hidden       int // model width
	Heads        int // query heads
	KVHeads      int // key/value heads (= Heads without grouped-query attention)
	HeadDim      int // Hidden / Heads
	Intermediate int // MLP width
	Vocab        int
	MaxSeq       int // positions the model was trained for (bounded by a sliding window, if any)

	NormEps   float64 // layer norm (gpt2) or RMS norm (llama) epsilon
	RopeTheta float64 // rotary embedding base (llama; 0 for gpt2)

	TiedEmbeddings bool   // the output projection is the token embedding
	QKVBias        bool   // q, k and v projections carry biases
	OutBias        bool   // the attention output projection carries a bias
	MLPBias        bool   // the MLP's projections carry biases (gpt2)
	Activation     string // "gelu_tanh" (gpt2's gelu_new) or "silu"

	BOS int   // beginning-of-sequence token, -1 when the config names none
	EOS []int // end-of-sequence tokens (Llama 3 lists several)

	DType string // torch_dtype as gcomp names it: "f32", "f16", "bf16", or "" when not given

	Quant *quant.Format // quantization_config (gptq, awq), nil for a float checkpoint
}

// Bounds on config.json's sizes: far above any published model, low enough that arithmetic on
// them cannot overflow and a hostile file cannot ask for absurd buffers.
const (
	maxLayers       = 1 << 10
	maxHidden       = 1 << 16
	maxHeads        = 1 << 10
	maxIntermediate = 1 << 18
	maxVocab        = 1 << 22
	maxSeq          = 1 << 21
	maxConfigBytes  = 1 << 20
)

// ConfigFile is the name of a checkpoint folder's configuration.
const ConfigFile = "config.json"

// ReadConfig reads and checks dir/config.json. Every error names the file and the field.
func ReadConfig(dir string) (*Config, error) {
	path, err := resolve(dir, ConfigFile)
	if err != nil {
		return nil, err
	}
	data, err := tensorio.ReadFile(path, maxConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return parseConfig(filepath.Join(dir, ConfigFile), data)
}

// parseConfig checks config.json's bytes; file names it in errors.
func parseConfig(file string, data []byte) (*Config, error) {
	f := &fields{file: "checkpoint: " + file}
	if err := json.Unmarshal(data, &f.m); err != nil || f.m == nil {
		if err == nil {
			err = fmt.Errorf("want an object")
		}
		return nil, fmt.Errorf("%s: malformed JSON: %v", f.file, err)
	}
	c := &Config{ModelType: f.str("model_type", "")}
	if f.err == nil {
		switch c.ModelType {
		case "gpt2":
			c.Arch = "gpt2"
			gpt2Config(f, c)
		case "llama", "mistral", "qwen2":
			c.Arch = "llama"
			llamaConfig(f, c)
		case "":
			f.fail("model_type is missing")
		default:
			f.fail("model_type %q is not supported (gpt2, llama, mistral, qwen2)", c.ModelType)
		}
	}
	c.BOS = -1
	if ids := f.ids("bos_token_id", c.Vocab); len(ids) > 1 {
		f.fail("bos_token_id: want one token id, have %d", len(ids))
	} else if len(ids) == 1 {
		c.BOS = ids[0]
	}
	c.EOS = f.ids("eos_token_id", c.Vocab)
	c.DType = torchDType(f)
	quantConfig(f, c)
	if f.err != nil {
		return nil, f.err
	}
	return c, nil
}

func gpt2Config(f *fields, c *Config) {
	c.Hidden = f.int("n_embd", -1, 1, maxHidden)
	c.Layers = f.int("n_layer", -1, 1, maxLayers)
	c.Heads = f.int("n_head", -1, 1, maxHeads)
	c.Vocab = f.int("vocab_size", -1, 1, maxVocab)
	if f.has("n_positions") || !f.has("n_ctx") {
		c.MaxSeq = f.int("n_positions", -1, 1, maxSeq)
	} else {
		c.MaxSeq = f.int("n_ctx", -1, 1, maxSeq)
	}
	c.Intermediate = f.int("n_inner", 4*c.Hidden, 1, maxIntermediate)
	c.NormEps = f.float("layer_norm_epsilon", 1e-5, 0, 1)
	switch act := f.str("activation_function", "gelu_new"); act {
	case "gelu_new", "gelu_pytorch_tanh":
		c.Activation = "gelu_tanh"
	default:
		f.fail("activation_function %q is not supported (gelu_new, gelu_pytorch_tanh)", act)
	}
	if !f.bool("scale_attn_weights", true) {
		f.fail("scale_attn_weights false is not supported")
	}
	if f.bool("scale_attn_by_inverse_layer_idx", false) {
		f.fail("scale_attn_by_inverse_layer_idx true is not supported")
	}
	c.TiedEmbeddings = f.bool("tie_word_embeddings", true)
	c.KVHeads = c.Heads
	c.QKVBias, c.OutBias, c.MLPBias = true, true, true
	headDim(f, c, "n_embd", "n_head")
}

func llamaConfig(f *fields, c *Config) {
	c.Hidden = f.int("hidden_size", -1, 1, maxHidden)
	c.Intermediate = f.int("intermediate_size", -1, 1, maxIntermediate)
	c.Layers = f.int("num_hidden_layers", -1, 1, maxLayers)
	c.Heads = f.int("num_attention_heads", -1, 1, maxHeads)
	c.KVHeads = f.int("num_key_value_heads", c.Heads, 1, maxHeads)
	c.Vocab = f.int("vocab_size", -1, 1, maxVocab)
	c.MaxSeq = f.int("max_position_embeddings", -1, 1, maxSeq)
	c.NormEps = f.float("rms_norm_eps", 1e-6, 0, 1)
	c.RopeTheta = f.float("rope_theta", 10000, 0, 1e12)
	if act := f.str("hidden_act", "silu"); act != "silu" {
		f.fail("hidden_act %q is not supported (silu)", act)
	}
	c.Activation = "silu"
	c.TiedEmbeddings = f.bool("tie_word_embeddings", false)
	if c.ModelType == "qwen2" {
		c.QKVBias = true // Qwen2's q, k and v projections always carry biases, and its config says nothing
	} else {
		c.QKVBias = f.bool("attention_bias", false)
		c.OutBias = c.QKVBias // Llama's attention_bias adds a bias to all four projections
	}
	if f.bool("mlp_bias", false) {
		f.fail("mlp_bias true is not supported")
	}
	ropeScaling(f)
	slidingWindow(f, c)
	if f.err == nil && c.Heads%c.KVHeads != 0 {
		f.fail("num_key_value_heads %d does not divide num_attention_heads %d", c.KVHeads, c.Heads)
	}
	headDim(f, c, "hidden_size", "num_attention_heads")
	if f.err == nil && c.HeadDim%2 != 0 {
		f.fail("head dimension %d (hidden_size / num_attention_heads) is odd; rotary embeddings need it even", c.HeadDim)
	}
	if f.err == nil && f.has("head_dim") {
		if hd := f.int("head_dim", 0, 1, maxHidden); f.err == nil && hd != c.HeadDim {
			f.fail("head_dim %d is not hidden_size / num_attention_heads = %d", hd, c.HeadDim)
		}
	}
}

// headDim sets HeadDim, checking that the heads divide the width.
func headDim(f *fields, c *Config, width, heads string) {
	if f.err != nil {
		return
	}
	if c.Hidden%c.Heads != 0 {
		f.fail("%s %d does not divide %s %d", heads, c.Heads, width, c.Hidden)
		return
	}
	c.HeadDim = c.Hidden / c.Heads
}

// ropeScaling accepts no scaling (absent, null, or rope_type "default") and refuses every scheme by
// name: each changes the rotary frequencies, and a model read without it would be silently wrong.
func ropeScaling(f *fields) {
	r := f.raw("rope_scaling")
	if r == nil || f.err != nil {
		return
	}
	var s map[string]json.RawMessage
	if err := json.Unmarshal(r, &s); err != nil || s == nil {
		f.fail("rope_scaling: want an object or null, have %s", short(r))
		return
	}
	sf := &fields{file: f.file, m: s}
	kind := sf.str("rope_type", sf.str("type", ""))
	if sf.err != nil {
		f.fail("rope_scaling %s", strings.TrimPrefix(sf.err.Error(), f.file+": "))
		return
	}
	switch kind {
	case "default":
	case "":
		f.fail("rope_scaling %s names no type; only null is supported", short(r))
	default:
		f.fail("rope_scaling type %q is not supported", kind)
	}
}

// slidingWindow bounds the context by a sliding window: within the window, sliding-window
// attention is full causal attention, so the model is exact up to that length.
func slidingWindow(f *fields, c *Config) {
	if f.err != nil || c.ModelType == "qwen2" && !f.bool("use_sliding_window", false) {
		return // Qwen2 writes sliding_window but uses it only with use_sliding_window
	}
	if w := f.int("sliding_window", 0, 1, maxSeq); w > 0 && w < c.MaxSeq {
		c.MaxSeq = w
	}
}

// torchDType reads torch_dtype (or dtype, its newer name).
func torchDType(f *fields) string {
	key := "torch_dtype"
	if !f.has(key) {
		key = "dtype"
	}
	switch d := f.str(key, ""); d {
	case "":
		return ""
	case "float32":
		return "f32"
	case "float16":
		return "f16"
	case "bfloat16":
		return "bf16"
	default:
		f.fail("%s %q is not supported (float32, float16, bfloat16)", key, d)
		return ""
	}
}
