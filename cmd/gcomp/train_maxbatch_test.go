package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// batchedRegression is a linear regression whose batch the model declares with b.Batch.
const batchedRegression = `package breg

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
)

func Model(b *frontend.Builder) {
	x := b.Input("x", ir.F32, b.Batch(16), 3)
	b.Output("y", nn.NewLinear(b, "fc", 3, 1).Forward(x))
}
`

// gcomp train --max-batch 16 on 45 rows runs three steps per epoch, the last of 13 rows, with one
// build, on the simulator and on the reference interpreter alike (the same loss printed); misuse
// is one error, exit status 1, nothing written.
func TestTrainMaxBatch(t *testing.T) {
	td := ownDataFixture(t)
	if err := os.WriteFile("breg.go", []byte(batchedRegression), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"breg.go", "--data", "csv:" + filepath.Join(td, "linear.csv"), "--target", "y", "--loss", "MSELoss", "--limit", "45",
		"--optimizer", "sgd", "--lr", "0.05", "--epochs", "2", "--max-batch", "16"}
	var losses []string
	for _, dev := range []string{"sim", "ref"} {
		out, errOut := runTrain(t, append(args, "--device", dev, "--save", dev+".safetensors")...)
		if !strings.Contains(errOut, "45 training rows, 3 steps of 16 per epoch") {
			t.Errorf("%s: stderr %q, want 45 rows in 3 steps", dev, errOut)
		}
		i := strings.Index(out, "epoch 2/2: train loss ")
		if i < 0 {
			t.Fatalf("%s printed %q", dev, out)
		}
		losses = append(losses, out[i:i+len("epoch 2/2: train loss 0.00")])
	}
	if losses[0] != losses[1] {
		t.Errorf("the simulator printed %q, the reference %q", losses[0], losses[1])
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-batch", "16", "--batch", "8"}, "--max-batch 16: want at least 1, without --batch"},
		{[]string{"--max-batch", "-1"}, "--max-batch -1: want at least 1, without --batch"},
	} {
		var out, errb bytes.Buffer
		code := Main(append(append([]string{"train"}, args[:len(args)-2]...), append(tc.args, "--device", "ref", "--save", "bad.safetensors")...), &out, &errb)
		if code != 1 || !strings.Contains(errb.String(), tc.want) || strings.Count(strings.TrimSpace(errb.String()), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want %q", tc.args, code, errb.String(), tc.want)
		}
		if _, err := os.Stat("bad.safetensors"); err == nil {
			t.Errorf("%v: wrote bad.safetensors", tc.args)
		}
	}
}

// batchedMixture is the mixture classifier whose batch the model declares with b.Batch.
const batchedMixture = `package bmix

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
)

func Model(b *frontend.Builder) {
	x := b.Input("x", ir.F32, b.Batch(16), 2)
	fc1, fc2 := nn.NewLinear(b, "fc1", 2, 16), nn.NewLinear(b, "fc2", 16, 3)
	b.Output("logits", fc2.Forward(fc1.Forward(x).Relu()))
}
`

// gcomp train --max-batch 16 trains a classifier with class weights, an ignored label and label
// smoothing on 45 rows in three steps per epoch, the last of 13 rows, with one build: on the
// simulator, and data-parallel on two simulated GPUs (each rank's step over a batch in [1, 8],
// the last batch split 6 and 7), to the checkpoint and the losses the reference interpreter
// trains. A --max-batch the ranks do not divide is one error.
func TestTrainMaxBatchClassLoss(t *testing.T) {
	td := ownDataFixture(t)
	if err := os.WriteFile("bmix.go", []byte(batchedMixture), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"bmix.go", "--data", "npy:" + filepath.Join(td, "mixture"), "--limit", "45", "--class-weights", "1,2,0.5", "--ignore-index", "2",
		"--label-smoothing", "0.1", "--optimizer", "sgd", "--lr", "0.05", "--epochs", "2", "--max-batch", "16"}
	want, _ := runTrain(t, append(args, "--device", "ref", "--save", "ref.safetensors")...)
	for _, tc := range []struct{ dev, steps string }{
		{"sim", "45 training rows, 3 steps of 16 per epoch"},
		{"sim:0,sim:1", "45 training rows, 3 steps of 16 (8 per rank) per epoch"},
	} {
		save := strings.ReplaceAll(tc.dev, ":", "") + ".safetensors"
		out, errOut := runTrain(t, append(args, "--device", tc.dev, "--save", save)...)
		if !strings.Contains(errOut, tc.steps) {
			t.Errorf("%s: stderr %q, want %q", tc.dev, errOut, tc.steps)
		}
		if epochLines(out) != epochLines(want) {
			t.Errorf("%s printed\n%s\nthe reference\n%s", tc.dev, out, want)
		}
		sameCheckpoint(t, save, "ref.safetensors")
	}
	var out, errb bytes.Buffer
	code := Main(append(append([]string{"train"}, args...), "--device", "sim:0,sim:1,sim:2", "--save", "bad.safetensors"), &out, &errb)
	if want := "--max-batch 16 does not split evenly over 3 ranks"; code != 1 || !strings.Contains(errb.String(), want) {
		t.Errorf("3 ranks: exit %d, stderr %q; want %q", code, errb.String(), want)
	}
	if _, err := os.Stat("bad.safetensors"); err == nil {
		t.Errorf("3 ranks: wrote bad.safetensors")
	}
}
