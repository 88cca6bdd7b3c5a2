// Package train trains models: it compiles a training step into one graph — forward, backward
// (package passes/autodiff) and the optimizer update, with optional mixed precision and dynamic
// loss scaling — so that a device runs a whole step as one artifact, and Fit runs the epochs.
//
// Fit is the training loop of `gcomp train` as a library call, for any model, loss, dataset
// and device:
//
//	m, err := train.NewModel(fwd, fwdTrain, train.Loss{Name: train.MSELoss})
//	res, err := train.Fit(m, train.FitOptions{Optimizer: train.NewSGD(0.01),
//		Train: trainSet, Test: testSet, Epochs: 30,
//		OnEpoch: func(e train.EpochEnd) error { fmt.Println(e.Epoch, e.Test.MSE); return nil }})
//
// NewModel adds a Loss (PyTorch's losses by their torch.nn names and arguments) to the model
// built in training and in eval mode. Fit checks every row of the data.Dataset values against
// the model, then each epoch runs a step per batch (the next batch prepared while a step runs),
// evaluates the test set, writes the checkpoint and calls the callbacks; a callback returning
// ErrStop stops early. FitOptions.Device runs the compiled step (nil: the reference
// interpreter).
//
// Underneath, the step graph takes the batch and the state as inputs and the model's parameters
// as parameters, and returns the loss, the updated parameters ("new.<name>") and the updated
// state; StateBindings says which output replaces which input at the next step. RefTrainer and
// RunRef run steps on the reference interpreter. docs/training.md describes the formulas and
// conventions.
package train
