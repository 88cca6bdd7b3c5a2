// Package gpt2 is GPT-2 as Hugging Face's transformers defines it (modeling_gpt2.py), for text
// generation over a static KV cache: token and learned position embeddings, pre-norm blocks of
// causal self-attention and a tanh-GELU MLP, a final layer norm and the LM head tied to the
// token embedding. Parameter names and layouts are Hugging Face's: transformer.h.0.attn.c_attn.weight
// and the other Conv1D weights are [in, out] (y = x·W + b), where nn.Linear's are [out, in].
//
// As in package llama, a model is two programs, Prefill and Decode, over the same weights and
// one KV cache, a state per layer L and keys or values: kv_cache.L.k and kv_cache.L.v
// [batch, heads, max_seq, head_dim] (nn.KVCache).
package gpt2

import (
	"strconv"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
)

// Config holds a model's sizes, as config.json gives them.
type Config struct {
	Vocab, Embd, Layers, Heads, Inner, MaxSeq int
	NormEps                                   float64
}

// HeadDim is n_embd / n_head.
func (c Config) HeadDim() int { return c.Embd / c.Heads }

// Tiny is a small configuration for examples and tests (lm's tests use GPT-2's real vocabulary
// of 50257 tokens; this one has 512).
var Tiny = Config{Vocab: 512, Embd: 32, Layers: 2, Heads: 4, Inner: 128, MaxSeq: 64, NormEps: 1e-5}

// Model builds Tiny's decode program (batch 1, or gcomp build --batch), for `gcomp build examples/gpt2/model.go`.
func Model(b *frontend.Builder) { Decode(b, Tiny, b.Batch(1)) }

// Prefill builds the program that reads T prompt tokens per sequence (input tokens [batch, T]).
func Prefill(b *frontend.Builder, c Config, batch, T int) { program(b, c, batch, T) }

// Decode builds the program that reads one token per sequence (input tokens [batch, 1]).
func Decode(b *frontend.Builder, c Config, batch int) { program(b, c, batch, 1) }

func program(b *frontend.Builder, c Config, batch, T int) {
	tokens := b.Input("tokens", ir.I64, batch, T).WithRange(0, c.Vocab)
	pos := b.Input("pos", ir.I64, batch).WithRange(0, c.MaxSeq-T+1)
	cache := nn.NewKVCache(b, "kv_cache", c.Layers, batch, c.Heads, c.MaxSeq, c.HeadDim())
	b.Output("logits", NewGPT2(b, c).Forward(tokens, pos, cache))
	cache.Output(b, "new_kv_cache")
}

// Conv1D is transformers' Conv1D: y = x·Weight + Bias with Weight [in, out].
type Conv1D struct {
	Weight, Bias *frontend.Tensor
}

// NewConv1D declares "name.weight" [in, out], N(0, 0.02), and "name.bias" [out], zeros.
func NewConv1D(b *frontend.Builder, name string, in, out int) *Conv1D {
	s := b.Sub(name)
	return &Conv1D{
		Weight: s.Param("weight", ir.T(ir.F32, in, out), frontend.Normal(0, 0.02)),
		Bias:   s.Param("bias", ir.T(ir.F32, out), frontend.Zeros()),
	}
}

// Forward applies the layer to x [..., in].
func (m *Conv1D) Forward(x *frontend.Tensor) *frontend.Tensor { return x.Matmul(m.Weight).Add(m.Bias) }

// GPT2 is GPT2LMHeadModel.
type GPT2 struct {
	Config
	WTE, WPE *nn.Embedding
	H        []*Block
	LNF      *nn.LayerNorm
}

// NewGPT2 declares the parameters with transformers' names (the transformer. prefix).
func NewGPT2(b *frontend.Builder, c Config) *GPT2 {
	t := b.Sub("transformer")
	m := &GPT2{
		Config: c,
		WTE:    nn.NewEmbedding(t, "wte", c.Vocab, c.Embd),
		WPE:    nn.NewEmbedding(t, "wpe", c.MaxSeq, c.Embd),
		LNF:    nn.NewLayerNorm(t, "ln_f", c.Embd, nn.LayerNormOptions{Eps: c.NormEps}),
	}
	h := t.Sub("h")
	for i := range c.Layers {
		m.H = append(m.H, NewBlock(h, strconv.Itoa(i), c))
	}
	return m
}

// Forward maps tokens [B, T] at positions pos[b].. to the logits of each sequence's last token
// [B, vocab], writing the keys and values into cache.
func (m *GPT2) Forward(tokens, pos *frontend.Tensor, cache *nn.KVCache) *frontend.Tensor {
	B, T := tokens.Dim(0), tokens.Dim(1)
	b := tokens.Builder()
	positions := pos.Reshape(B, 1).Add(b.Iota(ir.I64, 1, 1, T))
	x := m.WTE.Forward(tokens).Add(m.WPE.Forward(positions))
	for i, block := range m.H {
		x = block.Forward(x, pos, cache, i)
	}
	// The last position is taken after the norm, so ln_f has the layers' shape (one kernel
	// serves all of them).
	x = m.LNF.Forward(x).Index(1, T-1)
	return frontend.Linear(x, m.WTE.Weight, nil) // lm_head, tied to wte
}

// Block is GPT2Block: x + attn(ln_1(x)), then x + mlp(ln_2(x)).
type Block struct {
	LN1, LN2 *nn.LayerNorm
	Attn     *Attention
	MLP      *MLP
}

// NewBlock declares block name's parameters.
func NewBlock(b *frontend.Builder, name string, c Config) *Block {
	s := b.Sub(name)
	eps := nn.LayerNormOptions{Eps: c.NormEps}
	return &Block{
		LN1:  nn.NewLayerNorm(s, "ln_1", c.Embd, eps),
		Attn: NewAttention(s, "attn", c),
		LN2:  nn.NewLayerNorm(s, "ln_2", c.Embd, eps),
		MLP:  NewMLP(s, "mlp", c),
	}
}

// Forward applies the block to x [B, T, n_embd].
func (m *Block) Forward(x, pos *frontend.Tensor, cache *nn.KVCache, layer int) *frontend.Tensor {
	x = x.Add(m.Attn.Forward(m.LN1.Forward(x), pos, cache, layer))
	return x.Add(m.MLP.Forward(m.LN2.Forward(x)))
}

// Attention is GPT2Attention: c_attn computes q, k and v in one product, c_proj projects back.
type Attention struct {
	Heads, HeadDim int
	CAttn, CProj   *Conv1D
}

// NewAttention declares c_attn [n_embd, 3·n_embd] and c_proj [n_embd, n_embd].
func NewAttention(b *frontend.Builder, name string, c Config) *Attention {
	s := b.Sub(name)
	return &Attention{Heads: c.Heads, HeadDim: c.HeadDim(), CAttn: NewConv1D(s, "c_attn", c.Embd, 3*c.Embd), CProj: NewConv1D(s, "c_proj", c.Embd, c.Embd)}
}

// Forward attends from x [B, T, n_embd].
func (m *Attention) Forward(x, pos *frontend.Tensor, cache *nn.KVCache, layer int) *frontend.Tensor {
	B, T := x.Dim(0), x.Dim(1)
	qkv := m.CAttn.Forward(x).Chunk(3, -1)
	heads := func(t *frontend.Tensor) *frontend.Tensor { return t.Reshape(B, T, m.Heads, m.HeadDim).Transpose(1, 2) }
	o := cache.Attend(layer, heads(qkv[0]), heads(qkv[1]), heads(qkv[2]), pos)
	return m.CProj.Forward(o.Transpose(1, 2).Reshape(B, T, m.Heads*m.HeadDim))
}

// MLP is GPT2MLP: c_proj(gelu_new(c_fc(x))).
type MLP struct {
	CFc, CProj *Conv1D
}

// NewMLP declares c_fc [n_embd, inner] and c_proj [inner, n_embd].
func NewMLP(b *frontend.Builder, name string, c Config) *MLP {
	s := b.Sub(name)
	return &MLP{CFc: NewConv1D(s, "c_fc", c.Embd, c.Inner), CProj: NewConv1D(s, "c_proj", c.Inner, c.Embd)}
}

// Forward applies the MLP.
func (m *MLP) Forward(x *frontend.Tensor) *frontend.Tensor {
	return m.CProj.Forward(m.CFc.Forward(x).GeluTanh())
}
