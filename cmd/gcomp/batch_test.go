package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The examples compile at a batch chosen on the command line and agree with the reference
// interpreter on the simulator (gcomp check), and gcomp run writes outputs of that batch.
func TestBatchCheck(t *testing.T) {
	for _, tc := range []struct {
		dir   string
		batch string
		slow  bool // minutes on the simulator
	}{
		{"mlp", "1", false}, {"mlp", "3", false}, {"mlp", "64", false},
		{"transformer", "1", false}, {"transformer", "3", false}, {"transformer", "64", true},
		{"cnn", "1", false}, {"cnn", "3", true}, {"cnn", "64", true},
		{"rnn", "3", false}, {"linreg", "64", false},
	} {
		t.Run(tc.dir+"@"+tc.batch, func(t *testing.T) {
			if tc.slow && testing.Short() {
				t.Skip("minutes on the simulator")
			}
			model := filepath.Join("..", "..", "examples", tc.dir, "model.go")
			var stdout, stderr bytes.Buffer
			if code := Main([]string{"check", model, "--batch", tc.batch, "--seed", "2"}, &stdout, &stderr); code != 0 {
				t.Fatalf("check: %s", stderr.String())
			}
			if !strings.Contains(stdout.String(), "ok") {
				t.Errorf("check printed:\n%s", stdout.String())
			}
		})
	}
}

func TestBatchRunAndDump(t *testing.T) {
	model, err := filepath.Abs(filepath.Join("..", "..", "examples", "mlp", "model.go"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"run", model, "--batch", "5", "--device", "ref", "--output-dir", "out"}, &stdout, &stderr); code != 0 {
		t.Fatalf("run: %s", stderr.String())
	}
	if y := readNPY(t, "out/y.npy"); !y.Type.Shape.Equal([]int{5, 10}) {
		t.Errorf("y is %v, want [5 10]", y.Type.Shape)
	}
	// The default is the file's own batch; dump and build agree with it.
	stdout.Reset()
	if code := Main([]string{"dump", model}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "input %x : f32[16,64]") {
		t.Errorf("dump: %d %s %s", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	if code := Main([]string{"dump", model, "--batch", "7"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "input %x : f32[7,64]") {
		t.Errorf("dump --batch 7: %d %s %s", code, stdout.String(), stderr.String())
	}
	if code := Main([]string{"build", model, "--batch", "7", "-o", "m.ptx"}, &stdout, &stderr); code != 0 {
		t.Fatalf("build: %s", stderr.String())
	}
	if plan, err := os.ReadFile("m.plan.json"); err != nil || !strings.Contains(string(plan), `"f32[7,64]"`) {
		t.Errorf("the plan is not at batch 7 (%v)", err)
	}
}

func TestBatchErrorsCmd(t *testing.T) {
	t.Chdir(t.TempDir())
	lit := `package m

import "github.com/gcomp/gcomp/frontend"

func Model(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, b.Batch(64), 784)
	b.Output("y", x.View(64, 784).Relu())
}
`
	if err := os.WriteFile("lit.go", []byte(lit), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"build", "lit.go", "--batch", "3"}, "lit.go:7: view: shape [64 784] is invalid for x f32[3,784] (2352 elements) (at batch 3, while the model's own batch builds: this line fixes the batch)"},
		{[]string{"check", "lit.go", "--batch", "-2"}, "--batch -2: must be positive"},
		{[]string{"dump", "lit.go", "--batch", "x"}, "invalid value"},
		{[]string{"check", "m.ptx", "--batch", "2"}, "m.ptx: --batch: a compiled module is fixed at the batch it was built at"},
		{[]string{"run", "m.ptx", "--batch", "2", "--device", "sim", "--output-dir", "o"}, "m.ptx: --batch: a compiled module is fixed"},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(tc.args, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), tc.want) || stdout.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q, want %q", tc.args, code, stdout.String(), stderr.String(), tc.want)
		}
	}
	if _, err := os.Stat("m.ptx"); err == nil {
		t.Error("a failed build wrote m.ptx")
	}
}

// gcomp run over two and three simulated devices writes what one device writes.
func TestRunParallel(t *testing.T) {
	model, err := filepath.Abs(filepath.Join("..", "..", "examples", "mlp", "model.go"))
	if err != nil {
		t.Fatal(err)
	}
	onnxModel, err := filepath.Abs(filepath.Join("..", "..", "frontend", "onnx", "suite", "testdata", "exported", "mlp_opset17.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	run := func(args ...string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := Main(append([]string{"run", model, "--seed", "4"}, args...), &stdout, &stderr); code != 0 {
			t.Fatalf("%v: %s", args, stderr.String())
		}
	}
	run("--batch", "6", "--device", "sim", "--output-dir", "one", "--save-inputs")
	run("--batch", "6", "--device", "sim:0,sim:1", "--output-dir", "two", "--input", "x=one/inputs/x.npy")
	run("--batch", "6", "--device", "sim:0,sim:1,sim:2", "--output-dir", "three", "--input", "x=one/inputs/x.npy")
	// An .onnx model's symbolic batch dim takes --batch too.
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"run", onnxModel, "--batch", "4", "--device", "sim:0,sim:1", "--output-dir", "onnx2", "--save-inputs"}, &stdout, &stderr); code != 0 {
		t.Fatalf("onnx over two devices: %s", stderr.String())
	}
	if code := Main([]string{"run", onnxModel, "--shape", "x=4x64", "--device", "sim", "--output-dir", "onnx1", "--input", "x=onnx2/inputs/x.npy"}, &stdout, &stderr); code != 0 {
		t.Fatalf("onnx on one device: %s", stderr.String())
	}
	if a, b := readNPY(t, "onnx1/y.npy"), readNPY(t, "onnx2/y.npy"); !a.Type.Equal(b.Type) || !slices.Equal(a.F, b.F) {
		t.Error("the .onnx model over two devices differs from one device's")
	}
	want := readNPY(t, "one/y.npy")
	for _, dir := range []string{"two", "three"} {
		got := readNPY(t, dir+"/y.npy")
		if !got.Type.Equal(want.Type) || !slices.Equal(got.F, want.F) {
			t.Errorf("%s devices: y differs from one device's", dir)
		}
	}
}

func TestRunParallelErrors(t *testing.T) {
	mlp, err := filepath.Abs(filepath.Join("..", "..", "examples", "mlp", "model.go"))
	if err != nil {
		t.Fatal(err)
	}
	dir := fixture(t)
	t.Chdir(dir)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", mlp, "--batch", "5", "--device", "sim:0,sim:1", "--output-dir", "o"}, "batch 5 does not split evenly over 2 devices"},
		{[]string{"run", mlp, "--device", "sim:0,sim:1,sim:2", "--output-dir", "o"}, "batch 16 does not split evenly over 3 devices"},
		{[]string{"run", "model.go", "--device", "sim:0,sim:1", "--output-dir", "o"}, "model.go: the model declares no batch (b.Batch) to split over 2 devices"},
		{[]string{"run", mlp, "--device", "sim:0,cuda:1", "--output-dir", "o"}, "mixes sim and cuda"},
		{[]string{"run", mlp, "--device", "sim:0,sim:1", "--bench", "2", "--output-dir", "o"}, "--bench times one device"},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(tc.args, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, stderr.String(), tc.want)
		}
	}
	if _, err := os.Stat("o"); err == nil {
		t.Error("a failed run wrote its output directory")
	}
}
