//go:build gpu

// The CLI's part of the GPU suite (go test -tags gpu ./...): gcomp run on cuda:0 with --bench,
// compared with the reference interpreter. Without a driver library or a GPU it skips.

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/runtime/device"
)

func TestGPURunBench(t *testing.T) {
	if r := device.Probe(device.Options{}); !r.Usable() {
		t.Skip(r.Reason)
	}
	model, err := filepath.Abs("../../examples/mlp/model.go")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	var out, errOut bytes.Buffer
	if code := Main([]string{"run", model, "--device", "ref", "--output-dir", "ref"}, &out, &errOut); code != 0 {
		t.Fatal(errOut.String())
	}
	out.Reset()
	if code := Main([]string{"run", model, "--device", "cuda:0", "--bench", "5", "--output-dir", "gpu"}, &out, &errOut); code != 0 {
		t.Fatal(errOut.String())
	}
	t.Log(out.String())
	if !strings.Contains(out.String(), "5 runs after 1 warm-up (kernel times from CUDA events)") || !strings.Contains(out.String(), "per run (with copies)") {
		t.Errorf("--bench output:\n%s", out.String())
	}
	if o := check.Compare("y", readNPY(t, "gpu/y.npy"), readNPY(t, "ref/y.npy"), false); !o.Pass() {
		t.Errorf("cuda:0 differs from the reference: %d bad, first %s", o.Bad, o.First)
	}
}

// TestGPUTrainPrefetch trains two epochs on cuda:0 with and without --prefetch: the checkpoints
// are the same bit for bit (gcomp's kernels are deterministic). The summaries, with images/s, are
// logged.
func TestGPUTrainPrefetch(t *testing.T) {
	if r := device.Probe(device.Options{}); !r.Usable() {
		t.Skip(r.Reason)
	}
	data := trainFixture(t)
	var ckpt [2][]byte
	for i, prefetch := range []string{"--prefetch=false", "--prefetch=true"} {
		out, _ := runTrain(t, "tiny.go", "--data", data, "--device", "cuda:0", "--epochs", "2", prefetch, "--save", "gpu.safetensors")
		t.Logf("%s:\n%s", prefetch, out)
		var err error
		if ckpt[i], err = os.ReadFile("gpu.safetensors"); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(ckpt[0], ckpt[1]) {
		t.Errorf("the checkpoint with --prefetch differs from the one without")
	}
}
