package train

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
)

// symMixture is the mixture classifier over a symbolic batch in [1, max].
func symMixture(t *testing.T, max int, l Loss) *Model {
	t.Helper()
	model := func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, b.Batch(max), 2)
		fc1, fc2 := nn.NewLinear(b, "fc1", 2, 16), nn.NewLinear(b, "fc2", 16, 3)
		b.Output("logits", fc2.Forward(fc1.Forward(x).Relu()))
	}
	return buildModel(t, model, l, frontend.WithMaxBatch(max))
}

// Data-parallel training of a model over a symbolic batch runs every global batch at its size:
// N ranks over rows in global batches of 16 (per-rank bound 16/N) take the epoch's last partial
// batch split among them, and train the parameters, optimizer state, losses and accuracy one
// reference device trains over the same rows in batches of 16, within f32's tolerance, for the
// plain cross-entropy and with class weights, ignored labels (shards of only ignored labels
// among them) and label smoothing. 45 rows end with 13 (6 and 7 rows on 2 ranks, 3, 3, 3 and 4
// on 4); 33 rows with 1, which 3 of 4 ranks pad with a row weighted 0. Also under bf16 autocast,
// and with Adam, whose scalars broadcast to a parameter as large as the input at the bound.
func TestFitParallelSymbolicBatch(t *testing.T) {
	const global = 16
	weighted := Loss{Name: CrossEntropyLoss, Weight: []float64{1, 2, 0.5}, IgnoreIndex: ptr(int64(2)), LabelSmoothing: 0.1}
	sim := func(n int) []executor.Device {
		devs := make([]executor.Device, n)
		for i := range devs {
			devs[i] = simdev.New(simdev.Options{})
		}
		return devs
	}
	for _, tc := range []struct {
		rows  int
		loss  Loss
		devs  []executor.Device
		steps []int
		amp   string
		adam  bool
	}{
		{45, Loss{Name: CrossEntropyLoss}, refDevices(2), []int{16, 16, 13}, "", false},
		{45, weighted, refDevices(2), []int{16, 16, 13}, "", false},
		{45, weighted, refDevices(4), []int{16, 16, 13}, "", false},
		{33, weighted, refDevices(4), []int{16, 16, 1}, "", false},
		{33, Loss{Name: NLLLoss, Weight: []float64{1, 2, 0.5}}, refDevices(4), []int{16, 16, 1}, "", false},
		{45, weighted, refDevices(2), []int{16, 16, 13}, "bf16", false},
		// Adam's scalars broadcast to fc1.weight [16,2], the shape of the input at the bound 16.
		{45, weighted, refDevices(2), []int{16, 16, 13}, "", true},
		{45, weighted, sim(2), []int{16, 16, 13}, "", false},
	} {
		dev := "ref"
		if tc.devs[0] != nil {
			dev = "sim"
		}
		t.Run(fmt.Sprintf("%d rows/%s/%d %s ranks/AMP %q/Adam %v", tc.rows, tc.loss, len(tc.devs), dev, tc.amp, tc.adam), func(t *testing.T) {
			d := mixtureRows(t, tc.rows)
			opts := func(p *Parallel, steps *[]int) FitOptions {
				var opt Optimizer = &SGD{LR: 0.1, Momentum: 0.9}
				if tc.adam {
					opt = adam01()
				}
				return FitOptions{Optimizer: opt, AMP: tc.amp, Train: d, Test: d, Epochs: 2, Seed: 3, Parallel: p,
					OnStep: func(s StepEnd) error { *steps = append(*steps, s.Rows); return nil }}
			}
			var wantSteps, gotSteps []int
			want, err := Fit(symMixture(t, global, tc.loss), opts(nil, &wantSteps))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Fit(symMixture(t, global/len(tc.devs), tc.loss), opts(&Parallel{Devices: tc.devs}, &gotSteps))
			if err != nil {
				t.Fatal(err)
			}
			if all := append(slices.Clone(tc.steps), tc.steps...); !slices.Equal(gotSteps, all) || !slices.Equal(wantSteps, all) {
				t.Errorf("steps of %v rows, one device's %v, want %v", gotSteps, wantSteps, all)
			}
			prec, tol := ir.F32, 1e-5
			if tc.amp != "" {
				prec, tol = ir.BF16, 4e-3
			}
			compareParamsIn(t, got, want, prec)
			for i, e := range got.Epochs {
				w := want.Epochs[i]
				if e.Train.Rows != tc.rows || e.Steps != w.Steps {
					t.Errorf("epoch %d: %d rows in %d steps, want %d in %d", e.Epoch, e.Train.Rows, e.Steps, tc.rows, w.Steps)
				}
				for what, p := range map[string][2]float64{"train loss": {e.Train.Loss, w.Train.Loss}, "train accuracy": {e.Train.Accuracy, w.Train.Accuracy},
					"test loss": {e.Test.Loss, w.Test.Loss}} {
					if diff := p[0] - p[1]; diff > tol || diff < -tol {
						t.Errorf("epoch %d: %s %v, want %v", e.Epoch, what, p[0], p[1])
					}
				}
			}
		})
	}
}
