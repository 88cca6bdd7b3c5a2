package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// gcomp train --max-batch 4 trains the BatchNorm CNN example (two trained convolutions, each
// with BatchNorm, and dropout) on 10 images in three steps per epoch, the last of 2 images, with
// one build: the convolutions' weight gradients fold the run's batch, and dropout's mask is the
// reference's for each row. The simulator prints the reference interpreter's losses and saves
// its checkpoint, within tolerance.
func TestTrainMaxBatchBNCNN(t *testing.T) {
	model, err := filepath.Abs(filepath.Join("..", "..", "examples", "fashion", "bncnn", "model.go"))
	if err != nil {
		t.Fatal(err)
	}
	data := trainFixture(t) // changes to a fresh directory
	args := []string{model, "--data", data, "--limit", "10", "--max-batch", "4", "--epochs", "1", "--optimizer", "sgd", "--lr", "0.05"}
	want, _ := runTrain(t, append(args, "--device", "ref", "--save", "ref.safetensors")...)
	out, errOut := runTrain(t, append(args, "--device", "sim", "--save", "sim.safetensors")...)
	if steps := "10 training images, 3 steps of 4 per epoch"; !strings.Contains(errOut, steps) {
		t.Errorf("stderr %q, want %q", errOut, steps)
	}
	if epochLines(out) != epochLines(want) {
		t.Errorf("the simulator printed\n%s\nthe reference\n%s", out, want)
	}
	sameCheckpoint(t, "sim.safetensors", "ref.safetensors")
}

// epochLines is gcomp train's output without the epoch lines' timings.
func epochLines(s string) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if i := strings.LastIndex(l, " ("); i > 0 {
			l = l[:i]
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}
