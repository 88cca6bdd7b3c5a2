// Package gpt is a GPT-2-style decoder: token and position embeddings, pre-norm blocks of
// causal self-attention and a GELU MLP, a final layer norm and an LM head tied to the token
// embedding. Parameter names follow nanoGPT's state_dict (transformer.wte.weight,
// transformer.h.0.attn.c_attn.weight, ...), whose Linear weights are [out, in].
package gpt

import (
	"math"
	"strconv"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
)

// The sizes of the example model.
const (
	NLayer    = 2
	NEmbd     = 128
	NHead     = 4
	VocabSize = 512
	SeqLen    = 64
)

// The sizes of GPT-2 small (with a sequence of 128), built by GPT2Small.
const (
	SmallNLayer    = 12
	SmallNEmbd     = 768
	SmallNHead     = 12
	SmallVocabSize = 50257
	SmallSeqLen    = 128
)

// Config holds a model's sizes.
type Config struct {
	NLayer, NEmbd, NHead, VocabSize, SeqLen int
}

// Model builds the example model: input tokens i64[1,64] in [0, 512), output logits f32[1,64,512].
func Model(b *frontend.Builder) {
	build(b, Config{NLayer, NEmbd, NHead, VocabSize, SeqLen})
}

// GPT2Small builds the GPT-2 small configuration: 12 layers, d=768, 12 heads, vocabulary 50257,
// sequence 128.
func GPT2Small(b *frontend.Builder) {
	build(b, Config{SmallNLayer, SmallNEmbd, SmallNHead, SmallVocabSize, SmallSeqLen})
}

func build(b *frontend.Builder, c Config) {
	tokens := b.Input("tokens", frontend.I64, b.Batch(1), c.SeqLen).WithRange(0, c.VocabSize)
	b.Output("logits", NewGPT(b, c).Forward(tokens))
}

// GPT is the whole model.
type GPT struct {
	WTE, WPE *nn.Embedding
	H        []*Block
	LNF      *nn.LayerNorm
}

// NewGPT declares the parameters with nanoGPT's names and initializers: N(0, 0.02) for
// embeddings and linear weights (N(0, 0.02/√(2·layers)) for the residual projections), zero
// biases.
func NewGPT(b *frontend.Builder, c Config) *GPT {
	t := b.Sub("transformer")
	m := &GPT{
		WTE: nn.NewEmbedding(t, "wte", c.VocabSize, c.NEmbd),
		WPE: nn.NewEmbedding(t, "wpe", c.SeqLen, c.NEmbd),
	}
	m.WTE.Weight.SetInit(frontend.Normal(0, 0.02))
	m.WPE.Weight.SetInit(frontend.Normal(0, 0.02))
	h := t.Sub("h")
	for i := range c.NLayer {
		m.H = append(m.H, NewBlock(h, strconv.Itoa(i), c))
	}
	m.LNF = nn.NewLayerNorm(t, "ln_f", c.NEmbd)
	return m
}

// Forward maps token ids [B, T] to next-token logits [B, T, vocab].
func (m *GPT) Forward(tokens *frontend.Tensor) *frontend.Tensor {
	pos := tokens.Builder().Arange(tokens.Dim(1), frontend.I64)
	x := m.WTE.Forward(tokens).Add(m.WPE.Forward(pos))
	for _, block := range m.H {
		x = block.Forward(x)
	}
	x = m.LNF.Forward(x)
	return frontend.Linear(x, m.WTE.Weight, nil) // lm_head, tied to wte
}

// Block is one pre-norm transformer block.
type Block struct {
	LN1  *nn.LayerNorm
	Attn *CausalSelfAttention
	LN2  *nn.LayerNorm
	MLP  *MLP
}

// NewBlock declares the block's parameters under name: ln_1, attn, ln_2, mlp.
func NewBlock(b *frontend.Builder, name string, c Config) *Block {
	s := b.Sub(name)
	return &Block{
		LN1:  nn.NewLayerNorm(s, "ln_1", c.NEmbd),
		Attn: NewCausalSelfAttention(s, "attn", c),
		LN2:  nn.NewLayerNorm(s, "ln_2", c.NEmbd),
		MLP:  NewMLP(s, "mlp", c),
	}
}

// Forward applies x + attn(ln_1(x)), then x + mlp(ln_2(x)).
func (m *Block) Forward(x *frontend.Tensor) *frontend.Tensor {
	x = x.Add(m.Attn.Forward(m.LN1.Forward(x)))
	return x.Add(m.MLP.Forward(m.LN2.Forward(x)))
}

// CausalSelfAttention is multi-head self-attention with a causal mask; c_attn computes q, k and
// v in one product.
type CausalSelfAttention struct {
	CAttn, CProj *nn.Linear
	NHead        int
}

// NewCausalSelfAttention declares c_attn [3C, C] and c_proj [C, C] under name.
func NewCausalSelfAttention(b *frontend.Builder, name string, c Config) *CausalSelfAttention {
	s := b.Sub(name)
	m := &CausalSelfAttention{
		CAttn: nn.NewLinear(s, "c_attn", c.NEmbd, 3*c.NEmbd),
		CProj: nn.NewLinear(s, "c_proj", c.NEmbd, c.NEmbd),
		NHead: c.NHead,
	}
	initLinear(m.CAttn, 0.02)
	initLinear(m.CProj, 0.02/math.Sqrt(2*float64(c.NLayer)))
	return m
}

// Forward attends over x [B, T, C].
func (m *CausalSelfAttention) Forward(x *frontend.Tensor) *frontend.Tensor {
	bsz, t, c := x.Dim(0), x.Dim(1), x.Dim(2)
	qkv := m.CAttn.Forward(x).Chunk(3, 2)
	heads := func(z *frontend.Tensor) *frontend.Tensor { // [B, T, C] → [B, nh, T, hs]
		return z.View(bsz, t, m.NHead, c/m.NHead).Transpose(1, 2)
	}
	y := frontend.ScaledDotProductAttention(heads(qkv[0]), heads(qkv[1]), heads(qkv[2]), true)
	y = y.Transpose(1, 2).Reshape(bsz, t, c)
	return m.CProj.Forward(y)
}

// MLP is the block's feed-forward network: c_fc [4C, C], GELU, c_proj [C, 4C].
type MLP struct {
	CFC, CProj *nn.Linear
}

// NewMLP declares c_fc and c_proj under name.
func NewMLP(b *frontend.Builder, name string, c Config) *MLP {
	s := b.Sub(name)
	m := &MLP{
		CFC:   nn.NewLinear(s, "c_fc", c.NEmbd, 4*c.NEmbd),
		CProj: nn.NewLinear(s, "c_proj", 4*c.NEmbd, c.NEmbd),
	}
	initLinear(m.CFC, 0.02)
	initLinear(m.CProj, 0.02/math.Sqrt(2*float64(c.NLayer)))
	return m
}

// Forward applies c_proj(gelu(c_fc(x))).
func (m *MLP) Forward(x *frontend.Tensor) *frontend.Tensor {
	return m.CProj.Forward(m.CFC.Forward(x).Gelu())
}

func initLinear(l *nn.Linear, std float64) {
	l.Weight.SetInit(frontend.Normal(0, std))
	l.Bias.SetInit(frontend.Zeros())
}

// GPT2Medium, GPT2Large and GPT2XL build the larger GPT-2 configurations at their full context
// of 1024 tokens (24, 36 and 48 layers; d = 1024, 1280, 1600; 16, 20 and 25 heads): the models
// docs/perf.md times the compiler on.
func GPT2Medium(b *frontend.Builder) { build(b, Config{24, 1024, 16, 50257, 1024}) }

// GPT2Large: see GPT2Medium.
func GPT2Large(b *frontend.Builder) { build(b, Config{36, 1280, 20, 50257, 1024}) }

// GPT2XL: see GPT2Medium.
func GPT2XL(b *frontend.Builder) { build(b, Config{48, 1600, 25, 50257, 1024}) }

// GPT2Sizes lists the GPT-2 configurations by name, smallest first, for benchmarks.
var GPT2Sizes = []struct {
	Name  string
	Model func(*frontend.Builder)
}{{"small", GPT2Small}, {"medium", GPT2Medium}, {"large", GPT2Large}, {"xl", GPT2XL}}
