package autodiff

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

func init() {
	// attention(q, k, v[, pos][, bias]): one attention_grad per operand asked for, each
	// recomputing the softmax from q and k (FlashAttention-2), so the backward never reads the
	// [heads, L, S] probabilities. pos is integers and carries no gradient (the table's integer
	// paths never ask for one).
	rules[ops.AttentionOp] = rule{grad: func(e *Emitter, v, dy *ir.Value, need []bool) []*ir.Value {
		args := append(append([]*ir.Value{}, v.Args...), v, dy)
		wrt := make([]string, len(v.Args)) // in operand order: the emitted graph is deterministic
		wrt[0], wrt[1], wrt[2] = "q", "k", "v"
		if v.Attrs.Bool("additive", false) {
			wrt[len(v.Args)-1] = "bias"
		}
		grads := make([]*ir.Value, len(v.Args))
		for j, name := range wrt {
			if need[j] && name != "" {
				attrs := v.Attrs.Clone()
				attrs["wrt"] = name
				grads[j] = e.Op(ops.AttentionGradOp, attrs, args...)
			}
		}
		return grads
	}}
	rules[ops.AttentionGradOp] = none("the second derivative of attention is not written: differentiate "+
		"frontend.ScaledDotProductAttention's decomposition instead", 0, 1, 2, 3, 4, 5, 6, 7)
	// attention_lse is written by passes after differentiation (attention_grad's lse operand).
	rules[ops.AttentionLSEOp] = none("attention_lse is written by passes after differentiation and has no gradient", 0, 1, 2, 3, 4)
}
