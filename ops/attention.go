package ops

import (
	"math"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// AttentionOp is the name of fused scaled dot-product attention. It is not written by the DSL:
// passes find the decomposition frontend.ScaledDotProductAttention writes (dot_general, scale,
// mask, softmax, dot_general) and replace it, so that a kernel can stream K and V instead of
// materializing the [heads, L, S] scores.
const AttentionOp = "attention"

// The mask attribute's values.
const (
	MaskNone     = "none"     // every key is visible
	MaskCausal   = "causal"   // query i sees key j iff j ≤ i
	MaskPosition = "position" // query i of sequence b sees key j iff j ≤ pos[b] + i
)

func init() {
	register(&Op{Name: AttentionOp, Arity: Variadic, Class: Other, Infer: inferAttention, Eval: evalAttention,
		Attrs: []AttrSpec{{"scale", AttrFloat, false}, {"mask", AttrString, false}, {"additive", AttrBool, true}},
		Doc: "attention(q, k, v[, pos][, bias]) {scale, mask, additive}: softmax(scale·q·kᵀ + bias, masked)·v for " +
			"q[B,H,L,E], k[B,KVH,S,E], v[B,KVH,S,Ev] → [B,H,L,Ev]. KVH divides H and query head h reads KV head " +
			"h/(H/KVH) (grouped-query attention; KVH = H is multi-head, KVH = 1 multi-query). mask is \"none\", " +
			"\"causal\" (query i sees key j iff j ≤ i) or \"position\" (the operand pos[B], integers: query i of " +
			"sequence b sees j iff j ≤ pos[b]+i). additive (default false) adds the operand bias, q's dtype, of " +
			"shape [B or 1, H or 1, L, S], to the scores of the visible keys. q, k, v share one float dtype. Each " +
			"score, the softmax (exp(s−max)/Σ) and the weighted sum of v run in float64, keys in ascending order, " +
			"and the result is rounded once. A row whose keys are all hidden or all −inf is NaN, as the " +
			"decomposition's softmax gives."})
}

// attnSpec is an attention op's sizes, checked.
type attnSpec struct {
	b, h, kvh, l, s, e, ev int
	pos, bias              int // operand index, or -1
}

func attentionSpec(args []ir.Type, a ir.Attrs) (attnSpec, error) {
	sp := attnSpec{pos: -1, bias: -1}
	n := 3
	switch a.String("mask", "") {
	case MaskNone, MaskCausal:
	case MaskPosition:
		sp.pos, n = n, n+1
	default:
		return sp, errf("mask is %q, want none, causal or position", a.String("mask", ""))
	}
	if a.Bool("additive", false) {
		sp.bias, n = n, n+1
	}
	if len(args) != n {
		return sp, errf("takes %d operands with these attributes, have %d", n, len(args))
	}
	q, k, v := args[0], args[1], args[2]
	if len(q.Shape) != 4 || len(k.Shape) != 4 || len(v.Shape) != 4 {
		return sp, errf("want q[B,H,L,E], k[B,KVH,S,E], v[B,KVH,S,Ev], have %s, %s, %s", q, k, v)
	}
	if err := floats.want(q); err != nil {
		return sp, err
	}
	if k.DType != q.DType || v.DType != q.DType {
		return sp, errf("q, k and v have different dtypes: %s, %s, %s", q, k, v)
	}
	sp.b, sp.h, sp.l, sp.e = q.Shape[0], q.Shape[1], q.Shape[2], q.Shape[3]
	sp.kvh, sp.s, sp.ev = k.Shape[1], k.Shape[2], v.Shape[3]
	if k.Shape[0] != sp.b || v.Shape[0] != sp.b || k.Shape[3] != sp.e || v.Shape[1] != sp.kvh || v.Shape[2] != sp.s {
		return sp, errf("want q[B,H,L,E], k[B,KVH,S,E], v[B,KVH,S,Ev], have %s, %s, %s", q, k, v)
	}
	if sp.kvh == 0 || sp.h%sp.kvh != 0 {
		return sp, errf("%d KV heads do not divide %d query heads", sp.kvh, sp.h)
	}
	if sp.pos >= 0 {
		if p := args[sp.pos]; !ints.has(p.DType) || !p.Shape.Equal(ir.Shape{sp.b}) {
			return sp, errf("pos must be integers [%d], have %s", sp.b, p)
		}
	}
	if sp.bias >= 0 {
		m := args[sp.bias]
		if m.DType != q.DType || len(m.Shape) != 4 || m.Shape[0] != 1 && m.Shape[0] != sp.b ||
			m.Shape[1] != 1 && m.Shape[1] != sp.h || m.Shape[2] != sp.l || m.Shape[3] != sp.s {
			return sp, errf("bias must be %s[B or 1,H or 1,%d,%d], have %s", q.DType, sp.l, sp.s, m)
		}
	}
	return sp, nil
}

func inferAttention(args []ir.Type, a ir.Attrs) (ir.Type, error) {
	sp, err := attentionSpec(args, a)
	if err != nil {
		return ir.Type{}, err
	}
	return ir.T(args[0].DType, sp.b, sp.h, sp.l, sp.ev), nil
}

// tensorTypes are the types of args.
func tensorTypes(args []*tensor.Tensor) []ir.Type {
	types := make([]ir.Type, len(args))
	for i, t := range args {
		types[i] = t.Type
	}
	return types
}

func evalAttention(args []*tensor.Tensor, a ir.Attrs, out ir.Type) (*tensor.Tensor, error) {
	sp, err := attentionSpec(tensorTypes(args), a)
	if err != nil {
		return nil, err
	}
	v := args[2].F
	scale, mask := a.Float("scale", 1), a.String("mask", "")
	res := tensor.New(out)
	group := sp.h / sp.kvh
	parallel(sp.b*sp.h, func(bh int) {
		b, h := bh/sp.h, bh%sp.h
		kh := b*sp.kvh + h/group
		s := make([]float64, sp.s)
		for i := 0; i < sp.l; i++ {
			sp.scores(args, scale, mask, b, h, i, s)
			sum := 0.0
			for _, p := range s {
				sum += p
			}
			o := res.F[(bh*sp.l+i)*sp.ev:][:sp.ev]
			for j, p := range s {
				vj := v[(kh*sp.s+j)*sp.ev:][:sp.ev]
				for e := range o {
					o[e] += p * vj[e]
				}
			}
			for e := range o {
				o[e] = tensor.RoundFloat(out.DType, o[e]/sum)
			}
		}
	})
	return res, nil
}

// scores writes into s the unnormalized probabilities exp(sⱼ − max) of query i of head h of
// sequence b: the scaled scores plus the bias, −inf for the hidden keys, and returns max. The
// forward, the backward (attention_grad) and attention_lse share it so that all see the same
// softmax.
func (sp attnSpec) scores(args []*tensor.Tensor, scale float64, mask string, b, h, i int, s []float64) float64 {
	q, k := args[0].F, args[1].F
	kh := b*sp.kvh + h/(sp.h/sp.kvh)
	qi := q[((b*sp.h+h)*sp.l+i)*sp.e:][:sp.e]
	visible := sp.s
	switch mask {
	case MaskCausal:
		visible = i + 1
	case MaskPosition:
		visible = int(args[sp.pos].I[b]) + i + 1
	}
	visible = max(0, min(visible, sp.s))
	m := math.Inf(-1)
	for j := range s {
		s[j] = math.Inf(-1)
		if j >= visible {
			continue
		}
		kj := k[(kh*sp.s+j)*sp.e:][:sp.e]
		dot := 0.0
		for e, x := range qi {
			dot += x * kj[e]
		}
		s[j] = scale * dot
		if sp.bias >= 0 {
			bt := args[sp.bias]
			bb, hh := b%bt.Type.Shape[0], h%bt.Type.Shape[1]
			s[j] += bt.F[((bb*bt.Type.Shape[1]+hh)*sp.l+i)*sp.s+j]
		}
		m = fmax(m, s[j])
	}
	for j := range s {
		s[j] = math.Exp(s[j] - m)
	}
	return m
}
