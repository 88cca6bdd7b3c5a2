package ops

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// Attention's ops over symbolic sizes: a batch and sequence lengths as expressions (a train
// step's forward over a symbolic batch forms attention before differentiation). Infer has
// checked the operands at their bounds; here the sizes the op equates must be the same
// expressions: q, k and v's batch, k and v's S, and a bias's [B or 1, H or 1, L, S].

// symAttentionSpec checks attention's operands' sizes and returns q's [B, H, L] and v's Ev.
func symAttentionSpec(args []ir.Type, a ir.Attrs) ([]sym.Expr, error) {
	q, k, v := args[0], args[1], args[2]
	for _, c := range []struct {
		x, y sym.Expr
		what string
	}{
		{q.Axis(0), k.Axis(0), "q's and k's batch"},
		{q.Axis(0), v.Axis(0), "q's and v's batch"},
		{k.Axis(2), v.Axis(2), "k's and v's key count"},
	} {
		if err := sameSize(c.x, c.y, "%s", c.what); err != nil {
			return nil, err
		}
	}
	next := 3 // q, k, v[, pos][, bias]
	if a.String("mask", "") == MaskPosition {
		if err := sameSize(q.Axis(0), args[next].Axis(0), "q's batch and pos's"); err != nil {
			return nil, err
		}
		next++
	}
	if a.Bool("additive", false) {
		bias := args[next]
		for d, want := range []sym.Expr{q.Axis(0), q.Axis(1), q.Axis(2), k.Axis(2)} {
			if d < 2 && bias.Shape[d] == 1 {
				continue // broadcast
			}
			if err := sameSize(bias.Axis(d), want, "the bias's dim %d", d); err != nil {
				return nil, err
			}
		}
	}
	return []sym.Expr{q.Axis(0), q.Axis(1), q.Axis(2), v.Axis(3)}, nil
}

func symAttention(args []ir.Type, a ir.Attrs, _ []sym.Expr, _ sym.Ranges) ([]sym.Expr, error) {
	return symAttentionSpec(args, a)
}

// symAttentionLSE is attention_lse's [B, H, L].
func symAttentionLSE(args []ir.Type, a ir.Attrs, _ []sym.Expr, _ sym.Ranges) ([]sym.Expr, error) {
	s, err := symAttentionSpec(args, a)
	if err != nil {
		return nil, err
	}
	return s[:3], nil
}

// symAttentionGrad is the sizes of the operand attention_grad differentiates; o and do are
// attention's result.
func symAttentionGrad(args []ir.Type, a ir.Attrs, _ []sym.Expr, _ sym.Ranges) ([]sym.Expr, error) {
	bounds := make([]ir.Type, len(args))
	for i, t := range args {
		bounds[i] = bound(t)
	}
	_, wrt, err := attentionGradSpec(bounds, a)
	if err != nil {
		return nil, err
	}
	s, err := symAttentionSpec(args, a)
	if err != nil {
		return nil, err
	}
	n := len(args) // attention's operands, o, do[, lse]
	if a.Bool("lse", false) {
		n--
	}
	for _, i := range []int{n - 2, n - 1} {
		for d, e := range s {
			if err := sameSize(args[i].Axis(d), e, "attention_grad's operand %d, dim %d", i, d); err != nil {
				return nil, err
			}
		}
	}
	return args[wrt].Axes(), nil
}
