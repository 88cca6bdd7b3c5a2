//go:build gpu

package main

import (
	"testing"

	"github.com/gcomp/gcomp/runtime/device"
	"github.com/gcomp/gcomp/runtime/nccl"
)

// TestGPUTrainParallel trains on cuda:0,cuda:1 over NCCL (and on cuda:all) at global batch 16 and
// compares the checkpoint with cuda:0's alone at batch 16, within the f32 tolerance. It needs two
// GPUs and NCCL: with fewer GPUs or no libnccl.so.2 it skips; once both are there a failure fails.
func TestGPUTrainParallel(t *testing.T) {
	r := twoGPUs(t, "data-parallel training")
	if _, err := nccl.Load(""); err != nil {
		t.Skip(err)
	}
	data := trainFixture(t)
	common := []string{"batched.go", "--data", data, "--optimizer", "adam", "--lr", "0.01", "--batch", "16", "--epochs", "2"}
	runTrain(t, append(common, "--device", "cuda:0", "--save", "one.safetensors")...)
	runTrain(t, append(common, "--device", "cuda:0,cuda:1", "--save", "two.safetensors")...)
	sameCheckpoint(t, "two.safetensors", "one.safetensors")
	if len(r.GPUs) == 2 || len(r.GPUs) == 4 || len(r.GPUs) == 8 || len(r.GPUs) == 16 {
		runTrain(t, append(common, "--device", "cuda:all", "--save", "all.safetensors")...)
		sameCheckpoint(t, "all.safetensors", "one.safetensors")
	}
}

// twoGPUs skips the test, which does what, unless the driver sees at least two GPUs.
func twoGPUs(t *testing.T, what string) *device.Report {
	t.Helper()
	r := device.Probe(device.Options{})
	if !r.Usable() {
		t.Skip(r.Reason)
	}
	if len(r.GPUs) < 2 {
		t.Skipf("%d GPU; %s needs two", len(r.GPUs), what)
	}
	return r
}
