package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
)

// gcomp build --specialize batch=4 and --specialize auto build the ResNet-style export with a
// variant for batches 1..4 beside the bound's build; gcomp run runs each at batches 1, 3 and 8 on
// the simulator, equal to PyTorch's outputs. --stats-at names the variant a size runs, and costs
// its kernels: at batch 4, the static build's 5 kernels and modeled time; gcomp check names it.
func TestBuildSpecialize(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "frontend", "onnx", "suite", "testdata", "dynamic"))
	if err != nil {
		t.Fatal(err)
	}
	resnet := filepath.Join(dir, "resnet_dyn_opset13.onnx")
	t.Chdir(t.TempDir())
	var stdout, stderr bytes.Buffer
	main := func(args ...string) {
		t.Helper()
		stdout.Reset()
		if code := Main(args, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: %s", args, stderr.String())
		}
	}
	main("init-weights", resnet, "--max-shape", "x=8x3x32x32", "-o", "w.safetensors")
	for _, spec := range []string{"batch=4", "auto"} {
		main("build", resnet, "--max-shape", "x=8x3x32x32", "--specialize", spec, "-o", "m.ptx")
		a, err := artifact.Read("m.ptx")
		if err != nil {
			t.Fatal(err)
		}
		p := a.Plan
		if p.Version != artifact.VariantsVersion || len(p.Variants) != 1 || artifact.RangesString(p.Variants[0].Ranges) != "batch in [1,4]" ||
			artifact.RangesString(p.OwnRanges) != "batch in [5,8]" || len(p.Variants[0].Kernels) != 5 || len(p.Kernels) != 7 {
			t.Fatalf("--specialize %s: version %d, %d variants, own ranges %v", spec, p.Version, len(p.Variants), p.OwnRanges)
		}
		if auto := strings.HasPrefix(p.Variants[0].Note, "auto: "); auto != (spec == "auto") {
			t.Errorf("--specialize %s: note %q", spec, p.Variants[0].Note)
		}
		for _, n := range []int{1, 3, 8} {
			sub, out := fmt.Sprintf("resnet_dyn_size%d", n), fmt.Sprintf("o%d", n)
			main("run", "m.ptx", "--device", "sim", "--weights", "w.safetensors", "--input", "x="+filepath.Join(dir, sub, "x.npy"), "--output-dir", out)
			got, want := readNPY(t, filepath.Join(out, "y.npy")), readNPY(t, filepath.Join(dir, sub, "y.npy"))
			rel, _ := tolerance.Tolerance(ir.F32, false, 0)
			abs := tolerance.OutputFloor(rel, want.F)
			if !got.Type.Equal(want.Type) {
				t.Fatalf("--specialize %s at %d: y is %s, PyTorch's %s", spec, n, got.Type, want.Type)
			}
			for i := range want.F {
				if !tolerance.Within(got.F[i], want.F[i], rel, abs) {
					t.Fatalf("--specialize %s at %d: y[%d] = %v, PyTorch %v", spec, n, i, got.F[i], want.F[i])
				}
			}
		}
	}
	// gcomp check names the variant its run took.
	main("check", "m.ptx", "--weights", "w.safetensors", "--input", "x="+filepath.Join(dir, "resnet_dyn_size1", "x.npy"))
	if !strings.Contains(stdout.String(), "5 kernels (the variant for batch in [1,4])") {
		t.Errorf("gcomp check at batch 1:\n%s", stdout.String())
	}
	report := func(args ...string) map[string]any {
		t.Helper()
		main(append([]string{"build", resnet, "-o", "r.ptx", "--stats=json"}, args...)...)
		var r map[string]any
		if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	static4 := report("--shape", "x=4x3x32x32")
	for _, tc := range []struct{ at, variant string }{{"batch=4", "batch in [1,4]"}, {"batch=6", "batch in [5,8]"}} {
		r := report("--max-shape", "x=8x3x32x32", "--specialize", "batch=4", "--stats-at", tc.at)["at"].(map[string]any)
		if r["variant"] != tc.variant {
			t.Errorf("--stats-at %s: variant %v, want %s", tc.at, r["variant"], tc.variant)
		}
		s := r["stats"].(map[string]any)
		if tc.at == "batch=4" && (s["kernels"] != static4["kernels"] || s["modeled_time_us"] != static4["modeled_time_us"]) {
			t.Errorf("at batch 4: %v kernels, %v µs; the static build: %v, %v", s["kernels"], s["modeled_time_us"], static4["kernels"], static4["modeled_time_us"])
		}
	}
}

// Bad --specialize values are one error each, exit status 1, nothing written.
func TestBuildSpecializeBad(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "frontend", "onnx", "suite", "testdata", "dynamic"))
	if err != nil {
		t.Fatal(err)
	}
	resnet := filepath.Join(dir, "resnet_dyn_opset13.onnx")
	t.Chdir(t.TempDir())
	// Splits making more programs than a plan holds are refused before any is compiled, naming
	// the flag (the plan's reader used to refuse them only after all were built).
	wide := "graph w {\n  dims { n in [1,100], m in [1,100] }\n  input %x : f32[n,m]\n  %0 = neg(%x) : f32[n,m]\n  output y = %0\n}\n"
	if err := os.WriteFile("w.gir", []byte(wide), 0o644); err != nil {
		t.Fatal(err)
	}
	var many, grid []string
	for b := 1; b <= 64; b++ {
		many = append(many, "--specialize", fmt.Sprintf("n=%d", b))
	}
	for b := 1; b <= 8; b++ { // 9 pieces of each: 81 variants
		grid = append(grid, "--specialize", fmt.Sprintf("n=%d", b), "--specialize", fmt.Sprintf("m=%d", b))
	}
	for _, tc := range []struct{ args, want string }{
		{"build w.gir -o b.ptx " + strings.Join(many, " "), "specialize: n in 65 pieces make more than the 64 variants a plan holds"},
		{"build w.gir -o b.ptx " + strings.Join(grid, " "), "specialize: n in 9 pieces, m in 9 pieces make more than the 64 variants"},
		{"build w.gir -o b.ptx --specialize auto " + strings.Join(many, " "), "specialize: n in 65 pieces make more"},
		{"build " + resnet + " --max-shape x=8x3x32x32 --specialize seq=4 -o b.ptx", `specialize seq: graph`},
		{"build " + resnet + " --max-shape x=8x3x32x32 --specialize batch=8 -o b.ptx", "specialize batch=8: the bound must lie in batch's range [1,8] and below its upper end 8"},
		{"build " + resnet + " --max-shape x=8x3x32x32 --specialize batch=0 -o b.ptx", "specialize batch=0: the bound must lie in batch's range [1,8]"},
		{"build " + resnet + " --max-shape x=8x3x32x32 --specialize batch -o b.ptx", `--specialize "batch": want NAME=BOUND`},
		{"build " + resnet + " --shape x=8x3x32x32 --specialize batch=4 -o b.ptx", "has no dims to specialize"},
		{"build " + resnet + " --max-shape x=8x3x32x32 --specialize batch=4 --emit ir -o b.ptx", "--specialize compiles variants of the module"},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(strings.Fields(tc.args), &stdout, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), tc.want) || strings.Count(strings.TrimSpace(stderr.String()), "\n") > 0 {
			t.Errorf("%s: exit %d, stderr %q; want %q", tc.args, code, stderr.String(), tc.want)
		}
		for _, f := range []string{"b.ptx", "b.plan.json"} {
			if _, err := os.Stat(f); err == nil {
				t.Errorf("%s wrote %s", tc.args, f)
			}
		}
	}
}
