package passes

import (
	"slices"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes/autodiff"
)

// TestAttentionGradMatchesDecomposition: the attention op's gradient rule (attention_grad, the
// softmax recomputed) gives the gradients that differentiating the decomposition gives, on the
// reference interpreter, for every case of the op's contract: masks none, causal and position,
// grouped and multi-query KV heads (dk, dv summed over a group's query heads), additive masks
// broadcast over batch or heads (dbias summed over them), f32, f16 and bf16.
func TestAttentionGradMatchesDecomposition(t *testing.T) {
	for _, c := range attnCases() {
		t.Run(c.String(), func(t *testing.T) {
			want, got, wrt := c.gradients(t)
			if n := countOps(got, ops.AttentionGradOp); n != len(wrt) {
				t.Fatalf("%d attention_grad ops, want %d", n, len(wrt))
			}
			if err := ops.Verify(got); err != nil {
				t.Fatal(err)
			}
			runBoth(t, want, got)
		})
	}
}

// TestAttentionGradOnlyWhatIsNeeded: gradients are emitted only for the operands the loss
// needs, in operand order.
func TestAttentionGradOnlyWhatIsNeeded(t *testing.T) {
	c := attnCase{2, 4, 2, 3, 5, 8, 8, ops.MaskCausal, []int{1, 4, 3, 5}, ir.F32}
	dec := c.decomposed(t, true)
	for _, wrt := range [][]string{{"k"}, {"bias", "v"}, {"q", "bias"}} {
		got, err := autodiff.Grad(c.fused(t, dec, true), "loss", wrt)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, v := range got.Values {
			if v.Op == ops.AttentionGradOp {
				names = append(names, v.Attrs.String("wrt", ""))
			}
		}
		want := map[string]int{"q": 0, "k": 1, "v": 2, "bias": 3}
		if len(names) != len(wrt) || len(names) == 2 && want[names[0]] > want[names[1]] {
			t.Errorf("wrt %v: attention_grad ops for %v, want one each in operand order", wrt, names)
		}
	}
}

// TestLowerAttentionGrad: the pipeline writes attention_grad as its decomposition (no kernel
// runs it), which computes the op's reference semantics within the dtype's rounding, one
// softmax per attention (cse merges the gradients' recomputations); the forward attention op
// stays.
func TestLowerAttentionGrad(t *testing.T) {
	for _, c := range attnCases() {
		t.Run(c.String(), func(t *testing.T) {
			_, g, _ := c.gradients(t)
			res, err := Run(g, Options{VerifyEach: true})
			if err != nil {
				t.Fatal(err)
			}
			if n := countOps(res.Graph, ops.AttentionGradOp); n != 0 {
				t.Errorf("%d attention_grad ops left", n)
			}
			if n := countOps(res.Graph, ops.AttentionOp); n != 1 {
				t.Errorf("%d attention ops, want the forward's", n)
			}
			if n := countOps(res.Graph, "exp"); n != 1 {
				t.Errorf("%d exp ops, want one recomputed softmax", n)
			}
			runBoth(t, g, res.Graph)
		})
	}
}

// gradients differentiates the loss of c's decomposition and of its attention op with respect
// to q, k, v and the bias. The loss output is dropped: it sums the rounded o·r, so its
// difference is o's, which runBoth compares in o's dtype; the gradients are what is tested.
func (c attnCase) gradients(t *testing.T) (dec, fused *ir.Graph, wrt []string) {
	t.Helper()
	wrt = []string{"q", "k", "v"}
	if c.bias != nil {
		wrt = append(wrt, "bias")
	}
	d := c.decomposed(t, true)
	dec, err := autodiff.Grad(d, "loss", wrt)
	if err != nil {
		t.Fatal(err)
	}
	if fused, err = autodiff.Grad(c.fused(t, d, true), "loss", wrt); err != nil {
		t.Fatal(err)
	}
	for _, g := range []*ir.Graph{dec, fused} {
		g.Outputs = slices.DeleteFunc(g.Outputs, func(o ir.Output) bool { return o.Name == "loss" })
	}
	return dec, fused, wrt
}
