package nn

import (
	"strconv"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// MultiheadAttentionOptions are the optional arguments of NewMultiheadAttention.
type MultiheadAttentionOptions struct {
	BatchFirst bool    // inputs are [batch, seq, embed] rather than PyTorch's default [seq, batch, embed]
	NoBias     bool    // PyTorch's bias=False
	Dropout    float64 // on the attention weights, in training mode only (attention_dropout.go)
}

// MultiheadAttention is nn.MultiheadAttention with equal query, key and value sizes.
type MultiheadAttention struct {
	EmbedDim, NumHeads int
	BatchFirst         bool
	Dropout            float64          // on the attention weights in training mode
	InProjWeight       *frontend.Tensor // "in_proj_weight" [3E, E]: the q, k and v projections stacked; xavier_uniform
	InProjBias         *frontend.Tensor // "in_proj_bias" [3E], zeros; nil with NoBias
	OutProj            *Linear          // "out_proj.weight" [E, E], "out_proj.bias" [E] (zeros)
}

// NewMultiheadAttention declares the parameters of nn.MultiheadAttention(embedDim, numHeads)
// in b's scope under name, with PyTorch's state_dict names and initializers.
func NewMultiheadAttention(b *frontend.Builder, name string, embedDim, numHeads int, opts ...MultiheadAttentionOptions) *MultiheadAttention {
	o := one(b, opts)
	if numHeads < 1 || embedDim%numHeads != 0 {
		b.Fail("multihead attention %s: embed_dim %d must be divisible by num_heads %d", b.Prefix()+name, embedDim, numHeads)
	}
	checkDropout(b, o.Dropout)
	s := b.Sub(name)
	e := embedDim
	m := &MultiheadAttention{EmbedDim: e, NumHeads: numHeads, BatchFirst: o.BatchFirst, Dropout: o.Dropout}
	m.InProjWeight = s.Param("in_proj_weight", ir.T(ir.F32, 3*e, e), frontend.XavierUniform(e, 3*e))
	if !o.NoBias {
		m.InProjBias = s.Param("in_proj_bias", ir.T(ir.F32, 3*e), frontend.Zeros())
	}
	m.OutProj = NewLinear(s, "out_proj", e, e, LinearOptions{NoBias: o.NoBias})
	if m.OutProj.Bias != nil {
		m.OutProj.Bias.SetInit(frontend.Zeros())
	}
	return m
}

// Forward attends from query to key and value: softmax(q·kᵀ/√d)·v in each head, then the output
// projection. With BatchFirst the inputs are [B, L, E] and [B, S, E], else [L, B, E] and
// [S, B, E]; 2-D inputs are one unbatched sequence. With causal, position i attends only to
// positions j ≤ i. Like PyTorch with need_weights=False, it returns only the attention output.
// In training mode the attention weights go through dropout with probability m.Dropout.
func (m *MultiheadAttention) Forward(query, key, value *frontend.Tensor, causal bool) *frontend.Tensor {
	b := query.Builder()
	e, h := m.EmbedDim, m.NumHeads
	for _, t := range []*frontend.Tensor{query, key, value} {
		if r := t.Rank(); (r != 2 && r != 3) || t.Dim(-1) != e || t.Rank() != query.Rank() {
			b.Fail("multihead attention: want query, key and value of embed dim %d, all 2-D or 3-D: %v, %v, %v", e, query, key, value)
		}
	}
	unbatched := query.Rank() == 2
	toBatchFirst := func(t *frontend.Tensor) *frontend.Tensor {
		switch {
		case unbatched:
			return t.Unsqueeze(0)
		case !m.BatchFirst:
			return t.Transpose(0, 1)
		}
		return t
	}
	q, k, v := toBatchFirst(query), toBatchFirst(key), toBatchFirst(value)
	if query == key && key == value {
		qkv := frontend.Linear(q, m.InProjWeight, m.InProjBias).Chunk(3, -1)
		q, k, v = qkv[0], qkv[1], qkv[2]
	} else {
		ws := m.InProjWeight.Chunk(3, 0)
		bs := []*frontend.Tensor{nil, nil, nil}
		if m.InProjBias != nil {
			bs = m.InProjBias.Chunk(3, 0)
		}
		q, k, v = frontend.Linear(q, ws[0], bs[0]), frontend.Linear(k, ws[1], bs[1]), frontend.Linear(v, ws[2], bs[2])
	}
	heads := func(t *frontend.Tensor) *frontend.Tensor { // [B, L, E] → [B, H, L, E/H]
		return t.Reshape(t.Dim(0), t.Dim(1), h, e/h).Transpose(1, 2)
	}
	o := attend(heads(q), heads(k), heads(v), causal, m.Dropout)
	o = o.Transpose(1, 2).Reshape(o.Dim(0), o.Dim(2), e)
	o = m.OutProj.Forward(o)
	switch {
	case unbatched:
		return o.Squeeze(0)
	case !m.BatchFirst:
		return o.Transpose(0, 1)
	}
	return o
}

// TransformerEncoderLayerOptions are the optional arguments of NewTransformerEncoderLayer;
// zero values mean PyTorch's defaults, except Dropout, which is 0 rather than PyTorch's 0.1 (the
// two build the same inference graph; they differ in training mode).
type TransformerEncoderLayerOptions struct {
	DimFeedforward int     // default 2048
	Dropout        float64 // in training mode only, as nn.Dropout (attention_dropout.go)
	Activation     string  // "relu" (default) or "gelu"
	LayerNormEps   float64 // default 1e-5
	BatchFirst     bool
	NormFirst      bool // pre-norm: x + SA(LN(x)); the default is post-norm LN(x + SA(x))
	NoBias         bool
}

// TransformerEncoderLayer is nn.TransformerEncoderLayer: self-attention and a feed-forward
// network, each with a residual connection and a layer norm.
type TransformerEncoderLayer struct {
	SelfAttn         *MultiheadAttention // "self_attn.*"
	Linear1, Linear2 *Linear             // "linear1.*" [FF, D], "linear2.*" [D, FF]
	Norm1, Norm2     *LayerNorm          // "norm1.*", "norm2.*"
	Activation       Module
	NormFirst        bool
	Dropout          float64 // dropout, dropout1, dropout2 and the attention's, in training mode
}

// NewTransformerEncoderLayer declares the parameters of
// nn.TransformerEncoderLayer(dModel, nhead, ...) in b's scope under name, with PyTorch's
// state_dict names.
func NewTransformerEncoderLayer(b *frontend.Builder, name string, dModel, nhead int, opts ...TransformerEncoderLayerOptions) *TransformerEncoderLayer {
	o := one(b, opts)
	checkDropout(b, o.Dropout)
	ff := o.DimFeedforward
	if ff == 0 {
		ff = 2048
	}
	m := &TransformerEncoderLayer{NormFirst: o.NormFirst, Dropout: o.Dropout}
	switch o.Activation {
	case "", "relu":
		m.Activation = ReLU{}
	case "gelu":
		m.Activation = GELU{}
	default:
		b.Fail(`transformer encoder layer: activation must be "relu" or "gelu", have %q`, o.Activation)
	}
	s := b.Sub(name)
	m.SelfAttn = NewMultiheadAttention(s, "self_attn", dModel, nhead, MultiheadAttentionOptions{BatchFirst: o.BatchFirst, NoBias: o.NoBias, Dropout: o.Dropout})
	m.Linear1 = NewLinear(s, "linear1", dModel, ff, LinearOptions{NoBias: o.NoBias})
	m.Linear2 = NewLinear(s, "linear2", ff, dModel, LinearOptions{NoBias: o.NoBias})
	ln := LayerNormOptions{Eps: o.LayerNormEps, NoBias: o.NoBias}
	m.Norm1 = NewLayerNorm(s, "norm1", dModel, ln)
	m.Norm2 = NewLayerNorm(s, "norm2", dModel, ln)
	return m
}

// Forward applies the layer to src ([B, S, D] with BatchFirst, else [S, B, D]).
func (m *TransformerEncoderLayer) Forward(src *frontend.Tensor) *frontend.Tensor {
	return m.forward(src, false)
}

// ForwardCausal applies the layer with a causal self-attention mask (PyTorch's is_causal=True
// with the square subsequent mask).
func (m *TransformerEncoderLayer) ForwardCausal(src *frontend.Tensor) *frontend.Tensor {
	return m.forward(src, true)
}

func (m *TransformerEncoderLayer) forward(x *frontend.Tensor, causal bool) *frontend.Tensor {
	drop := Dropout{P: m.Dropout}
	sa := func(x *frontend.Tensor) *frontend.Tensor { return drop.Forward(m.SelfAttn.Forward(x, x, x, causal)) }
	ff := func(x *frontend.Tensor) *frontend.Tensor {
		return drop.Forward(m.Linear2.Forward(drop.Forward(m.Activation.Forward(m.Linear1.Forward(x)))))
	}
	if m.NormFirst {
		x = x.Add(sa(m.Norm1.Forward(x)))
		return x.Add(ff(m.Norm2.Forward(x)))
	}
	x = m.Norm1.Forward(x.Add(sa(x)))
	return m.Norm2.Forward(x.Add(ff(x)))
}

// TransformerEncoderOptions are the optional arguments of NewTransformerEncoder: the options of
// every layer, and Norm for PyTorch's norm=nn.LayerNorm(d_model) after the stack.
type TransformerEncoderOptions struct {
	Layer TransformerEncoderLayerOptions
	Norm  bool
}

// TransformerEncoder is nn.TransformerEncoder(encoder_layer, num_layers, norm): NumLayers
// encoder layers applied in turn, with PyTorch's keys "layers.0.self_attn.in_proj_weight" and
// so on, and "norm.weight", "norm.bias" with Norm. (PyTorch deep-copies one layer, so its layers
// start equal; here each layer draws its own initial values. Loaded weights are what count.)
type TransformerEncoder struct {
	Layers []*TransformerEncoderLayer
	Norm   *LayerNorm // nil without Norm
}

// NewTransformerEncoder declares the parameters of the stack in b's scope under name.
func NewTransformerEncoder(b *frontend.Builder, name string, dModel, nhead, numLayers int, opts ...TransformerEncoderOptions) *TransformerEncoder {
	o := one(b, opts)
	if numLayers < 1 {
		b.Fail("transformer encoder %s: num_layers must be positive, have %d", b.Prefix()+name, numLayers)
	}
	s := b.Sub(name)
	ls := s.Sub("layers")
	m := &TransformerEncoder{}
	for i := range numLayers {
		m.Layers = append(m.Layers, NewTransformerEncoderLayer(ls, strconv.Itoa(i), dModel, nhead, o.Layer))
	}
	if o.Norm {
		m.Norm = NewLayerNorm(s, "norm", dModel, LayerNormOptions{Eps: o.Layer.LayerNormEps, NoBias: o.Layer.NoBias})
	}
	return m
}

// Forward applies the layers in order, then the norm if any.
func (m *TransformerEncoder) Forward(src *frontend.Tensor) *frontend.Tensor {
	return m.forward(src, false)
}

// ForwardCausal applies the layers with a causal self-attention mask.
func (m *TransformerEncoder) ForwardCausal(src *frontend.Tensor) *frontend.Tensor {
	return m.forward(src, true)
}

func (m *TransformerEncoder) forward(x *frontend.Tensor, causal bool) *frontend.Tensor {
	for _, l := range m.Layers {
		x = l.forward(x, causal)
	}
	if m.Norm != nil {
		x = m.Norm.Forward(x)
	}
	return x
}
