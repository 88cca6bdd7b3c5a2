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
