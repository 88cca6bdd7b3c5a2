package main

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// regressionModel is y = x·Wᵀ + b for testdata/linear.csv's three inputs.
const regressionModel = `package reg

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
)

func Model(b *frontend.Builder) {
	x := b.Input("x", ir.F32, 16, 3)
	b.Output("y", nn.NewLinear(b, "fc", 3, 1).Forward(x))
}
`

// elementwiseRegression is linear like regressionModel but without a matrix product (a product
// and a row sum), which every PTX producer compiles.
const elementwiseRegression = `package ew

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

func Model(b *frontend.Builder) {
	x := b.Input("x", ir.F32, 16, 3)
	w := b.Param("w", ir.T(ir.F32, 3), frontend.Constant(0.1))
	c := b.Param("c", ir.T(ir.F32, 1), frontend.Constant(0))
	b.Output("y", x.Mul(w).SumKeepDim(1).Add(c))
}
`

// mixtureClassifier classifies the points of the mixture in train/testdata/mixture.
const mixtureClassifier = `package mix

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
)

func Model(b *frontend.Builder) {
	x := b.Input("x", ir.F32, 16, 2)
	fc1, fc2 := nn.NewLinear(b, "fc1", 2, 16), nn.NewLinear(b, "fc2", 16, 3)
	b.Output("logits", fc2.Forward(fc1.Forward(x).Relu()))
}
`

// ownDataFixture writes the two models into a fresh directory, changes to it, and returns the
// absolute path of train/testdata.
func ownDataFixture(t *testing.T) string {
	t.Helper()
	td, err := filepath.Abs(filepath.Join("..", "..", "train", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	for name, src := range map[string]string{"reg.go": regressionModel, "mix.go": mixtureClassifier, "ew.go": elementwiseRegression} {
		if err := os.WriteFile(name, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return td
}

// writeNPZ zips the .npy files of dir into an .npz archive.
func writeNPZ(t *testing.T, dir, path string) {
	t.Helper()
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	for _, name := range []string{"x", "y", "test_x", "test_y"} {
		src, err := os.ReadFile(filepath.Join(dir, name+".npy"))
		if err != nil {
			t.Fatal(err)
		}
		w, err := z.Create(name + ".npy")
		if err != nil {
			t.Fatal(err)
		}
		w.Write(src)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// gcomp train reads the user's data: a CSV regression with MSELoss prints and logs MSE and MAE;
// the mixture as an .npy directory and as an .npz archive trains to the same checkpoint, with
// accuracy printed.
func TestTrainOwnData(t *testing.T) {
	td := ownDataFixture(t)
	out, _ := runTrain(t, "reg.go", "--data", "csv:"+filepath.Join(td, "linear.csv"), "--target", "y", "--loss", "MSELoss",
		"--optimizer", "sgd", "--lr", "0.05", "--epochs", "3", "--device", "ref", "--save", "reg.safetensors", "--log", "reg.jsonl")
	if !strings.Contains(out, "epoch 3/3: train loss ") || !strings.Contains(out, ", train MSE ") || strings.Contains(out, "accuracy") {
		t.Errorf("regression printed %q", out)
	}
	log, err := os.ReadFile("reg.jsonl")
	if err != nil || !strings.Contains(string(log), `"train_mse":`) || !strings.Contains(string(log), `"train_mae":`) {
		t.Errorf("regression log %s, %v", log, err)
	}
	writeNPZ(t, filepath.Join(td, "mixture"), "mixture.npz")
	for _, spec := range []string{"npy:" + filepath.Join(td, "mixture"), "npz:mixture.npz"} {
		name := spec[:3]
		out, _ := runTrain(t, "mix.go", "--data", spec, "--epochs", "2", "--lr", "0.01", "--device", "ref", "--save", name+".safetensors")
		if !strings.Contains(out, "epoch 2/2: ") || !strings.Contains(out, "test accuracy ") {
			t.Errorf("%s printed %q", spec, out)
		}
	}
	a, _ := os.ReadFile("npy.safetensors")
	b, _ := os.ReadFile("npz.safetensors")
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("the .npz archive trained another checkpoint than the .npy directory")
	}
}

// Bad data and bad loss flags are one line naming the file and the row, exit status 1, and
// nothing written.
func TestTrainBadData(t *testing.T) {
	td := ownDataFixture(t)
	write := func(name, text string) string {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return name
	}
	good := "x1,x2,x3,y\n" + strings.Repeat("1,2,3,4\n", 20)
	write("ragged.csv", good+"1,2,3\n")
	write("word.csv", good+"1,two,3,4\n")
	write("nan.csv", good+"1,2,3,nan\n")
	write("quote.csv", good+"1,\"2,3,4\n")
	os.Mkdir("short", 0o755)
	x, err := tensorio.ReadNPYFile(filepath.Join(td, "mixture", "x.npy"))
	if err != nil {
		t.Fatal(err)
	}
	y, err := tensorio.ReadNPYFile(filepath.Join(td, "mixture", "test_y.npy"))
	if err != nil {
		t.Fatal(err)
	}
	tensorio.WriteNPYFile("short/x.npy", x)
	tensorio.WriteNPYFile("short/y.npy", y)
	reg := []string{"reg.go", "--target", "y", "--loss", "MSELoss", "--save", "out.safetensors", "--device", "ref"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"ragged row", append([]string{"--data", "csv:ragged.csv"}, reg...), "ragged.csv:22: 3 fields, the header has 4"},
		{"not a number", append([]string{"--data", "csv:word.csv"}, reg...), `word.csv:22: column x2: "two" is not a number`},
		{"NaN target", append([]string{"--data", "csv:nan.csv"}, reg...), "nan.csv:22: target is NaN; MSELoss cannot take NaN targets"},
		{"bad quote", append([]string{"--data", "csv:quote.csv"}, reg...), "quote.csv:22: "},
		{"no column", []string{"reg.go", "--data", "csv:ragged.csv", "--target", "z", "--loss", "MSELoss", "--save", "out.safetensors"}, `ragged.csv:1: no column "z" (the columns are x1, x2, x3, y)`},
		{"no target", []string{"reg.go", "--data", "csv:ragged.csv", "--save", "out.safetensors"}, "--data csv:ragged.csv needs --target COLUMN"},
		{"target without csv", []string{"mix.go", "--data", "npy:short", "--target", "y", "--save", "out.safetensors"}, "--target is for --data csv:FILE"},
		{"lengths differ", []string{"mix.go", "--data", "npy:short", "--save", "out.safetensors"}, "short/x.npy: 480 rows of inputs (f32[480,2]) but 120 rows of targets (i64[120])"},
		{"no npz", []string{"mix.go", "--data", "npz:none.npz", "--save", "out.safetensors"}, "none.npz"},
		{"unknown loss", []string{"mix.go", "--data", "npy:short", "--loss", "hinge", "--save", "out.safetensors"}, `--loss: unknown loss "hinge"`},
		{"loss argument", []string{"mix.go", "--data", "npy:short", "--loss", "MSELoss", "--label-smoothing", "0.1", "--save", "out.safetensors"}, "MSELoss takes no label_smoothing"},
		{"class loss, float targets", []string{"reg.go", "--data", "csv:" + filepath.Join(td, "linear.csv"), "--target", "y", "--save", "out.safetensors"}, "has no output logits"},
		{"unknown backend", []string{"mix.go", "--data", "npy:short", "--backend", "llvm", "--save", "out.safetensors"}, "--backend: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := Main(append([]string{"train"}, tc.args...), &stdout, &stderr); code != 1 {
				t.Fatalf("exit status %d, want 1; stderr:\n%s", code, stderr.String())
			}
			msg := strings.TrimSpace(stderr.String())
			if !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("stderr = %q, want one line containing %q", msg, tc.want)
			}
			if _, err := os.Stat("out.safetensors"); err == nil {
				t.Errorf("out.safetensors was written by a failing command")
				os.Remove("out.safetensors")
			}
		})
	}
}

// --backend nvvm trains with the step's kernels from libNVVM: on the simulator, its checkpoint
// agrees with the one of gcomp's PTX within the comparison tolerance.
func TestTrainBackendNVVM(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: two trainings on the simulator")
	}
	lib := libnvvm.Require(t)
	dev, err := lib.Libdevice()
	if err != nil {
		t.Skipf("SKIPPING: %v", err)
	}
	t.Setenv(libnvvm.LibdeviceEnv, dev)
	td := ownDataFixture(t)
	for _, b := range []string{"ptx", "nvvm"} {
		runTrain(t, "ew.go", "--data", "csv:"+filepath.Join(td, "linear.csv"), "--target", "y", "--loss", "MSELoss", "--optimizer", "sgd", "--lr", "0.05",
			"--limit", "64", "--device", "sim", "--backend", b, "--nvvm-lib", lib.Path, "--save", b+".safetensors")
	}
	want, _, err1 := tensorio.ReadSafetensorsFile("ptx.safetensors")
	got, _, err2 := tensorio.ReadSafetensorsFile("nvvm.safetensors")
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	for name, w := range want {
		wt, err1 := tensor.FromArray(w)
		gt, err2 := tensor.FromArray(got[name])
		if err1 != nil || err2 != nil {
			t.Fatal(name, err1, err2)
		}
		if o := check.Compare(name, gt, wt, false); !o.Pass() {
			t.Errorf("%s: %d elements differ, first %s", name, o.Bad, o.First)
		}
	}
}
