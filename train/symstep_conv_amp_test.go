package train

import (
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
)

// An AMP (bf16) train step of a convolution with BatchNorm and dropout over a symbolic batch in
// [1, 8]: autocast casts the weight gradient's operands before the views that move the batch
// (passes' autocast_symconv.go), so the kernel computing dy's cast keeps the batch leading and
// the convolution folds the batch reading the casts through the views (a stage of a persistent
// kernel); the step runs at batches 1, 5 and 8 on the memchecked simulator within bf16's
// tolerance of the reference's step and the static build's.
func TestSymbolicStepAMPConv(t *testing.T) {
	model := func(b *frontend.Builder) {
		n := b.Batch(8)
		x, y := b.Input("x", ir.F32, n, 3, 6, 6), b.Input("t", ir.F32, n, 8, 6, 6)
		w := b.Param("w", ir.T(ir.F32, 8, 3, 3, 3), frontend.Uniform(-0.5, 0.5))
		h := nn.NewBatchNorm2d(b, "bn", 8).Forward(frontend.Conv2d(x, w, nil, frontend.Conv2dOptions{Padding: [2]int{1, 1}}))
		b.Output(DefaultLoss, frontend.MSELoss(nn.Dropout{P: 0.25}.Forward(h.Relu()), y))
	}
	fwd, err := frontend.Build("m", model, frontend.WithMaxBatch(8), frontend.WithTraining())
	if err != nil {
		t.Fatal(err)
	}
	s, err := StepFromGraph(fwd, &SGD{LR: 0.1}, Options{AMP: "bf16", LossScale: &LossScale{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	checkSymbolicStep(t, s, []int64{1, 5, 8}, nil)
}
