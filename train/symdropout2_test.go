package train

import (
	"math"
	"slices"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
)

// A transformer block trained over variable-length sequences: its activations are
// [batch, seq, 8] (one head: [batch, 1, seq, 8]) with both batch and seq symbolic, and its three dropouts (after the
// attention's projection, on the feed-forward network's hidden activations and after its
// output, as nn.TransformerEncoderLayer's dropout1, dropout and dropout2) draw their masks over
// the rows batch·seq: element i of a mask is the reference's at the run's sizes (docs/ops.md).
// One build runs at (batch, seq) pairs that are 1, primes and the bounds, smallest first, each
// within tolerance of the reference interpreter's step and the static build's at those sizes.
// nn.TransformerEncoderLayer with dropout on its three branches trains over a symbolic batch of
// static sequences. With dropout on the attention weights too, attention is unfused: its q·kᵀ
// has symbolic free dims on both sides and its softmax reduces the symbolic seq (two heads here;
// one head with biases, and nn.TransformerEncoderLayer: TestSymbolicAttentionWeightDropoutStep).
func TestSymbolicTransformerDropoutStep(t *testing.T) {
	overBoth := []map[string]int64{
		{"batch": 1, "seq": 1}, {"batch": 1, "seq": 5}, {"batch": 3, "seq": 2}, {"batch": 2, "seq": 7}, {"batch": 4, "seq": 7},
	}
	overBatch := []map[string]int64{{frontend.BatchDim: 1}, {frontend.BatchDim: 3}, {frontend.BatchDim: 4}}
	block := func(p float64, heads int) func(b *frontend.Builder) {
		return func(b *frontend.Builder) { transformerBlock(b, p, heads, 0) }
	}
	attnDrop := func(p float64, heads int) func(b *frontend.Builder) {
		return func(b *frontend.Builder) { transformerBlock(b, p, heads, p) }
	}
	for _, tc := range []struct {
		name  string
		model func(b *frontend.Builder)
		opt   Optimizer
		batch int // WithMaxBatch's, for a model that declares b.Batch; 0 for b.Dim's
		envs  []map[string]int64
		masks []string // the dropouts' masks, in the step's order
	}{
		{"dropout 0.1, SGD", block(0.1, 1), &SGD{LR: 0.1}, 0, overBoth,
			[]string{"f32[batch,1,seq,8]", "f32[batch,1,seq,16]", "f32[batch,1,seq,8]"}},
		// Not Adam: at seq 1 the softmax over one key has a zero gradient for k, which Adam's
		// normalization would turn from rounding noise into a full step.
		{"dropout 0.5, SGD with momentum", block(0.5, 1), &SGD{LR: 0.05, Momentum: 0.9}, 0, overBoth,
			[]string{"f32[batch,1,seq,8]", "f32[batch,1,seq,16]", "f32[batch,1,seq,8]"}},
		{"2 heads, dropout 0.1, SGD", block(0.1, 2), &SGD{LR: 0.1}, 0, overBoth,
			[]string{"f32[batch,seq,8]", "f32[batch,seq,16]", "f32[batch,seq,8]"}},
		// Dropout on the attention weights too (MultiheadAttention's dropout_p): attention is
		// unfused; q·kᵀ [batch, 2, seq, seq] has symbolic free dims on both sides, the softmax
		// reduces the symbolic seq, and so do the products and row sums of its backward.
		{"2 heads, attention-weight dropout 0.1, SGD", attnDrop(0.1, 2), &SGD{LR: 0.1}, 0, overBoth,
			[]string{"f32[batch,2,seq,seq]", "f32[batch,seq,8]", "f32[batch,seq,16]", "f32[batch,seq,8]"}},
		// nn.TransformerEncoderLayer itself (packed in-projection with biases, 2 heads) over a
		// symbolic batch of sequences of 5, dropout 0.1 on its three branches.
		{"nn.TransformerEncoderLayer over a symbolic batch, dropout 0.1, SGD", func(b *frontend.Builder) {
			x, y := b.Input("x", ir.F32, b.Batch(4), 5, 8), b.Input("t", ir.F32, b.Batch(4), 5, 8)
			l := nn.NewTransformerEncoderLayer(b, "enc", 8, 2, nn.TransformerEncoderLayerOptions{DimFeedforward: 16, Dropout: 0.1, BatchFirst: true})
			l.SelfAttn.Dropout = 0 // on the weights too: TestSymbolicAttentionWeightDropoutStep
			b.Output(DefaultLoss, frontend.MSELoss(l.Forward(x), y))
		}, &SGD{LR: 0.1}, 4, overBatch, []string{"f32[batch,5,8]", "f32[batch,5,16]", "f32[batch,5,8]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := dropoutStep(t, tc.model, tc.batch, tc.opt, tc.masks)
			if len(s.Graph.Dims) != len(tc.envs[0]) {
				t.Fatalf("the step has dims %v", s.Graph.Dims)
			}
			checkSymbolicStepAt(t, s, tc.envs, nil)
		})
	}
}

// dropoutStep builds model's train step with opt (over a symbolic batch of at most batch when
// batch > 0) and checks its dropouts' masks, in the step's order.
func dropoutStep(t *testing.T, model func(b *frontend.Builder), batch int, opt Optimizer, want []string) *StepGraph {
	t.Helper()
	return dropoutStepWith(t, model, batch, opt, Options{}, want)
}

// dropoutStepWith is dropoutStep with the step's options o (an AMP step's).
func dropoutStepWith(t *testing.T, model func(b *frontend.Builder), batch int, opt Optimizer, o Options, want []string) *StepGraph {
	t.Helper()
	opts := []frontend.Option{frontend.WithTraining()}
	if batch > 0 {
		opts = append(opts, frontend.WithMaxBatch(batch))
	}
	fwd, err := frontend.Build("m", model, opts...)
	if err != nil {
		t.Fatal(err)
	}
	s, err := StepFromGraph(fwd, opt, o)
	if err != nil {
		t.Fatal(err)
	}
	var masks []string
	for _, v := range s.Graph.Values {
		if v.Op == "philox_uniform" {
			masks = append(masks, v.Type.String())
		}
	}
	if !slices.Equal(masks, want) {
		t.Fatalf("the step's masks are %v, want %v", masks, want)
	}
	return s
}

// transformerBlock is a post-norm transformer encoder block over [batch, seq, 8] (batch in
// [1, 4], seq in [1, 7]) with dropout p (and attnP on the attention weights, which unfuses
// attention), its loss the mean squared error to t. With one head the
// activations are [batch, 1, seq, 8]; with more, the heads are split from the features and
// merged back, and the q, k and v projections have no bias (biased and packed ones train too:
// TestSymbolicTransformerEncoderLayerStep).
func transformerBlock(b *frontend.Builder, p float64, heads int, attnP float64) {
	n, s := b.Dim("batch", 1, 4), b.Dim("seq", 1, 7)
	shape := []int{n, s, 8}
	if heads == 1 {
		shape = []int{n, 1, s, 8}
	}
	x, y := b.Input("x", ir.F32, shape...), b.Input("t", ir.F32, shape...)
	lin := func(name string, in, out int) *nn.Linear { return nn.NewLinear(b, name, in, out) }
	split := func(name string) *frontend.Tensor {
		if heads == 1 {
			return lin(name, 8, 8).Forward(x)
		}
		l := nn.NewLinear(b, name, 8, 8, nn.LinearOptions{NoBias: true})
		return l.Forward(x).Reshape(n, s, heads, 8/heads).Transpose(1, 2)
	}
	q, k, v := split("q"), split("k"), split("v")
	a := frontend.ScaledDotProductAttention(q, k, v, false)
	if attnP > 0 { // nn.MultiheadAttention's unfused form in training (attention_dropout.go there)
		w := q.Matmul(k.Transpose(-2, -1)).MulScalar(1 / math.Sqrt(float64(q.Dim(-1))))
		a = nn.Dropout{P: attnP}.Forward(w.Softmax(-1)).Matmul(v)
	}
	if heads > 1 {
		a = a.Transpose(1, 2).Reshape(n, s, 8)
	}
	drop := nn.Dropout{P: p}
	x = nn.NewLayerNorm(b, "norm1", 8).Forward(x.Add(drop.Forward(lin("out", 8, 8).Forward(a))))
	h := lin("linear2", 16, 8).Forward(drop.Forward(lin("linear1", 8, 16).Forward(x).Relu()))
	x = nn.NewLayerNorm(b, "norm2", 8).Forward(x.Add(drop.Forward(h)))
	b.Output(DefaultLoss, frontend.MSELoss(x, y))
}
