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

// TestLowerAttentionGrad: the pipeline keeps the gradients of q, k and v as attention_grad ops
// reading one attention_lse per attention (cse merges the three) where the fused backward applies,
// and writes the others (the bias's; any under a position mask) as the decomposition, one
// softmax per attention (cse merges the gradients' recomputations); either way the result is the
// op's reference semantics within the dtype's rounding, and the forward attention op stays.
func TestLowerAttentionGrad(t *testing.T) {
	for _, c := range attnCases() {
		t.Run(c.String(), func(t *testing.T) {
			_, g, _ := c.gradients(t)
			res, err := Run(g, Options{VerifyEach: true})
			if err != nil {
				t.Fatal(err)
			}
			fused := c.mask != ops.MaskPosition
			wantGrads, wantLSE, wantExp := 0, 0, 1
			if fused {
				wantGrads, wantLSE, wantExp = 3, 1, 0
				if c.bias != nil {
					wantExp = 1 // dbias
				}
			}
			if n := countOps(res.Graph, ops.AttentionGradOp); n != wantGrads {
				t.Errorf("%d attention_grad ops left, want %d", n, wantGrads)
			}
			for _, v := range res.Graph.Values {
				if v.Op == ops.AttentionGradOp && !v.Attrs.Bool("lse", false) {
					t.Errorf("%s reads no lse", res.Graph.Format(v))
				}
			}
			if n := countOps(res.Graph, ops.AttentionLSEOp); n != wantLSE {
				t.Errorf("%d attention_lse ops, want %d", n, wantLSE)
			}
			if n := countOps(res.Graph, ops.AttentionOp); n != 1 {
				t.Errorf("%d attention ops, want the forward's", n)
			}
			if n := countOps(res.Graph, "exp"); n != wantExp {
				t.Errorf("%d exp ops, want %d", n, wantExp)
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

// TestAttentionForwardWritesLSE: the fuser puts the backward's attention_lse in its forward's
// kernel when the CUDA-core template (f32 prefill) or the tensor-core one (f16, bf16) computes
// the forward, which then writes both, and gives it a kernel of its own beside the split-KV
// template (a few query rows), which does not write it; dk and dv always share a kernel, dq has
// its own.
func TestAttentionForwardWritesLSE(t *testing.T) {
	for _, tc := range []struct {
		c      attnCase
		joined bool
	}{
		{attnCase{1, 2, 2, 40, 40, 16, 16, ops.MaskCausal, nil, ir.F32}, true},
		{attnCase{2, 4, 2, 40, 40, 16, 8, ops.MaskNone, []int{1, 4, 40, 40}, ir.F32}, true},
		{attnCase{1, 2, 2, 64, 64, 64, 64, ops.MaskCausal, nil, ir.F16}, true},
		{attnCase{2, 4, 2, 40, 40, 64, 64, ops.MaskNone, []int{1, 4, 40, 40}, ir.BF16}, true},
		{attnCase{1, 2, 2, 2, 40, 16, 16, ops.MaskNone, nil, ir.F32}, false},
	} {
		t.Run(tc.c.String(), func(t *testing.T) {
			_, g, _ := tc.c.gradients(t)
			res, err := Run(g, Options{VerifyEach: true})
			if err != nil {
				t.Fatal(err)
			}
			var both, alone, dkv, dq int
			for _, k := range res.Kernels.Kernels {
				switch n := countOps(k.Body, ops.AttentionGradOp); {
				case n == 2 && len(k.Writes) == 2:
					dkv++
				case n == 1 && len(k.Writes) == 1:
					dq++
				case n != 0:
					t.Errorf("%s computes %d attention_grad ops and writes %d buffers", k.Name, n, len(k.Writes))
				}
				a, l := countOps(k.Body, ops.AttentionOp), countOps(k.Body, ops.AttentionLSEOp)
				both += btoi(a == 1 && l == 1)
				alone += btoi(a == 0 && l == 1)
				if l == 1 && (k.Kind != Attention || len(k.Writes) != a+1) {
					t.Errorf("%s: kind %s writes %d buffers", k.Name, k.Kind, len(k.Writes))
				}
			}
			if want := btoi(tc.joined); both != want || alone != 1-want {
				t.Errorf("%d forward kernels writing the LSE, %d LSE kernels; want %d and %d", both, alone, want, 1-want)
			}
			if dkv != 1 || dq != 1 {
				t.Errorf("%d kernels of dk and dv, %d of dq; want one each", dkv, dq)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
