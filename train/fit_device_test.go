package train

import (
	"testing"

	"github.com/gcomp/gcomp/data"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/runtime/simdev"
)

// Fit trains on a compiled device as on the reference interpreter: on the PTX simulator, the
// losses with arguments (class weights, ignore_index and label smoothing; beta; pos_weight) give
// the weights the reference gives, within the comparison tolerance, after an epoch.
func TestFitOnSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: compiles and simulates three train steps")
	}
	tr, _, err := data.ReadNPYDir("testdata/mixture")
	if err != nil {
		t.Fatal(err)
	}
	csv, err := data.ReadCSVFile("testdata/linear.csv", "y")
	if err != nil {
		t.Fatal(err)
	}
	beta, ignore := 0.5, int64(1)
	for _, tc := range []struct {
		l    Loss
		data data.Dataset
	}{
		{Loss{Name: CrossEntropyLoss, Weight: []float64{1, 2, 0.5}, IgnoreIndex: &ignore, LabelSmoothing: 0.1}, tr},
		{Loss{Name: SmoothL1Loss, Beta: &beta}, csv},
		{Loss{Name: MSELoss}, csv},
	} {
		t.Run(tc.l.String(), func(t *testing.T) {
			model := mixtureModel
			if !tc.l.Class() {
				model = linearModel
			}
			m := buildModel(t, model, tc.l)
			got, want := fitOnSimulator(t, m, data.Head(tc.data, 64)) // 4 steps
			if w, g := want.Epochs[0].Test.Loss, got.Epochs[0].Test.Loss; g < w*0.999 || g > w*1.001 {
				t.Errorf("test loss %v on the simulator, %v on the reference", g, w)
			}
		})
	}
}

// fitOnSimulator trains m for an epoch of d with SGD on the reference interpreter and on the PTX
// simulator, and compares the trained weights within the comparison tolerance.
func fitOnSimulator(t *testing.T, m *Model, d data.Dataset) (got, want *FitResult) {
	t.Helper()
	want, err := Fit(m, FitOptions{Optimizer: NewSGD(0.05), Train: d, Test: d, Epochs: 1})
	if err != nil {
		t.Fatal(err)
	}
	got, err = Fit(m, FitOptions{Optimizer: NewSGD(0.05), Train: d, Test: d, Epochs: 1, Device: simdev.New(simdev.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range want.Params {
		if o := check.Compare(name, got.Params[name], w, false); !o.Pass() {
			t.Errorf("%s: %d elements differ, first %s", name, o.Bad, o.First)
		}
	}
	return got, want
}
