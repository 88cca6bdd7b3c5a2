package train

import (
	"slices"
	"testing"

	"github.com/gcomp/gcomp/data"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// A model over a symbolic batch (frontend.WithMaxBatch) trains with one step artifact: Fit runs
// an epoch of 45 rows in batches of 16 as three steps, the last of 13 rows at its own size (no
// padding, no row dropped), on the memchecked simulator, and ends with the weights the reference
// interpreter's Fit trains, within tolerance. Regression and classification losses alike, the
// class loss also with PyTorch's weights, ignored labels and label smoothing.
func TestFitSymbolicBatch(t *testing.T) {
	const rows, batch = 45, 16
	x := make([]float64, rows*3)
	yReg, yCls, yIgn := make([]float64, rows), make([]float64, rows), make([]float64, rows)
	for i := range rows {
		a, b, c := float64(i%7)/3-1, float64(i%5)/2-1, float64(i%11)/5-1
		x[3*i], x[3*i+1], x[3*i+2] = a, b, c
		yReg[i] = 2*a - 3*b + 0.5*c
		yCls[i] = float64(i % 3)
		yIgn[i] = yCls[i]
		if i%5 == 2 {
			yIgn[i] = -1
		}
	}
	for _, tc := range []struct {
		name string
		loss Loss
		y    *tensor.Tensor
		out  int
		pred string
	}{
		{"MSE", Loss{Name: MSELoss}, tensor.FromFloats(ir.T(ir.F32, rows, 1), yReg), 1, "y"},
		{"cross-entropy", Loss{Name: CrossEntropyLoss}, tensor.FromFloats(ir.T(ir.I64, rows), yCls), 3, "logits"},
		{"cross-entropy, class weights, ignore_index and label smoothing", Loss{Name: CrossEntropyLoss, Weight: []float64{1, 2, 0.5}, IgnoreIndex: ptr(int64(-1)), LabelSmoothing: 0.1},
			tensor.FromFloats(ir.T(ir.I64, rows), yIgn), 3, "logits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := func(b *frontend.Builder) {
				in := b.Input("x", ir.F32, b.Batch(batch), 3)
				fc1, fc2 := nn.NewLinear(b, "fc1", 3, 8), nn.NewLinear(b, "fc2", 8, tc.out)
				b.Output(tc.pred, fc2.Forward(fc1.Forward(in).Relu()))
			}
			m := buildModel(t, model, tc.loss, frontend.WithMaxBatch(batch))
			d, err := data.NewTensors("d", tensor.FromFloats(ir.T(ir.F32, rows, 3), x), tc.y)
			if err != nil {
				t.Fatal(err)
			}
			fit := func(dev *simdev.Device) (*FitResult, []int) {
				var got []int
				o := FitOptions{Optimizer: NewSGD(0.05), Train: d, Test: d, Epochs: 2, Seed: 4,
					OnStep: func(s StepEnd) error { got = append(got, s.Rows); return nil }}
				if dev != nil {
					o.Device = dev
				}
				res, err := Fit(m, o)
				if err != nil {
					t.Fatal(err)
				}
				return res, got
			}
			sim, steps := fit(simdev.New(simdev.Options{}))
			if want := []int{16, 16, 13, 16, 16, 13}; !slices.Equal(steps, want) {
				t.Errorf("steps of %v rows, want %v", steps, want)
			}
			if e := sim.Epochs[0]; e.Train.Rows != rows || e.Test.Rows != rows {
				t.Errorf("epoch 1 trained on %d rows and tested on %d, want %d", e.Train.Rows, e.Test.Rows, rows)
			}
			ref, _ := fit(nil)
			for name, w := range ref.Params {
				g := sim.Params[name]
				rel, abs := tolerance.Tolerance(w.Type.DType, false, 256)
				for i := range w.Len() {
					if !tolerance.Within(g.At(i), w.At(i), rel, abs) {
						t.Fatalf("%s[%d] = %v on the simulator, %v on the reference", name, i, g.At(i), w.At(i))
					}
				}
			}
		})
	}
}

// Autocast over a symbolic batch: bf16, and f16 with loss scaling, train the mixture (whose
// fc1.weight [16,2] is as large as the input at the bound 16) with Adam on the memchecked
// simulator to the reference interpreter's weights, within bf16's tolerance (a regression: the
// casts became static at the bound, and Adam's and the unscaling's scalars took the batch).
func TestFitSymbolicBatchAMP(t *testing.T) {
	m := symMixture(t, 16, Loss{Name: CrossEntropyLoss, Weight: []float64{1, 2, 0.5}})
	d := mixtureRows(t, 45)
	for _, amp := range []string{"bf16", "f16"} {
		t.Run(amp, func(t *testing.T) {
			o := FitOptions{Optimizer: adam01(), AMP: amp, Train: d, Epochs: 1}
			want, err := Fit(m, o)
			if err != nil {
				t.Fatal(err)
			}
			o.Device = simdev.New(simdev.Options{})
			got, err := Fit(m, o)
			if err != nil {
				t.Fatal(err)
			}
			compareParamsIn(t, got, want, ir.BF16)
		})
	}
}
