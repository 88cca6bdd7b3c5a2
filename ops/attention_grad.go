package ops

import (
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// AttentionGradOp is the gradient of the attention op with respect to one of its float
// operands. Ops return one value, so the gradients of q, k, v and the bias are four
// instances of one op told apart by the attribute wrt; each recomputes the softmax from q and k
// (FlashAttention-2's backward) instead of reading the [heads, L, S] probabilities, and a
// kernel may compute several of them in one pass.
const AttentionGradOp = "attention_grad"

func init() {
	register(&Op{Name: AttentionGradOp, Arity: Variadic, Class: Other, Infer: inferAttentionGrad, Eval: evalAttentionGrad,
		Attrs: []AttrSpec{{"scale", AttrFloat, false}, {"mask", AttrString, false}, {"additive", AttrBool, true}, {"wrt", AttrString, false}, {"lse", AttrBool, true}},
		Doc: "attention_grad(q, k, v[, pos][, bias], o, do) {scale, mask, additive, wrt}: the gradient of " +
			"o = attention(q, k, v[, pos][, bias]) (same attributes) with respect to wrt, \"q\", \"k\", \"v\" or " +
			"\"bias\", given o and its gradient do (both [B,H,L,Ev], q's dtype); the result has wrt's type. The " +
			"softmax P is recomputed from q and k as attention computes it; with D = rowsum(do∘o), dP = do·vᵀ " +
			"and dS = P∘(dP − D): dq = scale·dS·k, dk = scale·dSᵀ·q and dv = Pᵀ·do summed over the query heads " +
			"that read each KV head, dbias = dS summed over the dims bias broadcasts. All in float64, rounded once. " +
			"With lse (default false) one more operand follows do: attention_lse of the same operands, f32[B,H,L], " +
			"which kernels read instead of recomputing each row's normalizer; the reference recomputes it. " +
			"(Ops return one value: one op with a selector, rather than three ops, keeps one reference and lets a " +
			"kernel compute dk and dv in one pass.)"})
}

// AttentionGradOperands returns the indices of o and do among the operands of attention_grad op
// v: the last two, or the two before lse.
func AttentionGradOperands(v *ir.Value) (o, do int) {
	n := len(v.Args)
	if v.Attrs.Bool("lse", false) {
		n--
	}
	return n - 2, n - 1
}

func attentionGradSpec(args []ir.Type, a ir.Attrs) (attnSpec, int, error) {
	n := 5
	if a.Bool("lse", false) {
		n++
	}
	if a.String("mask", "") == MaskPosition {
		n++
	}
	if a.Bool("additive", false) {
		n++
	}
	if len(args) != n {
		return attnSpec{}, 0, errf("takes %d operands with these attributes (attention's, o and do[, lse]), have %d", n, len(args))
	}
	if a.Bool("lse", false) {
		n--
	}
	sp, err := attentionSpec(args[:n-2], a)
	if err != nil {
		return sp, 0, err
	}
	want := ir.T(args[0].DType, sp.b, sp.h, sp.l, sp.ev)
	for _, t := range args[n-2 : n] {
		if !t.Equal(want) {
			return sp, 0, errf("o and do must be %s, have %s and %s", want, args[n-2], args[n-1])
		}
	}
	if n < len(args) {
		if want := ir.T(ir.F32, sp.b, sp.h, sp.l); !args[n].Equal(want) {
			return sp, 0, errf("lse must be %s, have %s", want, args[n])
		}
	}
	switch w := a.String("wrt", ""); {
	case w == "q":
		return sp, 0, nil
	case w == "k":
		return sp, 1, nil
	case w == "v":
		return sp, 2, nil
	case w == "bias" && sp.bias >= 0:
		return sp, sp.bias, nil
	default:
		return sp, 0, errf("wrt is %q, want q, k, v or (with additive) bias", w)
	}
}

func inferAttentionGrad(args []ir.Type, a ir.Attrs) (ir.Type, error) {
	_, wrt, err := attentionGradSpec(args, a)
	if err != nil {
		return ir.Type{}, err
	}
	return args[wrt], nil
}

func evalAttentionGrad(args []*tensor.Tensor, a ir.Attrs, out ir.Type) (*tensor.Tensor, error) {
	sp, wrt, err := attentionGradSpec(tensorTypes(args), a)
	if err != nil {
		return nil, err
	}
	n := len(args)
	if a.Bool("lse", false) {
		n-- // the reference recomputes the normalizer
	}
	q, k, v, o, do := args[0].F, args[1].F, args[2].F, args[n-2].F, args[n-1].F
	scale, mask := a.Float("scale", 1), a.String("mask", "")
	group := sp.h / sp.kvh
	// One task per KV head owns its dk, dv rows and the dq rows of its query heads; dS is kept
	// per query head only when the bias's gradient is asked for, and summed in order afterwards,
	// so the result does not depend on the schedule.
	acc := make([]float64, out.Shape.NumElements())
	var ds []float64
	if wrt == sp.bias {
		ds = make([]float64, sp.b*sp.h*sp.l*sp.s)
	}
	parallel(sp.b*sp.kvh, func(bk int) {
		b := bk / sp.kvh
		p, dp := make([]float64, sp.s), make([]float64, sp.s)
		for h := (bk % sp.kvh) * group; h < (bk%sp.kvh+1)*group; h++ {
			bh := b*sp.h + h
			for i := 0; i < sp.l; i++ {
				sp.scores(args, scale, mask, b, h, i, p)
				sum := 0.0
				for _, x := range p {
					sum += x
				}
				row := (bh*sp.l + i) * sp.ev
				oi, doi := o[row:][:sp.ev], do[row:][:sp.ev]
				d := 0.0
				for e, x := range doi {
					d += x * oi[e]
				}
				qi := q[(bh*sp.l+i)*sp.e:][:sp.e]
				for j := range p {
					p[j] /= sum
					vj := v[(bk*sp.s+j)*sp.ev:][:sp.ev]
					dot := 0.0
					for e, x := range doi {
						dot += x * vj[e]
					}
					dp[j] = p[j] * (dot - d) // dS
					switch wrt {
					case 0:
						kj := k[(bk*sp.s+j)*sp.e:][:sp.e]
						dq := acc[(bh*sp.l+i)*sp.e:][:sp.e]
						for e, x := range kj {
							dq[e] += scale * dp[j] * x
						}
					case 1:
						dk := acc[(bk*sp.s+j)*sp.e:][:sp.e]
						for e, x := range qi {
							dk[e] += scale * dp[j] * x
						}
					case 2:
						dv := acc[(bk*sp.s+j)*sp.ev:][:sp.ev]
						for e, x := range doi {
							dv[e] += p[j] * x
						}
					}
				}
				if ds != nil {
					copy(ds[(bh*sp.l+i)*sp.s:], dp)
				}
			}
		}
	})
	if ds != nil {
		// Sum dS over the batch and head dims the bias broadcasts, in index order.
		bs := out.Shape
		for bh := 0; bh < sp.b*sp.h; bh++ {
			bb, hh := bh/sp.h%bs[0], bh%sp.h%bs[1]
			dst := acc[(bb*bs[1]+hh)*sp.l*sp.s:][:sp.l*sp.s]
			for x, g := range ds[bh*sp.l*sp.s:][:sp.l*sp.s] {
				dst[x] += g
			}
		}
	}
	res := tensor.New(out)
	for x, g := range acc {
		res.F[x] = tensor.RoundFloat(out.DType, g)
	}
	return res, nil
}

// GradPair reports whether attention_grad ops a and b are dk and dv (in either order) of one
// attention: the same operands and attributes but wrt, so that one kernel can compute both.
func GradPair(a, b *ir.Value) bool {
	if a.Op != AttentionGradOp || b.Op != AttentionGradOp || !slices.Equal(a.Args, b.Args) {
		return false
	}
	x, y := a.Attrs, b.Attrs
	wrts := x.String("wrt", "") + y.String("wrt", "")
	return (wrts == "kv" || wrts == "vk") && x.Float("scale", 1) == y.Float("scale", 1) && x.String("mask", "") == y.String("mask", "") &&
		x.Bool("additive", false) == y.Bool("additive", false) && x.Bool("lse", false) == y.Bool("lse", false)
}
