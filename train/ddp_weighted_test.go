package train

import (
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/data"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/simdev"
)

// Data-parallel training of a static batch with a class loss that divides its mean by Σ w[yᵢ]
// over the labels not ignored trains one device's parameters, losses and accuracy: each rank's
// gradients are weighted by its share of the global batch's divisor (ddp_sym.go), where DDP's
// plain average of the ranks' means gives another gradient whenever the ranks' labels weigh
// differently. Ranks of 2 rows with ignore_index a class of three meet shards whose every label
// is ignored (the test counts them): such a rank's 0/0 counts for nothing.
func TestFitParallelClassWeights(t *testing.T) {
	w := []float64{1, 2, 0.5}
	for _, tc := range []struct {
		loss   Loss
		rows   int
		global int
		ranks  int
		sim    bool
	}{
		{Loss{Name: CrossEntropyLoss, Weight: w}, 96, 16, 2, false},
		{Loss{Name: CrossEntropyLoss, IgnoreIndex: ptr(int64(0))}, 96, 8, 4, false},
		{Loss{Name: CrossEntropyLoss, Weight: w, IgnoreIndex: ptr(int64(0)), LabelSmoothing: 0.1}, 96, 8, 4, false},
		{Loss{Name: NLLLoss, Weight: w, IgnoreIndex: ptr(int64(1))}, 96, 8, 4, false},
		{Loss{Name: CrossEntropyLoss, Weight: w, IgnoreIndex: ptr(int64(0))}, 32, 4, 2, true},
	} {
		d := mixtureRows(t, tc.rows)
		dev := "ref"
		if tc.sim {
			dev = "sim"
		}
		t.Run(fmt.Sprintf("%s/%d rows/global batch %d/%d %s ranks", tc.loss, tc.rows, tc.global, tc.ranks, dev), func(t *testing.T) {
			if tc.loss.IgnoreIndex != nil && ignoredShards(t, d, tc.global, tc.ranks, *tc.loss.IgnoreIndex) == 0 {
				t.Fatalf("no shard has only ignored labels: the case tests less than it says")
			}
			model := mixtureAt
			if tc.loss.Name == NLLLoss {
				model = mixtureLogSoftmaxAt
			}
			o := FitOptions{Optimizer: &SGD{LR: 0.1, Momentum: 0.9}, Train: d, Test: d, Epochs: 2, Seed: 3}
			want, err := Fit(buildModel(t, model(tc.global), tc.loss), o)
			if err != nil {
				t.Fatal(err)
			}
			devs := refDevices(tc.ranks)
			if tc.sim {
				for i := range devs {
					devs[i] = simdev.New(simdev.Options{})
				}
			}
			o.Parallel = &Parallel{Devices: devs}
			got, err := Fit(buildModel(t, model(tc.global/tc.ranks), tc.loss), o)
			if err != nil {
				t.Fatal(err)
			}
			compareParamsIn(t, got, want, ir.F32)
			for i, e := range got.Epochs {
				w := want.Epochs[i]
				for what, p := range map[string][2]float64{"train loss": {e.Train.Loss, w.Train.Loss}, "train accuracy": {e.Train.Accuracy, w.Train.Accuracy},
					"test loss": {e.Test.Loss, w.Test.Loss}} {
					if diff := p[0] - p[1]; !(diff <= 1e-5 && diff >= -1e-5) {
						t.Errorf("epoch %d: %s %v, one device's %v", e.Epoch, what, p[0], p[1])
					}
				}
			}
		})
	}
}

// ignoredShards counts the ranks' shards, over Fit's two epochs of global batches, whose every
// label is ignore.
func ignoredShards(t *testing.T, d data.Dataset, global, ranks int, ignore int64) int {
	t.Helper()
	l := &data.Loader{Data: d, Batch: global, Shuffle: true, Seed: 3, DropLast: true}
	n := 0
	for epoch := 1; epoch <= 2; epoch++ {
		for b, err := range l.Epoch(epoch) {
			if err != nil {
				t.Fatal(err)
			}
			per := global / ranks
			for k := range ranks {
				all := true
				for _, y := range b.Y.I[k*per : (k+1)*per] {
					all = all && y == ignore
				}
				n += btoi(all)
			}
		}
	}
	return n
}

// mixtureLogSoftmaxAt is mixtureAt with log-probabilities out, for NLLLoss.
func mixtureLogSoftmaxAt(n int) func(*frontend.Builder) {
	return func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, n, 2)
		fc1, fc2 := nn.NewLinear(b, "fc1", 2, 16), nn.NewLinear(b, "fc2", 16, 3)
		b.Output("logits", fc2.Forward(fc1.Forward(x).Relu()).LogSoftmax(1))
	}
}
