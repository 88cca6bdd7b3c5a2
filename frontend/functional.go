package frontend

import (
	"math"

	"github.com/gcomp/gcomp/ir"
)

// This file holds the composites: layers and losses written with the primitives, under the names
// of torch.nn.functional. Package nn wraps them in modules that own their parameters.

// Linear returns x·wᵀ + b (F.linear) for x[..., in], w[out, in] and b[out]; b may be nil.
func Linear(x, w, b *Tensor) *Tensor {
	s := x.state()
	s.own(w, "linear")
	if w.Rank() != 2 || x.Rank() == 0 || x.Dim(-1) != w.v.Type.Shape[1] {
		s.failf("linear: input features differ: %s, %s", x.describe("x"), w.describe("weight"))
	}
	if x.DType() != w.DType() {
		s.failf("linear: dtypes differ: %s, %s (convert one with Cast)", x.describe("x"), w.describe("weight"))
	}
	if w.perm != nil {
		x, w = permuteInputs(x, w.perm), &Tensor{s: w.s, v: w.v}
	}
	y := dotGeneral(x, w, nil, nil, []int{x.Rank() - 1}, []int{1})
	if b == nil {
		return y
	}
	s.own(b, "linear")
	if !b.Type().Equal(ir.T(w.DType(), w.v.Type.Shape[0])) {
		s.failf("linear: bias does not match the weight: %s, %s", b.describe("bias"), w.describe("weight"))
	}
	return y.Add(b)
}

// Conv2dOptions are the optional arguments of Conv2d; zero values mean PyTorch's defaults
// (stride 1, padding 0, dilation 1, groups 1).
type Conv2dOptions struct {
	Stride, Padding, Dilation [2]int // [height, width]
	Groups                    int
}

// Conv2d is F.conv2d: x[N,C,H,W] convolved with w[O,C/groups,KH,KW], plus b[O] if not nil.
func Conv2d(x, w, b *Tensor, o Conv2dOptions) *Tensor {
	s := x.state()
	s.own(w, "conv2d")
	def := func(p [2]int, d int) []int {
		if p == [2]int{} {
			return []int{d, d}
		}
		return p[:]
	}
	groups := max(o.Groups, 1)
	if x.Rank() != 4 || w.Rank() != 4 {
		s.failf("conv2d: want a 4-D input [N,C,H,W] and weight [O,C/groups,KH,KW]: %s, %s", x.describe("x"), w.describe("weight"))
	}
	if x.Dim(1) != w.Dim(1)*groups {
		s.failf("conv2d: input channels differ: %s, %s, groups %d", x.describe("x"), w.describe("weight"), groups)
	}
	attrs := ir.Attrs{"stride": def(o.Stride, 1), "padding": def(o.Padding, 0), "dilation": def(o.Dilation, 1)}
	if groups != 1 {
		attrs["groups"] = groups
	}
	y := s.op("conv2d", attrs, x, w)
	if b == nil {
		return y
	}
	s.own(b, "conv2d")
	if !b.Type().Equal(ir.T(w.DType(), w.Dim(0))) {
		s.failf("conv2d: bias does not match the weight: %s, %s", b.describe("bias"), w.describe("weight"))
	}
	return y.Add(s.broadcastChannels(b, y))
}

// PoolOptions are the optional arguments of MaxPool2d and AvgPool2d. A zero Stride means the
// kernel size, as in PyTorch. CountExcludePad is PyTorch's count_include_pad=False.
type PoolOptions struct {
	Stride, Padding [2]int
	CountExcludePad bool
}

func pool(op string, x *Tensor, kernel [2]int, o PoolOptions) *Tensor {
	s := x.state()
	if x.Rank() != 4 {
		s.failf("%s: want a 4-D input [N,C,H,W], %s", op, x.describe("x"))
	}
	stride := o.Stride
	if stride == [2]int{} {
		stride = kernel
	}
	attrs := ir.Attrs{"kernel": kernel[:], "stride": stride[:], "padding": o.Padding[:]}
	if op == "avg_pool2d" && o.CountExcludePad {
		attrs["count_include_pad"] = false
	}
	return s.op(op, attrs, x)
}

// MaxPool2d is F.max_pool2d over x[N,C,H,W] with kernel [KH,KW]; padding counts as -inf.
func MaxPool2d(x *Tensor, kernel [2]int, o PoolOptions) *Tensor {
	return pool("max_pool2d", x, kernel, o)
}

// AvgPool2d is F.avg_pool2d over x[N,C,H,W] with kernel [KH,KW].
func AvgPool2d(x *Tensor, kernel [2]int, o PoolOptions) *Tensor {
	return pool("avg_pool2d", x, kernel, o)
}

// Embedding is F.embedding: the rows of weight[num, dim] picked by the integer tensor indices,
// giving indices.shape + [dim].
func Embedding(indices, weight *Tensor) *Tensor {
	s := indices.state()
	s.own(weight, "embedding")
	if !indices.DType().IsInt() {
		s.failf("embedding: indices must be integers, %s", indices.describe("indices"))
	}
	if weight.Rank() != 2 {
		s.failf("embedding: the weight must be 2-D [num_embeddings, embedding_dim], %s", weight.describe("weight"))
	}
	return s.op("gather", nil, weight, indices)
}

// LayerNorm is F.layer_norm over the last len(shape) dims, which must equal shape:
// (x - mean) / √(var + eps) · weight + bias, with the biased variance. weight and bias (of the
// given shape) may be nil.
func LayerNorm(x *Tensor, shape []int, weight, bias *Tensor, eps float64) *Tensor {
	s := x.state()
	r, k := x.Rank(), len(shape)
	if k == 0 || k > r || !ir.Shape(x.v.Type.Shape[r-k:]).Equal(shape) {
		s.failf("layer_norm: normalized shape %v does not match the last dims of %s", shape, x.describe("x"))
	}
	dims := make([]int, k)
	for i := range dims {
		dims[i] = r - k + i
	}
	xc := x.Sub(x.MeanKeepDim(dims...))
	y := xc.Mul(xc.Mul(xc).MeanKeepDim(dims...).AddScalar(eps).Rsqrt())
	for _, p := range []*Tensor{weight, bias} {
		if p != nil && !p.Type().Equal(ir.T(x.DType(), shape...)) {
			s.failf("layer_norm: %s, want %s", p.describe("affine parameter"), ir.T(x.DType(), shape...))
		}
	}
	if weight != nil {
		y = y.Mul(weight)
	}
	if bias != nil {
		y = y.Add(bias)
	}
	return y
}

// Gelu is the exact GELU, x·Φ(x) = x/2·(1 + erf(x/√2)) (nn.GELU()).
func (t *Tensor) Gelu() *Tensor {
	return t.Mul(t.MulScalar(1 / math.Sqrt2).Erf().AddScalar(1)).MulScalar(0.5)
}

// GeluTanh is GELU's tanh approximation, x/2·(1 + tanh(√(2/π)·(x + 0.044715x³)))
// (nn.GELU(approximate="tanh")).
func (t *Tensor) GeluTanh() *Tensor {
	inner := t.Add(t.Mul(t).Mul(t).MulScalar(0.044715)).MulScalar(math.Sqrt(2 / math.Pi))
	return t.Mul(inner.Tanh().AddScalar(1)).MulScalar(0.5)
}

// Silu is x·sigmoid(x) (nn.SiLU).
func (t *Tensor) Silu() *Tensor { return t.Mul(t.Sigmoid()) }

// ScaledDotProductAttention is F.scaled_dot_product_attention for q[..., L, E], k[..., S, E] and
// v[..., S, Ev]: softmax(q·kᵀ/√E)·v, of shape [..., L, Ev], with the batch dims broadcast. With
// causal, query i attends only to keys j ≤ i (a mask built from iota and a comparison; masked
// scores are -inf before the softmax).
func ScaledDotProductAttention(q, k, v *Tensor, causal bool) *Tensor {
	s := q.state()
	s.own(k, "scaled_dot_product_attention")
	s.own(v, "scaled_dot_product_attention")
	r := q.Rank()
	if r < 2 || k.Rank() != r || v.Rank() != r || q.Dim(-1) != k.Dim(-1) || k.Dim(-2) != v.Dim(-2) {
		s.failf("scaled_dot_product_attention: want q[..., L, E], k[..., S, E], v[..., S, Ev]: %s, %s, %s",
			q.describe("q"), k.describe("k"), v.describe("v"))
	}
	// q·kᵀ as one dot_general contracting the last dims, the batch dims broadcast to one shape.
	batch, ok := broadcastShapes(q.v.Type.Shape[:r-2], k.v.Type.Shape[:r-2])
	if !ok {
		s.failf("scaled_dot_product_attention: batch dims cannot be broadcast together: %s, %s", q.describe("q"), k.describe("k"))
	}
	nb := len(batch)
	bd := make([]int, nb)
	for i := range bd {
		bd[i] = i
	}
	qb := q.broadcastTo(append(batch.Clone(), q.v.Type.Shape[r-2:]...))
	kb := k.broadcastTo(append(batch.Clone(), k.v.Type.Shape[r-2:]...))
	scores := dotGeneral(qb, kb, bd, bd, []int{nb + 1}, []int{nb + 1}).MulScalar(1 / math.Sqrt(float64(q.Dim(-1))))
	if causal {
		l, sk := q.Dim(-2), k.Dim(-2)
		b := &Builder{st: s}
		row := b.Iota(ir.I32, 0, l, sk)
		col := b.Iota(ir.I32, 1, l, sk)
		scores = scores.MaskedFill(col.Gt(row), math.Inf(-1))
	}
	return scores.Softmax(-1).Matmul(v)
}

// RNNCell is one step of an Elman RNN (nn.RNNCell): h' = act(x·w_ihᵀ + b_ih + h·w_hhᵀ + b_hh),
// act being tanh, or relu when relu is set. The biases may be nil.
func RNNCell(x, h, wih, whh, bih, bhh *Tensor, relu bool) *Tensor {
	g := Linear(x, wih, bih).Add(Linear(h, whh, bhh))
	if relu {
		return g.Relu()
	}
	return g.Tanh()
}

// LSTMCell is one step of an LSTM (nn.LSTMCell). The weights stack the gates in PyTorch's order
// i, f, g, o: w_ih[4H, I], w_hh[4H, H]. It returns h' = o·tanh(c') and
// c' = f·c + i·g, where i, f, o are sigmoids and g a tanh of the gates' pre-activations.
func LSTMCell(x, h, c, wih, whh, bih, bhh *Tensor) (h2, c2 *Tensor) {
	return lstmStep(Linear(x, wih, bih), h, c, whh, bhh)
}

// lstmStep finishes an LSTM step from the input projection gi = x·w_ihᵀ + b_ih.
func lstmStep(gi, h, c, whh, bhh *Tensor) (h2, c2 *Tensor) {
	gates := gi.Add(Linear(h, whh, bhh))
	hs := h.Dim(-1)
	if gates.Dim(-1) != 4*hs {
		gates.s.failf("lstm cell: the weights hold %d gate rows, want 4·%d: %s", gates.Dim(-1), hs, whh.describe("weight_hh"))
	}
	p := gates.Chunk(4, -1)
	i, f, gg, o := p[0].Sigmoid(), p[1].Sigmoid(), p[2].Tanh(), p[3].Sigmoid()
	c2 = f.Mul(c).Add(i.Mul(gg))
	return o.Mul(c2.Tanh()), c2
}

// GRUCell is one step of a GRU (nn.GRUCell), with the gates stacked in PyTorch's order r, z, n:
// r = σ(W_ir x + b_ir + W_hr h + b_hr), z likewise, n = tanh(W_in x + b_in + r·(W_hn h + b_hn)),
// h' = (1-z)·n + z·h.
func GRUCell(x, h, wih, whh, bih, bhh *Tensor) *Tensor {
	return gruStep(Linear(x, wih, bih), h, whh, bhh)
}

func gruStep(gi, h, whh, bhh *Tensor) *Tensor {
	gh := Linear(h, whh, bhh)
	hs := h.Dim(-1)
	if gi.Dim(-1) != 3*hs || gh.Dim(-1) != 3*hs {
		gi.s.failf("gru cell: the weights hold %d gate rows, want 3·%d: %s", gh.Dim(-1), hs, whh.describe("weight_hh"))
	}
	a, b := gi.Chunk(3, -1), gh.Chunk(3, -1)
	r := a[0].Add(b[0]).Sigmoid()
	z := a[1].Add(b[1]).Sigmoid()
	n := a[2].Add(r.Mul(b[2])).Tanh()
	return n.Sub(z.Mul(n)).Add(z.Mul(h))
}
