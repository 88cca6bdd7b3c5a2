package ops

import (
	"math"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// TestAttentionLSE: one head, L = 2 queries, S = 2 keys of dim 1, q = [1, 2], k = [0, 3], scale
// 0.5: the scores are [0, 1.5] and [0, 3]; causally query 0 sees key 0 alone; a position mask
// with pos = -1 hides every key of query 0 (−inf); the bias adds to the visible scores.
func TestAttentionLSE(t *testing.T) {
	q, k, v := tt(ir.F32, []int{1, 1, 2, 1}, 1, 2), tt(ir.F32, []int{1, 1, 2, 1}, 0, 3), tt(ir.F32, []int{1, 1, 2, 1}, 7, 7)
	lse := func(s ...float64) float64 {
		sum := 0.0
		for _, x := range s {
			sum += math.Exp(x)
		}
		return math.Log(sum)
	}
	at := func(mask string) ir.Attrs { return ir.Attrs{"scale": 0.5, "mask": mask} }
	additive := ir.Attrs{"scale": 0.5, "mask": MaskCausal, "additive": true}
	bias := tt(ir.F32, []int{1, 1, 2, 2}, 1, -1, 0, 2)
	pos := tt(ir.I64, nil, -1)
	out := func(a, b float64) *tensor.Tensor { return tt(ir.F32, []int{1, 1, 2}, a, b) }
	runEvalCases(t, []evalCase{
		{AttentionLSEOp, at(MaskNone), []*tensor.Tensor{q, k, v}, out(lse(0, 1.5), lse(0, 3))},
		{AttentionLSEOp, at(MaskCausal), []*tensor.Tensor{q, k, v}, out(0, lse(0, 3))},
		{AttentionLSEOp, at(MaskPosition), []*tensor.Tensor{q, k, v, pos}, out(math.Inf(-1), 0)},
		{AttentionLSEOp, additive, []*tensor.Tensor{q, k, v, bias}, out(1, lse(0, 5))},
	})
}

// TestAttentionGradLSEOperand: attention_grad with the lse operand gives what it gives without.
func TestAttentionGradLSEOperand(t *testing.T) {
	q, k, v := tt(ir.F32, []int{1, 1, 2, 1}, 1, 2), tt(ir.F32, []int{1, 1, 2, 1}, 0, 3), tt(ir.F32, []int{1, 1, 2, 1}, 5, -1)
	o, do := tt(ir.F32, []int{1, 1, 2, 1}, 0.5, 1), tt(ir.F32, []int{1, 1, 2, 1}, 2, -3)
	for _, wrt := range []string{"q", "k", "v"} {
		a := ir.Attrs{"scale": 0.5, "mask": MaskNone, "wrt": wrt}
		want, err := apply(AttentionGradOp, a, q, k, v, o, do)
		if err != nil {
			t.Fatal(err)
		}
		lse, err := apply(AttentionLSEOp, ir.Attrs{"scale": 0.5, "mask": MaskNone}, q, k, v)
		if err != nil {
			t.Fatal(err)
		}
		a = a.Clone()
		a["lse"] = true
		got, err := apply(AttentionGradOp, a, q, k, v, o, do, lse)
		if err != nil {
			t.Fatal(err)
		}
		if !same(got, want) {
			t.Errorf("wrt %s: %s with lse, want %s", wrt, show(got), show(want))
		}
	}
}
