package nn

import (
	"math"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// The dropout of MultiheadAttention and TransformerEncoderLayer acts as nn.Dropout does: it
// passes its input through in eval mode (PyTorch's model.eval(), what gcomp builds for inference,
// so PyTorch's default dropout=0.1 loads and runs unchanged) and drops with Philox masks in
// training mode. PyTorch drops the attention weights (dropout_p of
// multi_head_attention_forward), the self-attention block's output (dropout1), the
// feed-forward network's hidden activations (dropout) and its output (dropout2).

// checkDropout refuses a dropout probability outside [0, 1], in PyTorch's words.
func checkDropout(b *frontend.Builder, p float64) {
	if !(p >= 0 && p <= 1) {
		b.Fail("dropout probability has to be between 0 and 1, but got %v", p)
	}
}

// attend is softmax(q·kᵀ/√d)·v in each head of q [B, H, L, d], k and v [B, H, S, d], with
// dropout p on the attention weights in training mode. Without dropout it is
// frontend.ScaledDotProductAttention, the form the compiler recognizes as fused attention.
func attend(q, k, v *frontend.Tensor, causal bool, p float64) *frontend.Tensor {
	b := q.Builder()
	if !b.Training() || p == 0 {
		return frontend.ScaledDotProductAttention(q, k, v, causal)
	}
	scores := q.Matmul(k.Transpose(-2, -1)).MulScalar(1 / math.Sqrt(float64(q.Dim(-1))))
	if causal {
		l, s := q.Dim(-2), k.Dim(-2)
		scores = scores.MaskedFill(b.Iota(ir.I32, 1, l, s).Gt(b.Iota(ir.I32, 0, l, s)), math.Inf(-1))
	}
	return Dropout{P: p}.Forward(scores.Softmax(-1)).Matmul(v)
}
