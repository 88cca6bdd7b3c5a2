package nn

import (
	"math"
	"strconv"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// The modules of decoder-only language models as Hugging Face's transformers defines them
// (modeling_llama.py, modeling_gpt2.py): RMSNorm, rotary position embeddings in the rotate-half
// convention, grouped-query attention over a static KV cache, and the SwiGLU MLP.

// RMSNorm is LlamaRMSNorm (torch.nn.RMSNorm): x·rsqrt(mean(x², -1) + Eps)·Weight.
type RMSNorm struct {
	Weight *frontend.Tensor // "weight" [dim], ones
	Eps    float64
}

// NewRMSNorm declares "name.weight" [dim].
func NewRMSNorm(b *frontend.Builder, name string, dim int, eps float64) *RMSNorm {
	return &RMSNorm{Weight: b.Sub(name).Param("weight", ir.T(ir.F32, dim), frontend.Ones()), Eps: eps}
}

// Forward normalizes over the last dim.
func (m *RMSNorm) Forward(x *frontend.Tensor) *frontend.Tensor {
	ms := x.Mul(x).MeanKeepDim(-1)
	return x.Mul(ms.AddScalar(m.Eps).Rsqrt()).Mul(m.Weight)
}

// RotaryEmbedding is Llama's rotary position embedding of head size Dim with base Theta:
// position p turns the pair (x[i], x[i+Dim/2]) by the angle p·Theta^(-2i/Dim) (transformers'
// rotate_half convention, not the interleaved pairs of the original paper).
type RotaryEmbedding struct {
	Dim   int
	Theta float64
}

// invFreq is transformers' inv_freq, computed in float32 as it is there.
func (r RotaryEmbedding) invFreq() []float64 {
	f := make([]float64, r.Dim/2)
	for i := range f {
		f[i] = float64(float32(1 / math.Pow(r.Theta, float64(float32(2*i))/float64(r.Dim))))
	}
	return f
}

// CosSin gives cos and sin of the angles at positions [..., T] (an integer tensor): each
// [..., T, Dim], the Dim/2 angles repeated twice as transformers' cat((freqs, freqs)).
func (r RotaryEmbedding) CosSin(positions *frontend.Tensor) (cos, sin *frontend.Tensor) {
	b := positions.Builder()
	inv := b.Tensor(append(r.invFreq(), r.invFreq()...), ir.F32, r.Dim)
	angles := positions.Cast(ir.F32).Unsqueeze(-1).Mul(inv)
	return angles.Cos(), angles.Sin()
}

// Apply rotates x [..., T, Dim] by cos and sin [..., T, Dim] (broadcast over x's head axis):
// x·cos + rotate_half(x)·sin, rotate_half(x) = cat(-x[..., Dim/2:], x[..., :Dim/2]).
func (r RotaryEmbedding) Apply(x, cos, sin *frontend.Tensor) *frontend.Tensor {
	h := x.Split(-1, r.Dim/2, r.Dim/2)
	rot := frontend.Cat(-1, h[1].Neg(), h[0])
	return x.Mul(cos).Add(rot.Mul(sin))
}

// CachedAttention is causal attention of this step's queries q [B, H, T, D] over a static KV
// cache kCache, vCache [B, KVH, S, D] into which this step's k, v [B, KVH, T, D] are first written
// at positions pos[b]..pos[b]+T-1 (pos [B], integers; the caller keeps pos[b]+T ≤ S: update_slice
// clamps a position past S−T). Query t of sequence b attends to cache positions ≤ pos[b]+t: the
// mask is by position, not by shape, so the same graph serves every step. Query head h reads KV
// head h/(H/KVH) (grouped-query attention; H = KVH is multi-head, KVH = 1 multi-query), without
// copying K and V. It returns the output [B, H, T, D] and the updated caches, which hold at every
// other position what they held.
func CachedAttention(q, k, v, kCache, vCache, pos *frontend.Tensor) (out, kNew, vNew *frontend.Tensor) {
	b := q.Builder()
	B, H, T, D := q.Dim(0), q.Dim(1), q.Dim(2), q.Dim(3)
	KVH, S := kCache.Dim(1), kCache.Dim(2)
	if H%KVH != 0 || k.Dim(1) != KVH || k.Dim(2) != T || k.Dim(3) != D || kCache.Dim(3) != D || pos.Rank() != 1 || pos.Dim(0) != B {
		b.Fail("cached attention: want q [B,H,T,D], k and v [B,KVH,T,D], caches [B,KVH,S,D] with KVH dividing H, pos [B]: q %v, k %v, cache %v, pos %v", q, k, kCache, pos)
	}
	G := H / KVH
	start := pos.Cast(ir.I64).Reshape(B, 1, 1, 1)
	// The step's rows go into the caches in place: compiled, only they are written, where a
	// select over the position would rewrite every cache.
	kNew, vNew = kCache.UpdateSlice(2, k, pos), vCache.UpdateSlice(2, v, pos)

	// Queries grouped by their KV head: [B, KVH, G·T, D], row g·T+t.
	qg := q.Reshape(B, KVH, G*T, D)
	scores := qg.Matmul(kNew.Transpose(2, 3)).MulScalar(1 / math.Sqrt(float64(D)))
	t := b.Iota(ir.I64, 1, G, T, S).Reshape(1, 1, G*T, S)
	s := b.Iota(ir.I64, 1, G*T, S).Reshape(1, 1, G*T, S)
	future := s.Gt(t.Add(start)) // key position past the query's position pos[b]+t
	probs := scores.MaskedFill(future, math.Inf(-1)).Softmax(-1)
	return probs.Matmul(vNew).Reshape(B, H, T, D), kNew, vNew
}

// GatedMLP is LlamaMLP: down_proj(silu(gate_proj(x)) · up_proj(x)), without biases.
type GatedMLP struct {
	GateProj, UpProj, DownProj *Linear
}

// NewGatedMLP declares "name.gate_proj", "name.up_proj" [inter, dim] and "name.down_proj" [dim, inter].
func NewGatedMLP(b *frontend.Builder, name string, dim, inter int) *GatedMLP {
	s := b.Sub(name)
	nb := LinearOptions{NoBias: true}
	return &GatedMLP{
		GateProj: NewLinear(s, "gate_proj", dim, inter, nb),
		UpProj:   NewLinear(s, "up_proj", dim, inter, nb),
		DownProj: NewLinear(s, "down_proj", inter, dim, nb),
	}
}

// Forward applies the MLP.
func (m *GatedMLP) Forward(x *frontend.Tensor) *frontend.Tensor {
	return m.DownProj.Forward(m.GateProj.Forward(x).Silu().Mul(m.UpProj.Forward(x)))
}

// KVCache is a decoder's static key/value cache: one state per layer and per keys or values,
// each [B, KVH, S, D], read from the inputs KVCacheName(name, l, 0 or 1) and written, after
// update_slice put the step's rows in, to the outputs of the name Output gives; the runtime feeds
// each output back into its input for the next run. Compiled, each output is its input's buffer
// (the update is in place, the plan records the alias), so a step writes its rows and nothing
// else of the cache.
type KVCache struct {
	in      [][2]*frontend.Tensor
	updated [][2]*frontend.Tensor
}

// KVCacheName names layer l's keys (kv 0) or values (kv 1) under name: "kv_cache.3.k".
func KVCacheName(name string, l, kv int) string {
	return name + "." + strconv.Itoa(l) + "." + [2]string{"k", "v"}[kv]
}

// NewKVCache declares the inputs KVCacheName(name, l, kv), each [batch, kvHeads, maxSeq, headDim],
// for layers layers.
func NewKVCache(b *frontend.Builder, name string, layers, batch, kvHeads, maxSeq, headDim int) *KVCache {
	c := &KVCache{in: make([][2]*frontend.Tensor, layers), updated: make([][2]*frontend.Tensor, layers)}
	for l := range c.in {
		for kv := range 2 {
			c.in[l][kv] = b.Input(KVCacheName(name, l, kv), ir.F32, batch, kvHeads, maxSeq, headDim)
		}
	}
	return c
}

// Layer returns layer l's key and value caches [B, KVH, S, D].
func (c *KVCache) Layer(l int) (k, v *frontend.Tensor) { return c.in[l][0], c.in[l][1] }

// Attend is CachedAttention on layer l's caches; it keeps the layer's updated caches for Output.
func (c *KVCache) Attend(l int, q, k, v, pos *frontend.Tensor) *frontend.Tensor {
	kc, vc := c.Layer(l)
	out, kNew, vNew := CachedAttention(q, k, v, kc, vc, pos)
	c.updated[l] = [2]*frontend.Tensor{kNew, vNew}
	return out
}

// Output declares the updated caches as the outputs KVCacheName(name, l, kv); every layer must
// have attended.
func (c *KVCache) Output(b *frontend.Builder, name string) {
	for l, kv := range c.updated {
		if kv[0] == nil {
			b.Fail("kv cache: layer %d never attended", l)
		}
		for i := range 2 {
			b.Output(KVCacheName(name, l, i), kv[i])
		}
	}
}
