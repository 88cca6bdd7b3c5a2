package train_test

import (
	"fmt"
	"log"

	"github.com/gcomp/gcomp/data"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/train"
)

// Fit trains a classifier on a directory of .npy files (x.npy, y.npy, test_x.npy, test_y.npy)
// on the reference interpreter, printing the test metrics after every epoch.
func ExampleFit() {
	model := func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, 16, 2)
		fc1, fc2 := nn.NewLinear(b, "fc1", 2, 16), nn.NewLinear(b, "fc2", 16, 3)
		b.Output("logits", fc2.Forward(fc1.Forward(x).Relu()))
	}
	fwd, err := frontend.Build("mix", model)
	if err != nil {
		log.Fatal(err)
	}
	fwdTrain, err := frontend.Build("mix", model, frontend.WithTraining())
	if err != nil {
		log.Fatal(err)
	}
	m, err := train.NewModel(fwd, fwdTrain, train.Loss{Name: train.CrossEntropyLoss})
	if err != nil {
		log.Fatal(err)
	}
	trainSet, testSet, err := data.ReadNPYDir("testdata/mixture")
	if err != nil {
		log.Fatal(err)
	}
	_, err = train.Fit(m, train.FitOptions{
		Optimizer: train.NewSGD(0.1),
		Train:     trainSet,
		Test:      testSet,
		Epochs:    3,
		OnEpoch: func(e train.EpochEnd) error {
			fmt.Printf("epoch %d: test loss %.3f, accuracy %.1f%%\n", e.Epoch, e.Test.Loss, 100*e.Test.Accuracy)
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// epoch 1: test loss 0.040, accuracy 100.0%
	// epoch 2: test loss 0.017, accuracy 100.0%
	// epoch 3: test loss 0.011, accuracy 100.0%
}

// line is a user's Dataset: y = 2x + 1 at n points in [0, 1), computed when the loader asks.
type line struct{ n int }

func (l line) Len() int { return l.n }

func (l line) Rows(rows []int) (x, y *tensor.Tensor, err error) {
	x, y = tensor.New(ir.T(ir.F32, len(rows), 1)), tensor.New(ir.T(ir.F32, len(rows), 1))
	for k, r := range rows {
		v := tensor.RoundFloat(ir.F32, float64(r)/float64(l.n))
		x.F[k], y.F[k] = v, tensor.RoundFloat(ir.F32, 2*v+1)
	}
	return x, y, nil
}

// Fit trains a regression with MSELoss and SGD on a Dataset the program implements, and stops
// early once the loss is small: OnEpoch returns ErrStop.
func ExampleFit_earlyStop() {
	model := func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, 8, 1)
		b.Output("y", nn.NewLinear(b, "fc", 1, 1).Forward(x))
	}
	fwd, err := frontend.Build("line", model)
	if err != nil {
		log.Fatal(err)
	}
	m, err := train.NewModel(fwd, fwd, train.Loss{Name: train.MSELoss})
	if err != nil {
		log.Fatal(err)
	}
	res, err := train.Fit(m, train.FitOptions{
		Optimizer: train.NewSGD(0.3),
		Train:     line{64},
		Epochs:    100,
		Seed:      1,
		OnEpoch: func(e train.EpochEnd) error {
			if e.Train.MSE < 1e-4 {
				return train.ErrStop
			}
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	w, b := res.Params["fc.weight"].F[0], res.Params["fc.bias"].F[0]
	fmt.Printf("stopped after %d epochs: y = %.2fx + %.2f\n", len(res.Epochs), w, b)
	// Output:
	// stopped after 13 epochs: y = 1.98x + 1.01
}
