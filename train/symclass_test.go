package train

import (
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// symClassLosses are the class losses with PyTorch's arguments over a symbolic batch. labels
// gives row i's label at batch n; the model's 4 classes are 0..3.
var symClassLosses = []struct {
	name   string
	loss   Loss
	r      frontend.Reduction
	labels func(i, n int) int64
}{
	{"cross-entropy, class weights", Loss{Name: CrossEntropyLoss, Weight: []float64{0.5, 1, 2, 1.5}}, frontend.ReductionMean, cycle},
	{"cross-entropy, label smoothing", Loss{Name: CrossEntropyLoss, LabelSmoothing: 0.2}, frontend.ReductionMean, cycle},
	{"cross-entropy, ignore_index -100 (PyTorch's default) on every third row", Loss{Name: CrossEntropyLoss, IgnoreIndex: ptr(int64(-100))}, frontend.ReductionMean,
		func(i, n int) int64 {
			if i%3 == 1 {
				return -100
			}
			return cycle(i, n)
		}},
	{"NLL, class weights, ignore_index a class", Loss{Name: NLLLoss, Weight: []float64{0.5, 1, 2, 1.5}, IgnoreIndex: ptr(int64(2))}, frontend.ReductionMean, cycle},
	{"cross-entropy, weights, ignore_index and label smoothing", Loss{Name: CrossEntropyLoss, Weight: []float64{0.5, 1, 2, 1.5}, IgnoreIndex: ptr(int64(1)), LabelSmoothing: 0.1}, frontend.ReductionMean, cycle},
	{"cross-entropy, weights, ignore_index and label smoothing, sum", Loss{Name: CrossEntropyLoss, Weight: []float64{0.5, 1, 2, 1.5}, IgnoreIndex: ptr(int64(1)), LabelSmoothing: 0.1}, frontend.ReductionSum, cycle},
	// PyTorch's mean over no sample is 0/0: the loss is NaN, the gradients zero, in the static
	// step as in the symbolic one (TestEveryLabelIgnoredStep).
	{"NLL, every label ignored", Loss{Name: NLLLoss, IgnoreIndex: ptr(int64(3))}, frontend.ReductionMean, func(int, int) int64 { return 3 }},
}

func cycle(i, n int) int64 { return int64((3*i + n) % 4) }

func ptr[T any](v T) *T { return &v }

// A train step with a class loss with weights, ignored labels or label smoothing over a
// symbolic batch builds once (no batch-sized iota) and runs on the memchecked simulator at
// batches 1, 5 and 8: its new parameters, state and loss equal the reference interpreter's step
// and the static build's at that batch.
func TestSymbolicClassLossStep(t *testing.T) {
	for _, tc := range symClassLosses {
		t.Run(tc.name, func(t *testing.T) {
			fwd, err := frontend.Build("m", func(b *frontend.Builder) {
				x := b.Input("x", ir.F32, b.Batch(8), 6)
				w1 := b.Param("w1", ir.T(ir.F32, 12, 6), frontend.Uniform(-1, 1))
				b1 := b.Param("b1", ir.T(ir.F32, 12), frontend.Uniform(-1, 1))
				w2 := b.Param("w2", ir.T(ir.F32, 4, 12), frontend.Uniform(-1, 1))
				logits := frontend.Linear(frontend.Linear(x, w1, b1).Tanh(), w2, nil)
				if tc.loss.Name == NLLLoss {
					logits = logits.LogSoftmax(1)
				}
				b.Output(LogitsName, logits)
			}, frontend.WithMaxBatch(8))
			if err != nil {
				t.Fatal(err)
			}
			checkSymbolicStep(t, symLossStep(t, fwd, tc.loss, tc.r), []int64{1, 5, 8}, func(n int64, in map[string]*tensor.Tensor) {
				y := make([]float64, n)
				for i := range y {
					y[i] = float64(tc.labels(i, int(n)))
				}
				in[LabelsName] = tensor.FromFloats(ir.T(ir.I64, int(n)), y)
			})
		})
	}
}
