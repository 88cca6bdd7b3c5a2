package main

import (
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
