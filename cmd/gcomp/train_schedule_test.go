package main

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/tensorio"
	"github.com/gcomp/gcomp/train"
)

// --lr-schedule cosine spans the run's batches (T_max = epochs × batches, 4 of 16 per epoch
// here), and --resume continues the checkpoint's schedule.
func TestTrainScheduleResumes(t *testing.T) {
	data := trainFixture(t)
	common := []string{"tiny.go", "--data", data, "--device", "ref", "--optimizer", "adam"}
	runTrain(t, append(common, "--epochs", "2", "--lr-schedule", "cosine", "--lr-min", "1e-5", "--save", "one.safetensors")...)
	runTrain(t, append(common, "--epochs", "1", "--resume", "one.safetensors", "--save", "resumed.safetensors")...)
	for _, f := range []string{"one.safetensors", "resumed.safetensors"} {
		_, meta, err := tensorio.ReadSafetensorsFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := meta[train.MetaSchedule], "cosine T_max=8 eta_min=1e-05"; got != want {
			t.Errorf("%s: schedule %q, want %q", f, got, want)
		}
	}
}

// The compiled step computes the scheduled rate (f64 floor, pow and cos in PTX) as the reference
// interpreter does: two epochs on the simulator end with the reference's weights and state.
func TestTrainScheduleSimMatchesRef(t *testing.T) {
	data := trainFixture(t)
	for _, sched := range [][]string{
		{"--lr-schedule", "step", "--lr-step-size", "1", "--lr-gamma", "0.5"},
		{"--lr-schedule", "cosine", "--lr-min", "1e-4"},
	} {
		t.Run(sched[1], func(t *testing.T) {
			ckpt := map[string]map[string]*tensorio.Array{}
			for _, dev := range []string{"ref", "sim"} {
				args := append([]string{"tiny.go", "--data", data, "--device", dev, "--optimizer", "adam", "--lr", "0.01", "--epochs", "2", "--save", dev + ".safetensors"}, sched...)
				runTrain(t, args...)
				a, _, err := tensorio.ReadSafetensorsFile(dev + ".safetensors")
				if err != nil {
					t.Fatal(err)
				}
				ckpt[dev] = a
			}
			compareCheckpoints(t, ckpt["sim"], ckpt["ref"])
		})
	}
}

// Data-parallel training schedules the rate by the global step: two simulated GPUs at global
// batch 16 under --lr-schedule cosine train the checkpoint one device trains at batch 16 (T_max
// = 2 epochs × 2 global steps), and resumed for a third epoch both continue the checkpoint's
// schedule to the same weights.
func TestTrainScheduleParallel(t *testing.T) {
	data := trainFixture(t)
	common := []string{"batched.go", "--data", data, "--optimizer", "sgd", "--lr", "0.1", "--momentum", "0.9", "--batch", "16", "--limit", "32"}
	sched := []string{"--lr-schedule", "cosine", "--lr-min", "1e-3"}
	runTrain(t, append(append(common, sched...), "--device", "ref", "--epochs", "2", "--save", "one.safetensors")...)
	_, stderr := runTrain(t, append(append(common, sched...), "--device", "sim:0,sim:1", "--epochs", "2", "--save", "two.safetensors")...)
	if want := "lr schedule cosine T_max=4 eta_min=0.001"; !strings.Contains(stderr, want) {
		t.Errorf("stderr does not say %q:\n%s", want, stderr)
	}
	sameCheckpoint(t, "two.safetensors", "one.safetensors")
	_, meta, err := tensorio.ReadSafetensorsFile("two.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := meta[train.MetaSchedule], "cosine T_max=4 eta_min=0.001"; got != want {
		t.Errorf("checkpoint's schedule %q, want %q", got, want)
	}
	runTrain(t, append(common, "--device", "ref", "--epochs", "1", "--resume", "one.safetensors", "--save", "one3.safetensors")...)
	runTrain(t, append(common, "--device", "sim:0,sim:1", "--epochs", "1", "--resume", "two.safetensors", "--save", "two3.safetensors")...)
	sameCheckpoint(t, "two3.safetensors", "one3.safetensors")
}
