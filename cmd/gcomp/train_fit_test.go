package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/data"
	"github.com/gcomp/gcomp/examples/fashion/cnn"
	"github.com/gcomp/gcomp/examples/fashion/mlp"
	"github.com/gcomp/gcomp/examples/linreg"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/train"
)

// The library trains the MLP, CNN and linreg examples, built as compiled Go, to the same losses
// and the same checkpoint, bit for bit, as gcomp train (which loads them through the
// interpreter) on the reference device: two epochs each, the classifiers on the fixture images,
// linreg on its .npy data with MSELoss and SGD as the tutorial trains it.
func TestTrainMatchesFit(t *testing.T) {
	fixture, err := filepath.Abs(filepath.Join("..", "..", "data", "testdata", "mnist"))
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		dir   string // the model's directory under examples
		model func(*frontend.Builder)
		args  []string
		data  func() (data.Dataset, data.Dataset, error)
		loss  train.Loss
		opt   func() train.Optimizer
	}{
		{"mlp", "fashion/mlp", mlp.Model, []string{"--data", "mnist:" + fixture, "--optimizer", "adam", "--lr", "0.01"},
			func() (data.Dataset, data.Dataset, error) { tr, te, err := data.LoadMNIST(fixture); return tr, te, err },
			train.Loss{Name: train.CrossEntropyLoss}, func() train.Optimizer { o := train.NewAdam(); o.LR = 0.01; return o }},
		{"cnn", "fashion/cnn", cnn.Model, []string{"--data", "mnist:" + fixture, "--optimizer", "sgd", "--lr", "0.05"},
			func() (data.Dataset, data.Dataset, error) { tr, te, err := data.LoadMNIST(fixture); return tr, te, err },
			train.Loss{Name: train.CrossEntropyLoss}, func() train.Optimizer { return train.NewSGD(0.05) }},
		{"linreg", "linreg", linreg.Model, []string{"--data", "npy:" + filepath.Join(root, "examples", "linreg", "data"), "--loss", "MSELoss", "--optimizer", "sgd", "--lr", "0.01"},
			func() (data.Dataset, data.Dataset, error) {
				tr, te, err := data.ReadNPYDir(filepath.Join(root, "examples", "linreg", "data"))
				return tr, te, err
			},
			train.Loss{Name: train.MSELoss}, func() train.Optimizer { return train.NewSGD(0.01) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.name == "cnn" {
				t.Skip("-short: the CNN takes a while on the reference interpreter")
			}
			t.Chdir(t.TempDir())
			model := filepath.Join(root, "examples", tc.dir, "model.go")
			stdout, _ := runTrain(t, append([]string{model, "--device", "ref", "--epochs", "2", "--seed", "4", "--save", "cli.safetensors"}, tc.args...)...)

			fwd, err := frontend.Build(tc.name, tc.model)
			if err != nil {
				t.Fatal(err)
			}
			fwdTrain, err := frontend.Build(tc.name, tc.model, frontend.WithTraining())
			if err != nil {
				t.Fatal(err)
			}
			m, err := train.NewModel(fwd, fwdTrain, tc.loss)
			if err != nil {
				t.Fatal(err)
			}
			tr, te, err := tc.data()
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			_, err = train.Fit(m, train.FitOptions{Optimizer: tc.opt(), Train: tr, Test: te, Epochs: 2, Seed: 4, Save: "lib.safetensors",
				OnEpoch: func(e train.EpochEnd) error {
					lines = append(lines, fmt.Sprintf("epoch %d/%d: train loss %.4f%s, test loss %.4f%s", e.Epoch, e.LastEpoch,
						e.Train.Loss, describeMetrics("train", e.Train), e.Test.Loss, describeMetrics("test", *e.Test)))
					return nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			for i, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
				if i >= len(lines) || !strings.HasPrefix(l, lines[i]+" (") {
					t.Errorf("gcomp train printed %q, the library's epoch %d is %q", l, i+1, lines)
				}
			}
			cli, err1 := os.ReadFile("cli.safetensors")
			lib, err2 := os.ReadFile("lib.safetensors")
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if !bytes.Equal(cli, lib) {
				t.Errorf("the library's checkpoint differs from gcomp train's")
			}
		})
	}
}
