package train

import (
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// Every loss train offers, with its arguments, builds over a symbolic batch (train.WithLoss on a
// prediction [batch, ...]) and its step runs on the memchecked simulator at batches 1, 5 and 8:
// new parameters, state and loss equal the reference interpreter's step and the static build's
// at that batch. The element losses read a prediction of rank 3 (as the gpt example's logits
// [batch, T, vocab]); one model looks its rows up in an embedding, whose gradient compares the
// symbolic batch of tokens with the table's rows (a regression: that comparison was typed at the
// bound, "eq: operand sizes differ", and the gpt example's step did not build).
func TestSymbolicLosses(t *testing.T) {
	beta := func(b float64) *float64 { return &b }
	for _, tc := range []struct {
		name  string
		loss  Loss
		embed bool // the rows are tokens looked up in an embedding
	}{
		{"", Loss{Name: MSELoss}, false},
		{"", Loss{Name: L1Loss}, false},
		{"", Loss{Name: SmoothL1Loss}, false},
		{"", Loss{Name: SmoothL1Loss, Beta: beta(0.3)}, false},
		{"", Loss{Name: SmoothL1Loss, Beta: beta(0)}, false},
		{"", Loss{Name: BCEWithLogitsLoss}, false},
		{"", Loss{Name: BCEWithLogitsLoss, PosWeight: []float64{0.5, 2, 1}}, false},
		{"", Loss{Name: CrossEntropyLoss}, false},
		{"", Loss{Name: NLLLoss}, false},
		{"embedding, ", Loss{Name: MSELoss}, true},
		{"embedding, ", Loss{Name: CrossEntropyLoss, Weight: []float64{1, 2, 0.5, 1}, IgnoreIndex: ptr(int64(3))}, true},
	} {
		t.Run(fmt.Sprintf("%s%s", tc.name, tc.loss), func(t *testing.T) {
			fwd, err := frontend.Build("m", func(b *frontend.Builder) {
				var h *frontend.Tensor
				if tc.embed {
					tok := b.Input("x", ir.I64, b.Batch(8), 2).WithRange(0, 7)
					h = nn.NewEmbedding(b, "emb", 7, 6).Forward(tok) // [batch, 2, 6]
				} else {
					h = b.Input("x", ir.F32, b.Batch(8), 2, 6)
				}
				h = nn.NewLinear(b, "fc1", 6, 8).Forward(h).Tanh()
				switch {
				case tc.loss.Class(): // [batch, 4] class scores
					out := nn.NewLinear(b, "fc2", 16, 4).Forward(h.Reshape(h.Dim(0), 16))
					if tc.loss.Name == NLLLoss {
						out = out.LogSoftmax(1)
					}
					b.Output(LogitsName, out)
				default: // [batch, 2, 3]
					b.Output("y", nn.NewLinear(b, "fc2", 8, 3).Forward(h))
				}
			}, frontend.WithMaxBatch(8))
			if err != nil {
				t.Fatal(err)
			}
			checkSymbolicStep(t, symLossStep(t, fwd, tc.loss, frontend.ReductionMean), []int64{1, 5, 8}, func(n int64, in map[string]*tensor.Tensor) {
				if tc.embed {
					tok := make([]float64, 2*n)
					for i := range tok {
						tok[i] = float64((5*i + int(n)) % 7)
					}
					in["x"] = tensor.FromFloats(ir.T(ir.I64, int(n), 2), tok)
				}
				switch {
				case tc.loss.Class(): // every class, and the ignored one
					in[LabelsName] = tensor.FromFloats(ir.T(ir.I64, int(n)), labelsCycle(int(n)))
				case tc.loss.Name == BCEWithLogitsLoss: // probabilities
					y := in[TargetName]
					for i := range y.F {
						y.F[i] = float64((7*i+int(n))%11) / 10
					}
				}
			})
		})
	}
}

// symLossStep is the step (SGD with momentum) of fwd, a model over a symbolic batch, with loss
// l reduced by r added.
func symLossStep(t *testing.T, fwd *ir.Graph, l Loss, r frontend.Reduction) *StepGraph {
	t.Helper()
	g, err := WithLoss(fwd, l, r)
	if err != nil {
		t.Fatal(err)
	}
	s, err := StepFromGraph(g, &SGD{LR: 0.1, Momentum: 0.9}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Graph.Dims) != 1 {
		t.Fatalf("the step has dims %v", s.Graph.Dims)
	}
	return s
}

// labelsCycle is n labels cycling through the classes 0..3.
func labelsCycle(n int) []float64 {
	y := make([]float64, n)
	for i := range y {
		y[i] = float64(cycle(i, n))
	}
	return y
}
