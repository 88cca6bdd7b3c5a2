package train

import (
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
)

// nn.TransformerEncoderLayer trained over variable-length sequences: both batch and seq are
// symbolic, so the gradients of its packed, biased in-projection sum (the bias) and concatenate
// (the packed weight) the heads' gradients read through the view that merges them,
// [batch, h, seq, d] transposed to [batch, seq, h, d], which moves the rows (docs/dynamic.md,
// "Folds through views"). Each run is within tolerance of the reference interpreter's step and
// the static build's at those sizes.
func TestSymbolicTransformerEncoderLayerStep(t *testing.T) {
	envs := []map[string]int64{
		{"batch": 1, "seq": 1}, {"batch": 1, "seq": 5}, {"batch": 3, "seq": 2}, {"batch": 2, "seq": 7}, {"batch": 4, "seq": 7},
	}
	model := func(b *frontend.Builder) {
		n, s := b.Dim("batch", 1, 4), b.Dim("seq", 1, 7)
		x, y := b.Input("x", ir.F32, n, s, 8), b.Input("t", ir.F32, n, s, 8)
		l := nn.NewTransformerEncoderLayer(b, "enc", 8, 2, nn.TransformerEncoderLayerOptions{DimFeedforward: 16, Dropout: 0.1, BatchFirst: true})
		l.SelfAttn.Dropout = 0 // on the weights, attention is unfused (docs/dynamic.md, Next)
		b.Output(DefaultLoss, frontend.MSELoss(l.Forward(x), y))
	}
	fwd, err := frontend.Build("m", model, frontend.WithTraining())
	if err != nil {
		t.Fatal(err)
	}
	s, err := StepFromGraph(fwd, &SGD{LR: 0.1}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Graph.Dims) != 2 {
		t.Fatalf("the step has dims %v", s.Graph.Dims)
	}
	checkSymbolicStepAt(t, s, envs, nil)
}
