package linreg_test

import (
	"fmt"
	"log"
	"testing"

	"github.com/gcomp/gcomp/data"
	"github.com/gcomp/gcomp/examples/linreg"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/train"
)

// fit trains the model as the tutorial does: nn.MSELoss, optim.SGD(lr=0.01), on data/ (written
// by scripts/gendata: y = x·Wᵀ + b + ε, ε ~ N(0, 0.05²)).
func fit(epochs int, onEpoch func(train.EpochEnd) error) (*train.FitResult, error) {
	fwd, err := frontend.Build("linreg", linreg.Model)
	if err != nil {
		return nil, err
	}
	m, err := train.NewModel(fwd, fwd, train.Loss{Name: train.MSELoss})
	if err != nil {
		return nil, err
	}
	trainSet, testSet, err := data.ReadNPYDir("data")
	if err != nil {
		return nil, err
	}
	return train.Fit(m, train.FitOptions{Optimizer: train.NewSGD(0.01), Train: trainSet, Test: testSet, Epochs: epochs, OnEpoch: onEpoch})
}

// The regression learns the line: the test loss falls every epoch and ends within a few times
// the noise's variance (0.0025).
func TestTrainsAsTheTutorial(t *testing.T) {
	prev := 1e9
	res, err := fit(40, func(e train.EpochEnd) error {
		if e.Test.Loss >= prev {
			t.Errorf("epoch %d: test loss %.5f, not below the previous epoch's %.5f", e.Epoch, e.Test.Loss, prev)
		}
		prev = e.Test.Loss
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if last := res.Epochs[len(res.Epochs)-1].Test; last.MSE > 0.01 {
		t.Errorf("test MSE %.5f after 40 epochs, want ≤ 0.01", last.MSE)
	}
}

// The tutorial's loop, as a library call: print the loss every 10 epochs.
func Example_train() {
	_, err := fit(30, func(e train.EpochEnd) error {
		if e.Epoch%10 == 0 {
			fmt.Printf("epoch %d: train loss %.4f, test loss %.4f\n", e.Epoch, e.Train.Loss, e.Test.Loss)
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// epoch 10: train loss 0.4336, test loss 0.3375
	// epoch 20: train loss 0.0310, test loss 0.0266
	// epoch 30: train loss 0.0044, test loss 0.0049
}
