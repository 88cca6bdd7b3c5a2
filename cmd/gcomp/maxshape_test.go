package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// gcomp build --max-shape builds a torch export with a dynamic batch once; gcomp run runs the
// one build on the simulator at batches 1, 3 and 8, equal to PyTorch's outputs. The transformer
// block over a symbolic seq runs on the reference at three sizes, and its one build on the
// simulator at seq 1 and 7 (512: TestExportedDynamic). Bad --max-shape values and sizes out of range are one error each, exit status 1.
func TestMaxShapeBuildRun(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "frontend", "onnx", "suite", "testdata", "dynamic"))
	if err != nil {
		t.Fatal(err)
	}
	resnet, attn := filepath.Join(dir, "resnet_dyn_opset13.onnx"), filepath.Join(dir, "seq_attn_opset13.onnx")
	t.Chdir(t.TempDir())
	var stdout, stderr bytes.Buffer
	for _, args := range [][]string{
		{"build", resnet, "--max-shape", "x=8x3x32x32", "-o", "m.ptx"},
		{"init-weights", resnet, "--max-shape", "x=8x3x32x32", "-o", "w.safetensors"},
		{"build", attn, "--max-shape", "x=2x512x16", "-o", "s.ptx"},
		{"init-weights", attn, "--max-shape", "x=2x512x16", "-o", "sw.safetensors"},
	} {
		if code := Main(args, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: %s", args, stderr.String())
		}
	}
	run := func(model, dev, sub, out string, flags ...string) {
		t.Helper()
		args := append([]string{"run", model, "--device", dev, "--input", "x=" + filepath.Join(dir, sub, "x.npy"), "--output-dir", out}, flags...)
		if code := Main(args, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: %s", args, stderr.String())
		}
		want, got := readNPY(t, filepath.Join(dir, sub, "y.npy")), readNPY(t, filepath.Join(out, "y.npy"))
		if !got.Type.Equal(want.Type) {
			t.Fatalf("%s: y is %s, PyTorch's %s", sub, got.Type, want.Type)
		}
		rel, _ := tolerance.Tolerance(ir.F32, false, 0)
		abs := tolerance.OutputFloor(rel, want.F)
		for i := range want.F {
			if !tolerance.Within(got.F[i], want.F[i], rel, abs) {
				t.Fatalf("%s on %s: y[%d] = %v, PyTorch %v", sub, dev, i, got.F[i], want.F[i])
			}
		}
	}
	for _, n := range []int{1, 3, 8} {
		run("m.ptx", "sim", fmt.Sprintf("resnet_dyn_size%d", n), fmt.Sprintf("sim%d", n), "--weights", "w.safetensors")
	}
	for _, n := range []int{1, 7, 512} {
		run(attn, "ref", fmt.Sprintf("seq_attn_size%d", n), fmt.Sprintf("ref%d", n), "--max-shape", "x=2x512x16")
	}
	for _, n := range []int{1, 7} {
		run("s.ptx", "sim", fmt.Sprintf("seq_attn_size%d", n), fmt.Sprintf("ssim%d", n), "--weights", "sw.safetensors")
	}
	if err := tensorio.WriteNPYFile("x9.npy", tensor.New(ir.T(ir.F32, 9, 3, 32, 32)).Array()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ args, want string }{
		{"run m.ptx --device sim --weights w.safetensors --input x=x9.npy --output-dir o", "gcomp run: m.ptx: input x: dim 0 (batch) is 9, outside batch's range [1,8]"},
		{"build " + resnet + " --max-shape z=8x3x32x32 -o b.ptx", `--max-shape z: the model has no input "z" (inputs: "x")`},
		{"build " + resnet + " --max-shape x=8xax32x32 -o b.ptx", `gcomp: --max-shape "x=8xax32x32": "a" is not a dimension`},
		{"build " + resnet + " --max-shape x8x3 -o b.ptx", `gcomp: --max-shape "x8x3": want NAME=D1xD2x...`},
		{"build " + resnet + " --max-shape x=8x3x32x32 --max-shape x=4x3x32x32 -o b.ptx", "gcomp: --max-shape x given twice"},
		{"build " + resnet + " --max-shape x=8x3x31x32 -o b.ptx", `--max-shape x: dim 2 is 31, but input "x" declares it static, 32`},
		{"build " + resnet + " --max-shape x=0x3x32x32 -o b.ptx", `--max-shape x: dim 0 ("batch") is 0, want a bound of at least 1`},
	} {
		stderr.Reset()
		code := Main(strings.Fields(tc.args), &stdout, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), tc.want) || strings.Count(strings.TrimSpace(stderr.String()), "\n") > 0 {
			t.Errorf("%s: exit %d, stderr %q; want %q", tc.args, code, stderr.String(), tc.want)
		}
	}
	stdout.Reset()
	if code := Main([]string{"help"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "--max-shape NAME=8x3x224x224") {
		t.Errorf("gcomp help does not document --max-shape:\n%s", stdout.String())
	}
	if _, err := os.Stat("b.ptx"); err == nil {
		t.Errorf("a refused build wrote b.ptx")
	}
}

// A module built from an .onnx file holds none of the file's weights, so a run of it without
// --weights computes with seeded initializers: gcomp run says so on stderr (the issue's own
// commands, `gcomp build model.onnx --max-shape ... -o m.ptx` then `gcomp run m.ptx --input
// ...`, would otherwise print outputs unlike PyTorch's without a word). With --weights, and for
// the .onnx file itself (its initializers are its weights), there is no such line.
func TestRunBuiltONNXWeightsNote(t *testing.T) {
	resnet, err := filepath.Abs(filepath.Join("..", "..", "frontend", "onnx", "suite", "testdata", "dynamic", "resnet_dyn_opset13.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	var stdout, stderr bytes.Buffer
	for _, args := range [][]string{
		{"build", resnet, "--max-shape", "x=8x3x32x32", "-o", "m.ptx"},
		{"init-weights", resnet, "--max-shape", "x=8x3x32x32", "-o", "w.safetensors"},
		{"dump", resnet, "--max-shape", "x=8x3x32x32"},
	} {
		stdout.Reset()
		if code := Main(args, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: %s", args, stderr.String())
		}
	}
	if err := os.WriteFile("m.gir", stdout.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := tensorio.WriteNPYFile("x.npy", tensor.New(ir.T(ir.F32, 3, 3, 32, 32)).Array()); err != nil {
		t.Fatal(err)
	}
	const note = "gcomp: no --weights: the 42 parameters use seeded initializers (seed 0), not the weights of resnet_dyn_opset13.onnx"
	for _, tc := range []struct {
		args []string
		note bool
	}{
		{[]string{"run", "m.ptx"}, true},
		{[]string{"run", "m.gir"}, true},
		{[]string{"run", "m.ptx", "--weights", "w.safetensors"}, false},
		{[]string{"run", resnet, "--max-shape", "x=8x3x32x32"}, false},
	} {
		stderr.Reset()
		args := append(tc.args, "--device", "ref", "--input", "x=x.npy", "--output-dir", "o")
		if code := Main(args, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, stderr.String())
		}
		if got := strings.Contains(stderr.String(), note); got != tc.note {
			t.Errorf("%v: stderr %q; the note about seeded weights: %v, want %v", tc.args, stderr.String(), got, tc.note)
		}
	}
}
