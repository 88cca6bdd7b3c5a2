// Package llama is the Llama family of decoders (Llama 2 and 3, Mistral-style grouped-query
// attention, TinyLlama, Qwen2-like q/k/v biases) as Hugging Face's transformers defines it
// (modeling_llama.py), written with gcomp's nn modules: RMSNorm, rotary embeddings, grouped-query
// attention over a static KV cache and the SwiGLU MLP. Parameter names are Hugging Face's
// (model.layers.0.self_attn.q_proj.weight, ...), so a checkpoint folder's tensors bind as they are.
//
// A model is two programs over the same weights and one KV cache, a state per layer L and keys or
// values, kv_cache.L.k and kv_cache.L.v [batch, kv_heads, max_seq, head_dim] (nn.KVCache): Prefill
// reads a prompt of T tokens, Decode one token per sequence; both write their keys and values into
// the cache at the position input pos [batch] and output the next-token logits of each sequence's
// last token and the updated cache (new_kv_cache.L.k and .v, each written in place of its input).
package llama

import (
	"strconv"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
)

// Config holds a model's sizes, as config.json gives them.
type Config struct {
	Vocab, Hidden, Intermediate, Layers, Heads, KVHeads, MaxSeq int
	NormEps, RopeTheta                                          float64
	TiedEmbeddings, QKVBias, OutBias                            bool // OutBias: o_proj has a bias (attention_bias)
}

// HeadDim is hidden_size / num_attention_heads.
func (c Config) HeadDim() int { return c.Hidden / c.Heads }

// Tiny is a small configuration for examples and tests: 2 layers, 4 heads over 2 KV heads.
var Tiny = Config{Vocab: 320, Hidden: 64, Intermediate: 96, Layers: 2, Heads: 4, KVHeads: 2, MaxSeq: 64, NormEps: 1e-5, RopeTheta: 10000}

// Model builds Tiny's decode program (batch 1, or gcomp build --batch), for `gcomp build examples/llama/model.go`.
func Model(b *frontend.Builder) { Decode(b, Tiny, b.Batch(1)) }

// Prefill builds the program that reads T prompt tokens per sequence (input tokens [batch, T]).
func Prefill(b *frontend.Builder, c Config, batch, T int) { program(b, c, batch, T) }

// Decode builds the program that reads one token per sequence (input tokens [batch, 1]).
func Decode(b *frontend.Builder, c Config, batch int) { program(b, c, batch, 1) }

func program(b *frontend.Builder, c Config, batch, T int) {
	tokens := b.Input("tokens", ir.I64, batch, T).WithRange(0, c.Vocab)
	pos := b.Input("pos", ir.I64, batch).WithRange(0, c.MaxSeq-T+1)
	cache := nn.NewKVCache(b, "kv_cache", c.Layers, batch, c.KVHeads, c.MaxSeq, c.HeadDim())
	logits := NewLlama(b, c).Forward(tokens, pos, cache)
	b.Output("logits", logits)
	cache.Output(b, "new_kv_cache")
}

// Llama is the whole model: LlamaForCausalLM.
type Llama struct {
	Config
	EmbedTokens *nn.Embedding
	Layers      []*DecoderLayer
	Norm        *nn.RMSNorm
	LMHead      *nn.Linear // nil when tied to the embedding
	Rotary      nn.RotaryEmbedding
}

// NewLlama declares the parameters with transformers' names.
func NewLlama(b *frontend.Builder, c Config) *Llama {
	m := b.Sub("model")
	l := &Llama{
		Config:      c,
		EmbedTokens: nn.NewEmbedding(m, "embed_tokens", c.Vocab, c.Hidden),
		Norm:        nn.NewRMSNorm(m, "norm", c.Hidden, c.NormEps),
		Rotary:      nn.RotaryEmbedding{Dim: c.HeadDim(), Theta: c.RopeTheta},
	}
	layers := m.Sub("layers")
	for i := range c.Layers {
		l.Layers = append(l.Layers, NewDecoderLayer(layers, strconv.Itoa(i), c))
	}
	if !c.TiedEmbeddings {
		l.LMHead = nn.NewLinear(b, "lm_head", c.Hidden, c.Vocab, nn.LinearOptions{NoBias: true})
	}
	return l
}

// Forward maps tokens [B, T] at positions pos[b].. to the logits of each sequence's last token
// [B, vocab], writing the keys and values into cache.
func (m *Llama) Forward(tokens, pos *frontend.Tensor, cache *nn.KVCache) *frontend.Tensor {
	B, T := tokens.Dim(0), tokens.Dim(1)
	b := tokens.Builder()
	positions := pos.Reshape(B, 1).Add(b.Iota(ir.I64, 1, 1, T)) // [B, T]
	cos, sin := m.Rotary.CosSin(positions)                      // [B, T, D]
	cos, sin = cos.Unsqueeze(1), sin.Unsqueeze(1)               // over the heads
	x := m.EmbedTokens.Forward(tokens)
	for i, layer := range m.Layers {
		x = layer.Forward(x, pos, cos, sin, m.Rotary, cache, i)
	}
	// The last position is taken after the norm, so the final norm has the layers' shape (one
	// kernel serves all of them).
	x = m.Norm.Forward(x).Index(1, T-1)
	if m.LMHead == nil {
		return frontend.Linear(x, m.EmbedTokens.Weight, nil)
	}
	return m.LMHead.Forward(x)
}

// DecoderLayer is LlamaDecoderLayer: pre-norm attention and MLP, each added to the residual.
type DecoderLayer struct {
	InputLayernorm, PostAttentionLayernorm *nn.RMSNorm
	SelfAttn                               *Attention
	MLP                                    *nn.GatedMLP
}

// NewDecoderLayer declares layer name's parameters.
func NewDecoderLayer(b *frontend.Builder, name string, c Config) *DecoderLayer {
	s := b.Sub(name)
	return &DecoderLayer{
		InputLayernorm:         nn.NewRMSNorm(s, "input_layernorm", c.Hidden, c.NormEps),
		PostAttentionLayernorm: nn.NewRMSNorm(s, "post_attention_layernorm", c.Hidden, c.NormEps),
		SelfAttn:               NewAttention(s, "self_attn", c),
		MLP:                    nn.NewGatedMLP(s, "mlp", c.Hidden, c.Intermediate),
	}
}

// Forward applies the layer to x [B, T, hidden].
func (m *DecoderLayer) Forward(x, pos, cos, sin *frontend.Tensor, rot nn.RotaryEmbedding, cache *nn.KVCache, layer int) *frontend.Tensor {
	x = x.Add(m.SelfAttn.Forward(m.InputLayernorm.Forward(x), pos, cos, sin, rot, cache, layer))
	return x.Add(m.MLP.Forward(m.PostAttentionLayernorm.Forward(x)))
}

// Attention is LlamaAttention: q, k, v projections (biases with QKVBias), rotary embeddings on
// q and k, grouped-query attention over the cache, the output projection.
type Attention struct {
	Heads, KVHeads, HeadDim    int
	QProj, KProj, VProj, OProj *nn.Linear
}

// NewAttention declares q_proj [heads·d, hidden], k_proj and v_proj [kv_heads·d, hidden] and
// o_proj [hidden, heads·d].
func NewAttention(b *frontend.Builder, name string, c Config) *Attention {
	s := b.Sub(name)
	d := c.HeadDim()
	qkv := nn.LinearOptions{NoBias: !c.QKVBias}
	return &Attention{
		Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: d,
		QProj: nn.NewLinear(s, "q_proj", c.Hidden, c.Heads*d, qkv),
		KProj: nn.NewLinear(s, "k_proj", c.Hidden, c.KVHeads*d, qkv),
		VProj: nn.NewLinear(s, "v_proj", c.Hidden, c.KVHeads*d, qkv),
		OProj: nn.NewLinear(s, "o_proj", c.Heads*d, c.Hidden, nn.LinearOptions{NoBias: !c.OutBias}),
	}
}

// Forward attends from x [B, T, hidden].
func (m *Attention) Forward(x, pos, cos, sin *frontend.Tensor, rot nn.RotaryEmbedding, cache *nn.KVCache, layer int) *frontend.Tensor {
	B, T := x.Dim(0), x.Dim(1)
	heads := func(t *frontend.Tensor, n int) *frontend.Tensor { return t.Reshape(B, T, n, m.HeadDim).Transpose(1, 2) }
	q := rot.Apply(heads(m.QProj.Forward(x), m.Heads), cos, sin)
	k := rot.Apply(heads(m.KProj.Forward(x), m.KVHeads), cos, sin)
	v := heads(m.VProj.Forward(x), m.KVHeads)
	o := cache.Attend(layer, q, k, v, pos) // [B, H, T, D]
	return m.OProj.Forward(o.Transpose(1, 2).Reshape(B, T, m.Heads*m.HeadDim))
}
