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

// A BatchNorm CNN over a symbolic batch (a trained convolution, BatchNorm, max pooling, dropout,
// a linear layer) trains with one step artifact: Fit runs 45 images in batches of 16 as steps of
// 16, 16 and 13 on the memchecked simulator, the convolution's weight gradient folding each
// step's batch and dropout's mask the reference's for each row, and ends with the reference
// interpreter's weights and BatchNorm statistics, within tolerance.
func TestFitSymbolicBatchConv(t *testing.T) {
	const rows, batch = 45, 16
	x, y := make([]float64, rows*36), make([]float64, rows)
	for i := range rows {
		y[i] = float64(i % 3)
		for j := range 36 {
			x[i*36+j] = float64((i*7+j*(i%3+1))%11)/10 - 0.5
		}
	}
	model := func(b *frontend.Builder) {
		in := b.Input("x", ir.F32, b.Batch(batch), 1, 6, 6)
		h := nn.NewConv2d(b, "conv", 1, 4, 3, nn.Conv2dOptions{Padding: 1, NoBias: true}).Forward(in)
		h = nn.MaxPool2d{KernelSize: 2, Stride: 2}.Forward(nn.NewBatchNorm2d(b, "bn", 4).Forward(h).Relu())
		h = nn.Dropout{P: 0.25}.Forward(nn.Flatten{StartDim: 1, EndDim: -1}.Forward(h))
		b.Output("logits", nn.NewLinear(b, "fc", 36, 3).Forward(h))
	}
	m := buildModel(t, model, Loss{Name: CrossEntropyLoss}, frontend.WithMaxBatch(batch))
	d, err := data.NewTensors("d", tensor.FromFloats(ir.T(ir.F32, rows, 1, 6, 6), x), tensor.FromFloats(ir.T(ir.I64, rows), y))
	if err != nil {
		t.Fatal(err)
	}
	fit := func(dev *simdev.Device) (*FitResult, []int) {
		var got []int
		o := FitOptions{Optimizer: &SGD{LR: 0.05, Momentum: 0.9}, Train: d, Test: d, Epochs: 2, Seed: 4,
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
}
