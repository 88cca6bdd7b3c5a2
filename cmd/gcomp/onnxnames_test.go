package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// writeTorchNamed writes torch.onnx.export's default naming of nn.Linear then ReLU: the input
// "onnx::Gemm_0" (batch symbolic), the Gemm's output "4" (an output too) and the ReLU's
// output "../x", a name that is no safe file name.
func writeTorchNamed(t *testing.T) {
	vi := func(name string, dims ...any) *onnxpb.ValueInfoProto { return onnxValueInfo(name, 1, dims...) }
	w := tensor.FromFloats(ir.T(ir.F32, 3, 2), []float64{1, 2, 3, 4, 5, 6})
	b := tensor.FromFloats(ir.T(ir.F32, 3), []float64{0.5, -100, 0})
	m := &onnxpb.ModelProto{IrVersion: ptrTo(int64(8)),
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: ptrTo(""), Version: ptrTo(int64(13))}},
		Graph: &onnxpb.GraphProto{
			Name:        ptrTo("torch_jit"),
			Input:       []*onnxpb.ValueInfoProto{vi("onnx::Gemm_0", "batch", 2)},
			Initializer: []*onnxpb.TensorProto{onnxTensor("fc.weight", 1, w), onnxTensor("fc.bias", 1, b)},
			Node: []*onnxpb.NodeProto{
				{OpType: ptrTo("Gemm"), Name: ptrTo("/fc/Gemm"), Input: []string{"onnx::Gemm_0", "fc.weight", "fc.bias"}, Output: []string{"4"},
					Attribute: []*onnxpb.AttributeProto{{Name: ptrTo("transB"), Type: onnxpb.AttributeProto_INT.Enum(), I: ptrTo(int64(1))}}},
				{OpType: ptrTo("Relu"), Name: ptrTo("/relu/Relu"), Input: []string{"4"}, Output: []string{"../x"}},
			},
			Output: []*onnxpb.ValueInfoProto{vi("4", "batch", 3), vi("../x", "batch", 3)},
		}}
	data, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("m.onnx", data, 0o644); err != nil {
		t.Fatal(err)
	}
	x := tensor.FromFloats(ir.T(ir.F32, 2, 2), []float64{1, 1, -1, 2})
	if err := tensorio.WriteNPYFile("x.npy", x.Array()); err != nil {
		t.Fatal(err)
	}
}

// An .onnx model's tensors are named as the file names them, on the command line (--input,
// --shape) and in the files run writes (safe names derived from them, the mapping printed where
// they differ); errors list the file's names.
func TestONNXFileNames(t *testing.T) {
	t.Chdir(t.TempDir())
	writeTorchNamed(t)
	var stdout, stderr bytes.Buffer
	shape := []string{"--shape", "onnx::Gemm_0=2x2"}
	args := append([]string{"run", "m.onnx", "--device", "ref", "--input", "onnx::Gemm_0=x.npy", "--save-inputs", "--output-dir", "out"}, shape...)
	if code := Main(args, &stdout, &stderr); code != 0 {
		t.Fatalf("run: %s", stderr.String())
	}
	// Gemm: [[3,7,11],[3,5,7]] + b; ReLU of it.
	if y := readNPY(t, "out/4.npy"); !slices.Equal(y.F, []float64{3.5, -93, 11, 3.5, -95, 7}) {
		t.Errorf("out/4.npy = %v", y.F)
	}
	if y := readNPY(t, "out/_._x.npy"); !slices.Equal(y.F, []float64{3.5, 0, 11, 3.5, 0, 7}) {
		t.Errorf("out/_._x.npy = %v", y.F)
	}
	if x := readNPY(t, "out/inputs/onnx__Gemm_0.npy"); !slices.Equal(x.F, []float64{1, 1, -1, 2}) {
		t.Errorf("out/inputs/onnx__Gemm_0.npy = %v", x.F)
	}
	for _, want := range []string{`gcomp: output "../x" is written to out/_._x.npy`, `gcomp: input "onnx::Gemm_0" is written to out/inputs/onnx__Gemm_0.npy`} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q lacks %q", stderr.String(), want)
		}
	}
	if strings.Contains(stderr.String(), `output "4"`) {
		t.Errorf("stderr %q reports output 4, whose file is 4.npy", stderr.String())
	}
	if ents, err := os.ReadDir("out"); err != nil || len(ents) != 3 {
		t.Errorf("out holds %v, %v; want 4.npy, _._x.npy and inputs/", ents, err)
	}
	if code := Main(append([]string{"check", "m.onnx", "--input", "onnx::Gemm_0=x.npy"}, shape...), &stdout, &stderr); code != 0 {
		t.Fatalf("check: %s", stderr.String())
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append([]string{"run", "m.onnx", "--input", "onnx__Gemm_0=x.npy", "--output-dir", "out2"}, shape...),
			`--input onnx__Gemm_0=x.npy: the model has no input "onnx__Gemm_0" (inputs: "onnx::Gemm_0")`},
		{[]string{"dump", "m.onnx", "--shape", "onnx__Gemm_0=2x2"}, `--shape onnx__Gemm_0: the model has no input "onnx__Gemm_0" (inputs: "onnx::Gemm_0")`},
		{[]string{"dump", "m.onnx"}, `fix it with --shape onnx::Gemm_0=Nx2`},
	} {
		stderr.Reset()
		if code := Main(tc.args, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: status %d, stderr %q, want %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

// A model PyTorch exported with its default names (scripts/export_default_names.py) runs with
// its input named as the file names it, and its outputs are found under the file's names.
func TestTorchDefaultNames(t *testing.T) {
	src, err := filepath.Abs("testdata/torch_default_names")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	var stdout, stderr bytes.Buffer
	for _, args := range [][]string{{"build", filepath.Join(src, "model.onnx"), "-o", "m.ptx"}, {"init-weights", filepath.Join(src, "model.onnx"), "-o", "w.safetensors"}} {
		if code := Main(args, &stdout, &stderr); code != 0 {
			t.Fatalf("%s: %s", args[0], stderr.String())
		}
	}
	// The model runs on ref, and its module (which records the file's names) on the simulator.
	for _, run := range [][]string{{filepath.Join(src, "model.onnx"), "--device", "ref"}, {"m.ptx", "--device", "sim", "--weights", "w.safetensors"}} {
		stderr.Reset()
		if code := Main(append([]string{"run", run[0], run[1], run[2], "--input", "onnx::Gemm_0=" + filepath.Join(src, "x.npy"), "--output-dir", "out-" + run[2]}, run[3:]...), &stdout, &stderr); code != 0 {
			t.Fatalf("run %s: %s", run[0], stderr.String())
		}
		if want := `gcomp: output "onnx::Relu_3" is written to out-` + run[2] + `/onnx__Relu_3.npy`; !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q lacks %q", stderr.String(), want)
		}
		compareNPY(t, "out-"+run[2]+"/4.npy", filepath.Join(src, "y0.npy"))
		compareNPY(t, "out-"+run[2]+"/onnx__Relu_3.npy", filepath.Join(src, "y1.npy"))
	}
	stderr.Reset()
	if code := Main([]string{"run", "m.ptx", "--device", "sim", "--input", "onnx__Gemm_0=x.npy", "--output-dir", "out"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), `(inputs: "onnx::Gemm_0")`) {
		t.Errorf("run m.ptx under the graph's name: status %d, %s", code, stderr.String())
	}
}

// compareNPY compares a file run wrote with PyTorch's.
func compareNPY(t *testing.T, file, torch string) {
	t.Helper()
	got, want := readNPY(t, file), readNPY(t, torch)
	if !got.Type.Equal(want.Type) {
		t.Fatalf("%s is %s, PyTorch's %s", file, got.Type, want.Type)
	}
	for i := range want.F {
		if d := got.F[i] - want.F[i]; d > 1e-6 || d < -1e-6 {
			t.Errorf("%s[%d] = %v, PyTorch %v", file, i, got.F[i], want.F[i])
		}
	}
}
