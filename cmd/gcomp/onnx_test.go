package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

func ptrTo[T any](v T) *T { return &v }

func onnxTensor(name string, d int32, t *tensor.Tensor) *onnxpb.TensorProto {
	var dims []int64
	for _, x := range t.Type.Shape {
		dims = append(dims, int64(x))
	}
	return &onnxpb.TensorProto{Name: &name, Dims: dims, DataType: &d, RawData: t.Bytes()}
}

// writeONNX writes linear.onnx: output = relu(input·Wᵀ + b) with a symbolic batch, then
// reshaped by the value of a second input, "shape".
// onnxValueInfo declares a tensor of ONNX element type elem; dims are numbers or symbolic names.
func onnxValueInfo(name string, elem int32, dims ...any) *onnxpb.ValueInfoProto {
	s := &onnxpb.TensorShapeProto{}
	for _, d := range dims {
		if n, ok := d.(int); ok {
			s.Dim = append(s.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(n)}})
		} else {
			s.Dim = append(s.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: d.(string)}})
		}
	}
	return &onnxpb.ValueInfoProto{Name: &name, Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: &elem, Shape: s}}}}
}

func writeONNX(t *testing.T) {
	vi := onnxValueInfo
	w := tensor.FromFloats(ir.T(ir.F32, 3, 2), []float64{1, 2, 3, 4, 5, 6})
	b := tensor.FromFloats(ir.T(ir.F32, 3), []float64{0.5, -100, 0})
	m := &onnxpb.ModelProto{IrVersion: ptrTo(int64(8)),
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: ptrTo(""), Version: ptrTo(int64(13))}},
		Graph: &onnxpb.GraphProto{
			Name:        ptrTo("linear"),
			Input:       []*onnxpb.ValueInfoProto{vi("input", 1, "batch", 2), vi("shape", 7, 1)},
			Initializer: []*onnxpb.TensorProto{onnxTensor("fc.weight", 1, w), onnxTensor("fc.bias", 1, b)},
			Node: []*onnxpb.NodeProto{
				{OpType: ptrTo("Gemm"), Input: []string{"input", "fc.weight", "fc.bias"}, Output: []string{"g"},
					Attribute: []*onnxpb.AttributeProto{{Name: ptrTo("transB"), Type: onnxpb.AttributeProto_INT.Enum(), I: ptrTo(int64(1))}}},
				{OpType: ptrTo("Relu"), Input: []string{"g"}, Output: []string{"r"}},
				{OpType: ptrTo("Reshape"), Input: []string{"r", "shape"}, Output: []string{"output"}},
			},
			Output: []*onnxpb.ValueInfoProto{vi("output", 1, "n")},
		}}
	data, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	x := tensor.FromFloats(ir.T(ir.F32, 2, 2), []float64{1, 1, -1, 2})
	shape := tensor.New(ir.T(ir.I64, 1))
	shape.I[0] = -1
	for name, b := range map[string]proto.Message{"input_0.pb": onnxTensor("input", 1, x), "shape.pb": onnxTensor("shape", 7, shape)} {
		pb, _ := proto.Marshal(b)
		if err := os.WriteFile(name, pb, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile("linear.onnx", data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestONNX(t *testing.T) {
	t.Chdir(t.TempDir())
	writeONNX(t)
	var stdout, stderr bytes.Buffer
	// Unset dims and shape-deciding inputs are errors that say which flag fixes them.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"dump", "linear.onnx"}, `dimension 0 is symbolic ("batch"): fix it with --shape input=Nx2`},
		{[]string{"dump", "linear.onnx", "--shape", "input=2x2"}, `bind it with --const shape=FILE.pb|FILE.npy`},
		{[]string{"dump", "linear.onnx", "--shape", "input=2xq"}, `--shape "input=2xq": "q" is not a dimension`},
		{[]string{"dump", "linear.onnx", "--shape", "nosuch=2"}, `--shape nosuch: the model has no input "nosuch"`},
	} {
		stderr.Reset()
		if code := Main(tc.args, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: status %d, stderr %q, want %q", tc.args, code, stderr.String(), tc.want)
		}
	}
	flags := []string{"--shape", "input=2x2", "--const", "shape=shape.pb"}
	if code := Main(append([]string{"run", "linear.onnx", "--device", "ref", "--input", "input=input_0.pb", "--output-dir", "out"}, flags...), &stdout, &stderr); code != 0 {
		t.Fatalf("run: %s", stderr.String())
	}
	// The model's own weights are used: relu([[3,7,11],[3,5,7]] + b), flattened.
	y := readNPY(t, "out/output.npy")
	want := []float64{3.5, 0, 11, 3.5, 0, 7}
	for i, w := range want {
		if y.F[i] != w {
			t.Fatalf("output = %v, want %v", y.F, want)
		}
	}
	if code := Main(append([]string{"init-weights", "linear.onnx", "-o", "w.safetensors"}, flags...), &stdout, &stderr); code != 0 {
		t.Fatalf("init-weights: %s", stderr.String())
	}
	ts, _, err := tensorio.ReadSafetensorsFile("w.safetensors")
	if err != nil || ts["fc.weight"] == nil {
		t.Fatalf("init-weights wrote %v, %v", ts, err)
	}
	if wt, _ := tensor.FromArray(ts["fc.weight"]); wt.F[5] != 6 {
		t.Errorf("init-weights wrote fc.weight %v, want the model's initializer", wt.F)
	}
	if code := Main(append([]string{"check", "linear.onnx"}, flags...), &stdout, &stderr); code != 0 {
		t.Fatalf("check: %s", stderr.String())
	}
	if code := Main(append([]string{"build", "linear.onnx", "-o", "linear.ptx"}, flags...), &stdout, &stderr); code != 0 {
		t.Fatalf("build: %s", stderr.String())
	}
}
