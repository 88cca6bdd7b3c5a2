package main

import (
	"bytes"
	"os"
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

// The compiled step computes the scheduled rate (f64 floor, pow and cos in PTX), and onecycle's
// cycled beta1, as the reference interpreter does: two epochs on the simulator end with the
// reference's weights and state.
func TestTrainScheduleSimMatchesRef(t *testing.T) {
	data := trainFixture(t)
	for _, sched := range [][]string{
		{"--lr-schedule", "step", "--lr-step-size", "1", "--lr-gamma", "0.5"},
		{"--lr-schedule", "cosine", "--lr-min", "1e-4"},
		{"--lr-schedule", "onecycle"},
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

// --lr-schedule onecycle is OneCycleLR with PyTorch's defaults over the run's batches (2 epochs
// of 2 here), on one device and data-parallel; resuming continues it, and a resumed run that
// would step past its total_steps is refused before it trains.
func TestTrainOneCycle(t *testing.T) {
	data := trainFixture(t)
	const want = "onecycle total_steps=4 pct_start=0.3 div_factor=25 final_div_factor=10000 cycle_momentum=true base_momentum=0.85 max_momentum=0.95"
	for _, dev := range []string{"ref", "sim:0,sim:1"} {
		_, stderr := runTrain(t, "batched.go", "--data", data, "--device", dev, "--batch", "16", "--limit", "32", "--optimizer", "sgd", "--lr", "0.1", "--lr-schedule", "onecycle", "--epochs", "2", "--save", "one.safetensors")
		if !strings.Contains(stderr, "lr schedule "+want) {
			t.Errorf("%s: stderr does not name the schedule:\n%s", dev, stderr)
		}
		_, meta, err := tensorio.ReadSafetensorsFile("one.safetensors")
		if err != nil {
			t.Fatal(err)
		}
		if got := meta[train.MetaSchedule]; got != want {
			t.Errorf("%s: checkpoint's schedule %q, want %q", dev, got, want)
		}
		var out, errb bytes.Buffer
		code := Main([]string{"train", "batched.go", "--data", data, "--device", dev, "--batch", "16", "--limit", "32", "--optimizer", "sgd", "--lr", "0.1", "--epochs", "1", "--resume", "one.safetensors", "--save", "more.safetensors"}, &out, &errb)
		msg := strings.TrimSpace(errb.String())
		if code != 1 || !strings.Contains(msg, "lr schedule onecycle of 4 steps: this run would end at step 6") || strings.Contains(msg, "\n") {
			t.Errorf("%s: resuming past total_steps: exit %d, stderr %q", dev, code, msg)
		}
		if _, err := os.Stat("more.safetensors"); err == nil {
			t.Errorf("%s: a refused run wrote its checkpoint", dev)
		}
	}
}
