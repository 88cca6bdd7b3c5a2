package train

//go:generate go run ../scripts/gendata -csv testdata/linear.csv -mixture testdata/mixture -linreg ../examples/linreg/data

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/data"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// noise is the standard deviation of testdata/linear.csv's noise (scripts/gendata).
const noise = 0.1

// buildModel builds model (with opts) in eval and in training mode and prepares it for loss l.
func buildModel(t testing.TB, model func(*frontend.Builder), l Loss, opts ...frontend.Option) *Model {
	t.Helper()
	fwd, err := frontend.Build("m", model, opts...)
	if err != nil {
		t.Fatal(err)
	}
	fwdTrain, err := frontend.Build("m", model, append(opts, frontend.WithTraining())...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(fwd, fwdTrain, l)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// linearModel is y = x·Wᵀ + b for 3 inputs, a batch of 16.
func linearModel(b *frontend.Builder) {
	x := b.Input("x", ir.F32, 16, 3)
	b.Output("y", nn.NewLinear(b, "fc", 3, 1).Forward(x))
}

// mixtureModel is a small MLP for the three clusters of testdata/mixture.
func mixtureModel(b *frontend.Builder) {
	x := b.Input("x", ir.F32, 16, 2)
	fc1, fc2 := nn.NewLinear(b, "fc1", 2, 16), nn.NewLinear(b, "fc2", 16, 3)
	b.Output("logits", fc2.Forward(fc1.Forward(x).Relu()))
}

// A regression on a CSV file (f64 columns, one target column; the model's prediction is
// f32[16,1]) trained with MSELoss and SGD fits the noisy linear function to within its noise: the
// mean squared error on the data ends below the noise's variance (plus 5%).
func TestFitRegressionCSV(t *testing.T) {
	d, err := data.ReadCSVFile("testdata/linear.csv", "y")
	if err != nil {
		t.Fatal(err)
	}
	m := buildModel(t, linearModel, Loss{Name: MSELoss})
	var losses []float64
	res, err := Fit(m, FitOptions{Optimizer: NewSGD(0.05), Train: d, Test: d, Epochs: 8, Seed: 1,
		OnEpoch: func(e EpochEnd) error { losses = append(losses, e.Test.Loss); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	last := res.Epochs[len(res.Epochs)-1].Test
	t.Logf("test MSE by epoch %v; MAE %.4f", losses, last.MAE)
	if last.MSE > 1.05*noise*noise || math.Abs(last.Loss-last.MSE) > 1e-6 || !math.IsNaN(last.Accuracy) {
		t.Errorf("after %d epochs: %+v, want MSE (= the loss) ≤ %g", len(losses), *last, 1.05*noise*noise)
	}
	w := res.Params["fc.weight"].F
	for i, want := range []float64{2, -3, 0.5} {
		if math.Abs(w[i]-want) > 0.05 {
			t.Errorf("fc.weight[%d] = %.4f, want %g", i, w[i], want)
		}
	}
}

// A classifier on a directory of .npy files (x f32[N,2], y i64[N], test_x, test_y) reaches 99%
// test accuracy on the separable mixture.
func TestFitClassificationNPY(t *testing.T) {
	tr, te, err := data.ReadNPYDir("testdata/mixture")
	if err != nil {
		t.Fatal(err)
	}
	m := buildModel(t, mixtureModel, Loss{Name: CrossEntropyLoss})
	adam := NewAdam()
	adam.LR = 0.01
	res, err := Fit(m, FitOptions{Optimizer: adam, Train: tr, Test: te, Epochs: 5, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	last := res.Epochs[len(res.Epochs)-1]
	if last.Test.Accuracy < 0.99 || last.Test.Rows != 120 {
		t.Errorf("test %+v, want accuracy ≥ 99%% over 120 rows", *last.Test)
	}
}

// Callbacks see every step and epoch in order; ErrStop from OnEpoch ends training after that
// epoch without an error, from OnStep after that step (the epoch still ends with its
// evaluation and checkpoint); another error ends Fit with it.
func TestFitCallbacks(t *testing.T) {
	tr, te, err := data.ReadNPYDir("testdata/mixture")
	if err != nil {
		t.Fatal(err)
	}
	m := buildModel(t, mixtureModel, Loss{Name: CrossEntropyLoss})
	save := filepath.Join(t.TempDir(), "c.safetensors")
	var steps []int
	res, err := Fit(m, FitOptions{Optimizer: NewSGD(0.1), Train: tr, Test: te, Epochs: 5, Save: save,
		OnStep: func(s StepEnd) error {
			steps = append(steps, s.Step)
			if s.Index != (s.Step-1)%30 || s.Batches != 30 || s.Rows != 16 || s.Outputs[LogitsName] == nil {
				t.Errorf("step %+v", s)
			}
			return nil
		},
		OnEpoch: func(e EpochEnd) error {
			if e.Epoch == 2 {
				return ErrStop
			}
			return nil
		}})
	if err != nil || len(res.Epochs) != 2 || len(steps) != 60 || steps[59] != 60 {
		t.Fatalf("early stop: %v, %d epochs, %d steps", err, len(res.Epochs), len(steps))
	}
	step, err := m.Step(NewSGD(0.1), Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := step.Resume(save)
	if err != nil || c.Epoch != 2 || c.Steps != 60 {
		t.Fatalf("checkpoint after the stop: %+v, %v", c, err)
	}
	res, err = Fit(m, FitOptions{Optimizer: NewSGD(0.1), Train: tr, Epochs: 3,
		OnStep: func(s StepEnd) error {
			if s.Index == 4 {
				return ErrStop
			}
			return nil
		}})
	if err != nil || len(res.Epochs) != 1 || res.Epochs[0].Steps != 5 || res.Epochs[0].Test != nil {
		t.Fatalf("stop in a step: %v, %+v", err, res)
	}
	boom := errors.New("boom")
	if _, err := Fit(m, FitOptions{Optimizer: NewSGD(0.1), Train: tr, Epochs: 1,
		OnStep: func(StepEnd) error { return boom }}); !errors.Is(err, boom) {
		t.Errorf("error from OnStep: Fit returned %v", err)
	}
}

// mismatched is a user's Dataset that returns fewer targets than rows.
type mismatched struct{ n int }

func (m mismatched) Len() int { return m.n }
func (m mismatched) Rows(rows []int) (x, y *tensor.Tensor, err error) {
	return tensor.New(ir.T(ir.F32, len(rows), 2)), tensor.New(ir.T(ir.I64, len(rows)-1)), nil
}

// Bad data is one error naming the file and the row.
func TestFitBadData(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rows := func(n int, last string) string {
		s := "a,b,c,y\n"
		for range n {
			s += "1,2,3,4\n"
		}
		return s + last
	}
	tensors := func(x, y *tensor.Tensor) data.Dataset {
		d, err := data.NewTensors("xy", x, y)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	linear := buildModel(t, linearModel, Loss{Name: MSELoss})
	classes := buildModel(t, mixtureModel, Loss{Name: CrossEntropyLoss})
	for _, tc := range []struct {
		name string
		m    *Model
		data func() (data.Dataset, error)
		want string
	}{
		{"NaN target", linear, func() (data.Dataset, error) {
			return data.ReadCSVFile(write("nan.csv", rows(20, "1,2,3,NaN\n")), "y")
		}, "nan.csv:22: target is NaN; MSELoss cannot take NaN targets"},
		{"input columns", linear, func() (data.Dataset, error) {
			return data.ReadCSVFile(write("wide.csv", "a,b,c,d,y\n1,2,3,4,5\n"), "y")
		}, "wide.csv: a row's input is f64[4]; the model's input x is f32[16,3], which wants [3] per row"},
		{"label not a class", classes, func() (data.Dataset, error) {
			x, y := tensor.New(ir.T(ir.F32, 20, 2)), tensor.New(ir.T(ir.I64, 20))
			y.I[17] = 3
			return tensors(x, y), nil
		}, "xy: row 17: label 3, the model's logits have 3 classes"},
		{"huge label", classes, func() (data.Dataset, error) {
			return tensors(tensor.New(ir.T(ir.F32, 20, 2)), tensor.FromFloats(ir.T(ir.F64, 20), []float64{0, 1e30})), nil
		}, "xy: row 1: label 1e+30, the model's logits have 3 classes"},
		{"label 2^63", classes, func() (data.Dataset, error) {
			return tensors(tensor.New(ir.T(ir.F32, 20, 2)), tensor.FromFloats(ir.T(ir.F64, 20), []float64{0, 1, 2, 1 << 63})), nil
		}, "xy: row 3: label 9.223372036854776e+18, the model's logits have 3 classes"},
		{"fractional label", classes, func() (data.Dataset, error) {
			return tensors(tensor.New(ir.T(ir.F32, 20, 2)), tensor.FromFloats(ir.T(ir.F64, 20), []float64{0, 1, 1.5})), nil
		}, "xy: row 2: label 1.5 is not a class index"},
		{"float inputs of an int model", buildModel(t, func(b *frontend.Builder) {
			x := b.Input("x", ir.I64, 16, 2)
			b.Output("y", nn.NewLinear(b, "fc", 2, 1).Forward(x.Cast(ir.F32)))
		}, Loss{Name: L1Loss}), func() (data.Dataset, error) {
			return tensors(tensor.New(ir.T(ir.F32, 20, 2)), tensor.New(ir.T(ir.F32, 20))), nil
		}, "xy: the inputs are f32, the model's input x is i64[16,2]"},
		{"targets of another shape", linear, func() (data.Dataset, error) {
			return tensors(tensor.New(ir.T(ir.F32, 20, 3)), tensor.New(ir.T(ir.F32, 20, 2))), nil
		}, "xy: a row's target is f32[2], MSELoss wants one prediction y f32[16,1]"},
		{"rows and targets of different lengths", classes, func() (data.Dataset, error) {
			return mismatched{20}, nil
		}, "asked for 1 rows, returned inputs f32[1,2] and targets i64[0]"},
		{"too few rows", classes, func() (data.Dataset, error) {
			return tensors(tensor.New(ir.T(ir.F32, 5, 2)), tensor.New(ir.T(ir.I64, 5))), nil
		}, "5 training rows make no batch of 16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := tc.data()
			if err == nil {
				_, err = Fit(tc.m, FitOptions{Optimizer: NewSGD(0.1), Train: d, Epochs: 1})
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want one line containing %q", err, tc.want)
			}
		})
	}
}

// Every loss, with its arguments, trains: Fit builds its step (autodiff has a rule for every op
// the loss uses) and the test loss falls over three epochs.
func TestFitEveryLoss(t *testing.T) {
	tr, te, err := data.ReadNPYDir("testdata/mixture")
	if err != nil {
		t.Fatal(err)
	}
	csv, err := data.ReadCSVFile("testdata/linear.csv", "y")
	if err != nil {
		t.Fatal(err)
	}
	// binary targets for BCEWithLogitsLoss: one column per class, 1 for the point's class
	onehot := func(d *data.Tensors) data.Dataset {
		y := tensor.New(ir.T(ir.F32, d.Len(), 3))
		for i, c := range d.Y.I {
			y.F[3*i+int(c)] = 1
		}
		o, err := data.NewTensors(d.Name, d.X, y)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	logSoftmax := func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, 16, 2)
		fc1, fc2 := nn.NewLinear(b, "fc1", 2, 16), nn.NewLinear(b, "fc2", 16, 3)
		b.Output("logits", fc2.Forward(fc1.Forward(x).Relu()).LogSoftmax(1))
	}
	beta, zero, ignore := 0.5, 0.0, int64(2)
	for _, tc := range []struct {
		l           Loss
		model       func(*frontend.Builder)
		train, test data.Dataset
	}{
		{Loss{Name: CrossEntropyLoss, Weight: []float64{1, 2, 0.5}, IgnoreIndex: &ignore, LabelSmoothing: 0.1}, mixtureModel, tr, te},
		{Loss{Name: NLLLoss}, logSoftmax, tr, te},
		{Loss{Name: NLLLoss, Weight: []float64{0.5, 1, 2}}, logSoftmax, tr, te},
		{Loss{Name: BCEWithLogitsLoss}, mixtureModel, onehot(tr), onehot(te)},
		{Loss{Name: BCEWithLogitsLoss, PosWeight: []float64{2, 1, 0.5}}, mixtureModel, onehot(tr), onehot(te)},
		{Loss{Name: L1Loss}, linearModel, csv, csv},
		{Loss{Name: SmoothL1Loss}, linearModel, csv, csv},
		{Loss{Name: SmoothL1Loss, Beta: &beta}, linearModel, csv, csv},
		{Loss{Name: SmoothL1Loss, Beta: &zero}, linearModel, csv, csv},
	} {
		t.Run(tc.l.String(), func(t *testing.T) {
			m := buildModel(t, tc.model, tc.l)
			var losses []float64
			_, err := Fit(m, FitOptions{Optimizer: NewSGD(0.05), Train: tc.train, Test: tc.test, Epochs: 3, Seed: 3,
				OnEpoch: func(e EpochEnd) error { losses = append(losses, e.Test.Loss); return nil }})
			if err != nil {
				t.Fatal(err)
			}
			if !(losses[2] < losses[0]) {
				t.Errorf("test losses %v: not falling", losses)
			}
		})
	}
}

// Rows of other shapes with as many elements reach the model in its shapes: inputs f32[N] for a
// model taking f32[16,1], targets i32[N,1] as class indices i64[16], images [1,2,2] flattened.
func TestFitReshapes(t *testing.T) {
	n := 32
	x, y := tensor.New(ir.T(ir.F32, n)), tensor.New(ir.T(ir.F64, n))
	for i := range n {
		x.F[i], y.F[i] = float64(i)/2, 3*float64(i)/2
	}
	d, err := data.NewTensors("line", x, y)
	if err != nil {
		t.Fatal(err)
	}
	m := buildModel(t, func(b *frontend.Builder) {
		b.Output("y", nn.NewLinear(b, "fc", 1, 1).Forward(b.Input("x", ir.F32, 16, 1)))
	}, Loss{Name: MSELoss})
	if _, err := Fit(m, FitOptions{Optimizer: NewSGD(0.1), Train: d, Test: d, Epochs: 1}); err != nil {
		t.Fatal(err)
	}
	img, lab := tensor.New(ir.T(ir.F32, n, 1, 2, 2)), tensor.New(ir.T(ir.I32, n, 1))
	for i := range n {
		lab.I[i] = int64(i % 2)
		img.F[4*i+i%2] = 1
	}
	if d, err = data.NewTensors("images", img, lab); err != nil {
		t.Fatal(err)
	}
	m = buildModel(t, func(b *frontend.Builder) {
		b.Output("logits", nn.NewLinear(b, "fc", 4, 2).Forward(b.Input("x", ir.F32, 16, 4)))
	}, Loss{Name: CrossEntropyLoss})
	res, err := Fit(m, FitOptions{Optimizer: NewSGD(0.5), Train: d, Test: d, Epochs: 5})
	if err != nil {
		t.Fatal(err)
	}
	if acc := res.Epochs[4].Test.Accuracy; acc != 1 {
		t.Errorf("test accuracy %v, want 1", acc)
	}
}
