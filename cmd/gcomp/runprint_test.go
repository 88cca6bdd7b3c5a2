package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
)

// TestIssue27Run runs the user's path of issue 27 as written: `gcomp build model.onnx --max-shape
// x=8x3x32x32 -o m.ptx`, then `gcomp run m.ptx --input x=batch3.npy` with no --output-dir and no
// --device: the outputs are printed to stdout, and the printed values, with the file's weights
// (--weights from init-weights, or the .onnx run itself), are PyTorch's.
func TestIssue27Run(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "frontend", "onnx", "suite", "testdata", "dynamic"))
	if err != nil {
		t.Fatal(err)
	}
	model, x := filepath.Join(dir, "resnet_dyn_opset13.onnx"), filepath.Join(dir, "resnet_dyn_size3", "x.npy")
	want := readNPY(t, filepath.Join(dir, "resnet_dyn_size3", "y.npy"))
	t.Chdir(t.TempDir())
	gcompOK(t, "build", model, "--max-shape", "x=8x3x32x32", "-o", "m.ptx")
	gcompOK(t, "init-weights", model, "--max-shape", "x=8x3x32x32", "-o", "w.safetensors")
	const (
		refNote     = "gcomp: no --device: running m.ptx's source graph on the reference interpreter; --device auto runs its kernels"
		weightsNote = "for them run the .onnx itself (gcomp run resnet_dyn_opset13.onnx --max-shape x=8x3x32x32 ...), or write them once (gcomp init-weights resnet_dyn_opset13.onnx --max-shape x=8x3x32x32 -o w.safetensors) and give --weights w.safetensors"
	)
	for _, tc := range []struct {
		args              []string
		pytorch           bool // the file's weights: the values are PyTorch's
		refNote, weightsN bool
	}{
		{[]string{"run", "m.ptx", "--input", "x=" + x}, false, true, true},
		{[]string{"run", "m.ptx", "--input", "x=" + x, "--weights", "w.safetensors"}, true, true, false},
		{[]string{"run", "m.ptx", "--input", "x=" + x, "--weights", "w.safetensors", "--device", "sim", "--no-check"}, true, false, false},
		{[]string{"run", model, "--max-shape", "x=8x3x32x32", "--input", "x=" + x}, true, false, false},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(tc.args, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, stderr.String())
		}
		if got := strings.Contains(stderr.String(), refNote); got != tc.refNote {
			t.Errorf("%v: stderr %q: the note that ref runs: %v, want %v", tc.args, stderr.String(), got, tc.refNote)
		}
		if got := strings.Contains(stderr.String(), weightsNote); got != tc.weightsN {
			t.Errorf("%v: stderr %q: the note about the file's weights: %v, want %v", tc.args, stderr.String(), got, tc.weightsN)
		}
		header, body, _ := strings.Cut(stdout.String(), "\n")
		if header != "y: f32[3,10]" {
			t.Fatalf("%v: printed %q first, want the output's name and type", tc.args, header)
		}
		got := printedValues(t, body)
		if len(got) != len(want.F) {
			t.Fatalf("%v: printed %d values, want %d:\n%s", tc.args, len(got), len(want.F), stdout.String())
		}
		rel, _ := tolerance.Tolerance(ir.F32, false, 0)
		abs := tolerance.OutputFloor(rel, want.F)
		agree := true
		for i := range got {
			// Printed with at most 8 digits after the point: that rounding is within abs.
			agree = agree && tolerance.Within(got[i], want.F[i], rel, abs+5e-9)
		}
		if agree != tc.pytorch {
			t.Errorf("%v: printed values agree with PyTorch's: %v, want %v\n%s", tc.args, agree, tc.pytorch, stdout.String())
		}
	}
}

// printedValues parses the numbers of a printed tensor.
func printedValues(t *testing.T, s string) []float64 {
	t.Helper()
	var vs []float64
	for _, f := range strings.Fields(strings.NewReplacer("[", " ", "]", " ").Replace(s)) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatalf("printed %q, not a number, in\n%s", f, s)
		}
		vs = append(vs, v)
	}
	return vs
}

// Without --output-dir every device prints the outputs --output-dir writes (formatTensor of the
// .npy), writes no file, and is not stopped by what is in the working directory.
func TestRunPrintsWithoutOutputDir(t *testing.T) {
	model, err := filepath.Abs(filepath.Join("..", "..", "examples", "mlp", "model.go"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	run := "run " + model + " --seed 4 --batch 6 --input x=" + filepath.Join("in", "inputs", "x.npy") + " "
	gcompOK(t, "run", model, "--seed", "4", "--batch", "6", "--output-dir", "in", "--save-inputs")
	// A directory named as an output's file would be: in the way of --output-dir . only.
	if err := os.Mkdir("y.npy", 0o755); err != nil {
		t.Fatal(err)
	}
	for i, flags := range []string{"", "--device ref", "--device sim --no-check", "--device sim:0,sim:1 --no-check"} {
		out := fmt.Sprint("out", i)
		gcompOK(t, strings.Fields(run+flags+" --output-dir "+out)...)
		want := "y: f32[6,10]\n" + formatTensor(readNPY(t, filepath.Join(out, "y.npy"))) + "\n"
		before := listDir(t, ".")
		if got := gcompOK(t, strings.Fields(run+flags)...); got != want {
			t.Errorf("%s: printed\n%s\nwant\n%s", flags, got, want)
		}
		if after := listDir(t, "."); !slices.Equal(after, before) {
			t.Errorf("%s: a run without --output-dir changed the working directory: %v, was %v", flags, after, before)
		}
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// An .onnx model's outputs print under the file's names, in the graph's order, whatever file
// name --output-dir would have to give them; a name a terminal would act on is quoted.
func TestRunPrintsONNXNames(t *testing.T) {
	t.Chdir(t.TempDir())
	writeTorchNamed(t)
	got := gcompOK(t, "run", "m.onnx", "--shape", "onnx::Gemm_0=2x2", "--input", "onnx::Gemm_0=x.npy")
	const want = "4: f32[2,3]\n[[  3.5 -93.   11. ]\n [  3.5 -95.    7. ]]\n\n" +
		"../x: f32[2,3]\n[[ 3.5  0.  11. ]\n [ 3.5  0.   7. ]]\n"
	if got != want {
		t.Errorf("printed\n%s\nwant\n%s", got, want)
	}
	for name, want := range map[string]string{"y": "y", "../x": "../x", "onnx::Gemm_0": "onnx::Gemm_0", "a\x1b[2Jb": `"a\x1b[2Jb"`, "a\nb": `"a\nb"`, "": `""`, "é": "é"} {
		if got := printableName(name); got != want {
			t.Errorf("printableName(%q) = %s, want %s", name, got, want)
		}
	}
}
