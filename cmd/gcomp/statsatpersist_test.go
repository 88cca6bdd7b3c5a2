package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
)

// --stats-at below the bound reports the kernels the build runs: the ResNet-style export's
// static build at batch 4 groups more kernels into persistent ones (5 kernels) than the build
// with dims, planned at batch 8, does (7); the report at 4 has the build's 7, each costing less
// than at the bound.
func TestBuildStatsAtPersistent(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "frontend", "onnx", "suite", "testdata", "dynamic"))
	if err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "resnet_dyn_opset13.onnx")
	t.Chdir(t.TempDir())
	report := func(args ...string) map[string]any {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := Main(append([]string{"build", model, "-o", "m.ptx", "--stats=json"}, args...), &stdout, &stderr); code != 0 {
			t.Fatalf("build %v: %s", args, stderr.String())
		}
		var r map[string]any
		if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	static4 := report("--shape", "x=4x3x32x32")
	static8 := report("--shape", "x=8x3x32x32")
	r := report("--max-shape", "x=8x3x32x32", "--stats-at", "batch=4")
	bound, at := r["bound"].(map[string]any)["stats"].(map[string]any), r["at"].(map[string]any)["stats"].(map[string]any)
	if static4["kernels"].(float64) >= static8["kernels"].(float64) {
		t.Fatalf("the static builds have %v kernels at 4 and %v at 8: the test needs fewer at 4", static4["kernels"], static8["kernels"])
	}
	if bound["kernels"] != static8["kernels"] || bound["modeled_time_us"] != static8["modeled_time_us"] {
		t.Errorf("at the bound: %v kernels, %v µs; the static build at 8: %v, %v", bound["kernels"], bound["modeled_time_us"], static8["kernels"], static8["modeled_time_us"])
	}
	if at["kernels"] != bound["kernels"] {
		t.Errorf("at batch 4: %v kernels, the build runs %v", at["kernels"], bound["kernels"])
	}
	for _, k := range []string{"dram_bytes", "modeled_kernel_time_us", "modeled_graph_time_us"} {
		if a, b := at[k].(float64), bound[k].(float64); !(a < b) {
			t.Errorf("%s at batch 4 is %v, at the bound %v", k, a, b)
		}
	}
}
