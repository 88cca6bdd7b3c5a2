//go:build gpu

package main

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"
)

// TestGPURunParallel splits a batch over cuda:0 and cuda:1 and compares the outputs with cuda:0's
// alone, bit for bit (the same kernels at half the batch). It needs two GPUs; with fewer it skips.
func TestGPURunParallel(t *testing.T) {
	twoGPUs(t, "splitting the batch")
	model, err := filepath.Abs("../../examples/mlp/model.go")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	run := func(args ...string) {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := Main(append([]string{"run", model, "--batch", "64", "--seed", "3"}, args...), &out, &errOut); code != 0 {
			t.Fatal(errOut.String())
		}
	}
	run("--device", "cuda:0", "--output-dir", "one", "--save-inputs")
	run("--device", "cuda:0,cuda:1", "--output-dir", "two", "--input", "x=one/inputs/x.npy")
	if one, two := readNPY(t, "one/y.npy"), readNPY(t, "two/y.npy"); !two.Type.Equal(one.Type) || !slices.Equal(one.F, two.F) {
		t.Error("cuda:0,cuda:1 differs from cuda:0 alone")
	}
}
