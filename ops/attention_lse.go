package ops

import (
	"math"
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// AttentionLSEOp is the log-sum-exp of attention's scores per query row: the normalizer the
// forward's online softmax ends with, which FlashAttention-2's backward keeps so that it can
// recompute each probability as exp(s − lse) in one pass over the keys. Passes write it (for
// attention_grad's lse operand); models do not.
const AttentionLSEOp = "attention_lse"

func init() {
	register(&Op{Name: AttentionLSEOp, Arity: Variadic, Class: Other, Infer: inferAttentionLSE, Eval: evalAttentionLSE,
		Attrs: []AttrSpec{{"scale", AttrFloat, false}, {"mask", AttrString, false}, {"additive", AttrBool, true}},
		Doc: "attention_lse(q, k, v[, pos][, bias]) {scale, mask, additive}: log Σⱼ exp(sⱼ) over the visible " +
			"keys of each query row, sⱼ the scores attention(q, k, v[, pos][, bias]) (same operands and " +
			"attributes) takes the softmax of, as f32[B,H,L] whatever q's dtype; v is not read. In float64 " +
			"(max + log Σ exp(s − max)), rounded once. A row whose keys are all hidden or all −inf is −inf."})
}

func inferAttentionLSE(args []ir.Type, a ir.Attrs) (ir.Type, error) {
	sp, err := attentionSpec(args, a)
	if err != nil {
		return ir.Type{}, err
	}
	return ir.T(ir.F32, sp.b, sp.h, sp.l), nil
}

func evalAttentionLSE(args []*tensor.Tensor, a ir.Attrs, out ir.Type) (*tensor.Tensor, error) {
	sp, err := attentionSpec(tensorTypes(args), a)
	if err != nil {
		return nil, err
	}
	scale, mask := a.Float("scale", 1), a.String("mask", "")
	res := tensor.New(out)
	parallel(sp.b*sp.h, func(bh int) {
		s := make([]float64, sp.s)
		for i := 0; i < sp.l; i++ {
			m := sp.scores(args, scale, mask, bh/sp.h, bh%sp.h, i, s)
			lse := math.Inf(-1)
			if !math.IsInf(m, -1) {
				sum := 0.0
				for _, p := range s {
					sum += p
				}
				lse = m + math.Log(sum)
			}
			res.F[bh*sp.l+i] = tensor.RoundFloat(ir.F32, lse)
		}
	})
	return res, nil
}

// LSEOf reports whether lse is the attention_lse of attention op att: the same operands and
// attributes, so that att's kernel can write it.
func LSEOf(lse, att *ir.Value) bool {
	if lse.Op != AttentionLSEOp || att.Op != AttentionOp || !slices.Equal(lse.Args, att.Args) {
		return false
	}
	l, a := lse.Attrs, att.Attrs
	return l.Float("scale", 1) == a.Float("scale", 1) && l.String("mask", "") == a.String("mask", "") &&
		l.Bool("additive", false) == a.Bool("additive", false)
}
