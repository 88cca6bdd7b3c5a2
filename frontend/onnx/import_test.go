package onnx

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// Test models are built with these helpers, as an exporter writes them.

func ptr[T any](v T) *T { return &v }

func valueInfo(name string, elem int32, dims ...any) *onnxpb.ValueInfoProto {
	shape := &onnxpb.TensorShapeProto{}
	for _, d := range dims {
		switch d := d.(type) {
		case int:
			shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(d)}})
		case string:
			shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: d}})
		}
	}
	if len(dims) == 0 {
		shape = nil // unknown (an empty shape is a scalar's)
	}
	return &onnxpb.ValueInfoProto{Name: ptr(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: ptr(elem), Shape: shape}}}}
}

func nodeP(op, name string, in, out []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
	return &onnxpb.NodeProto{OpType: ptr(op), Name: ptr(name), Input: in, Output: out, Attribute: attrs}
}

func attrS(name, v string) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: ptr(name), Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte(v)}
}

func attrInts(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: ptr(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}

func floats(name string, shape []int, v ...float64) *onnxpb.TensorProto {
	return encodeTensor(name, tensor.FromFloats(ir.T(ir.F32, shape...), v))
}

func model(opset int64, g *onnxpb.GraphProto) []byte {
	m := &onnxpb.ModelProto{IrVersion: ptr(int64(8)), Graph: g,
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: ptr(""), Version: ptr(opset)}}}
	data, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return data
}

// linear is y = relu(x·Wᵀ + b) with a symbolic batch, as torch.onnx.export writes nn.Linear.
func linear() []byte {
	return model(13, &onnxpb.GraphProto{
		Name:  ptr("torch_jit"),
		Input: []*onnxpb.ValueInfoProto{valueInfo("input", onnxFloat, "batch", 2)},
		Initializer: []*onnxpb.TensorProto{
			floats("fc.weight", []int{3, 2}, 1, 2, 3, 4, 5, 6),
			floats("fc.bias", []int{3}, 0.5, -100, 0),
		},
		Node: []*onnxpb.NodeProto{
			nodeP("Gemm", "/fc/Gemm", []string{"input", "fc.weight", "fc.bias"}, []string{"/fc/Gemm_output_0"},
				&onnxpb.AttributeProto{Name: ptr("transB"), Type: onnxpb.AttributeProto_INT.Enum(), I: ptr(int64(1))}),
			nodeP("Relu", "/relu/Relu", []string{"/fc/Gemm_output_0"}, []string{"output"}),
		},
		Output: []*onnxpb.ValueInfoProto{valueInfo("output", onnxFloat, "batch", 3)},
	})
}

func TestImportLinear(t *testing.T) {
	_, err := Import("linear.onnx", linear(), "", Options{})
	want := `linear.onnx: input "input": dimension 0 is symbolic ("batch"): fix it with --shape input=Nx2, or bound it with --max-shape input=Nx2`
	if err == nil || err.Error() != want {
		t.Fatalf("without --shape: got %v, want %s", err, want)
	}
	m, err := Import("linear.onnx", linear(), "", Options{Shapes: map[string][]int{"input": {2, 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if p := m.Graph.Lookup("fc.weight"); p == nil || p.Op != ir.OpParam || !p.Type.Equal(ir.T(ir.F32, 3, 2)) {
		t.Fatalf("fc.weight is not a f32[3,2] parameter:\n%s", m.Graph)
	}
	if got := m.Weights.Names(); !slices.Equal(got, []string{"fc.bias", "fc.weight"}) {
		t.Fatalf("weights %v, want fc.bias and fc.weight", got)
	}
	weights, err := m.Weights.Map()
	if err != nil {
		t.Fatal(err)
	}
	x := tensor.FromFloats(ir.T(ir.F32, 2, 2), []float64{1, 1, -1, 2})
	out, err := ref.Run(m.Graph, map[string]*tensor.Tensor{"input": x}, weights)
	if err != nil {
		t.Fatal(err)
	}
	// x·Wᵀ = [[3,7,11],[3,5,7]]; + b = [[3.5,-93,11],[3.5,-95,7]]; relu.
	want2 := []float64{3.5, 0, 11, 3.5, 0, 7}
	if got := out["output"].F; !slices.Equal(got, want2) {
		t.Fatalf("output %v, want %v", got, want2)
	}
	if _, err := Import("linear.onnx", linear(), "", Options{Shapes: map[string][]int{"input": {2, 5}}}); err == nil ||
		!strings.Contains(err.Error(), "dimension 1 is 5, the model declares 2") {
		t.Fatalf("--shape against a fixed dim: %v", err)
	}
}

// reshapeModel reshapes x by the value of a second input.
func reshapeModel() []byte {
	return model(13, &onnxpb.GraphProto{
		Name:   ptr("r"),
		Input:  []*onnxpb.ValueInfoProto{valueInfo("x", onnxFloat, 2, 3), valueInfo("shape", onnxInt64, 2)},
		Node:   []*onnxpb.NodeProto{nodeP("Reshape", "r1", []string{"x", "shape"}, []string{"y"})},
		Output: []*onnxpb.ValueInfoProto{valueInfo("y", onnxFloat)},
	})
}

func TestConstInputs(t *testing.T) {
	_, err := Import("m.onnx", reshapeModel(), "", Options{})
	var nc *NeedConst
	if !errors.As(err, &nc) || nc.Input != "shape" {
		t.Fatalf("got %v, want a NeedConst for shape", err)
	}
	want := `m.onnx: node 0 (Reshape "r1"): input "shape" determines the shape of node 0 (Reshape "r1"), which gcomp needs at compile time: bind it with --const shape=FILE.pb|FILE.npy`
	if err.Error() != want {
		t.Fatalf("got\n%v\nwant\n%s", err, want)
	}
	shape := tensor.FromFloats(ir.T(ir.I64, 2), []float64{3, -1})
	m, err := Import("m.onnx", reshapeModel(), "", Options{Consts: map[string]*tensor.Tensor{"shape": shape}})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Graph.Inputs()) != 1 || !m.Graph.Outputs[0].Value.Type.Equal(ir.T(ir.F32, 3, 2)) {
		t.Fatalf("bound shape input: want one input and y : f32[3,2], got\n%s", m.Graph)
	}
}

func TestUnsupported(t *testing.T) {
	data := model(13, &onnxpb.GraphProto{
		Name:        ptr("u"),
		Input:       []*onnxpb.ValueInfoProto{valueInfo("x", onnxFloat, 1, 1, 2, 2)},
		Initializer: []*onnxpb.TensorProto{floats("scales", []int{4}, 1, 1, 2, 2)},
		Node: []*onnxpb.NodeProto{
			nodeP("Relu", "r", []string{"x"}, []string{"a"}),
			nodeP("Resize", "up1", []string{"a", "", "scales"}, []string{"y"}, attrS("coordinate_transformation_mode", "half_pixel_symmetric")),
		},
		Output: []*onnxpb.ValueInfoProto{valueInfo("y", onnxFloat)},
	})
	_, err := Import("model.onnx", data, "", Options{})
	want := `model.onnx: node 1 (Resize "up1"): coordinate_transformation_mode "half_pixel_symmetric" is not supported (supported: half_pixel, pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn, tf_crop_and_resize)`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	if _, ok := IsUnsupported(err); !ok {
		t.Fatalf("%v is not marked unsupported", err)
	}
}

func TestBadFiles(t *testing.T) {
	good := linear()
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"truncated", good[:len(good)/2], "not a valid ONNX model"},
		{"garbage", []byte("\xff\xff\xff\xff"), "not a valid ONNX model"},
		{"wrong size", model(13, &onnxpb.GraphProto{
			Name:        ptr("w"),
			Initializer: []*onnxpb.TensorProto{{Name: ptr("w"), Dims: []int64{4}, DataType: ptr(int32(onnxFloat)), RawData: []byte{1, 2, 3}}},
			Output:      []*onnxpb.ValueInfoProto{valueInfo("w", onnxFloat)},
		}), "f32[4] needs 16 bytes of raw_data, has 3"},
		{"huge dims", model(13, &onnxpb.GraphProto{
			Name:        ptr("w"),
			Initializer: []*onnxpb.TensorProto{{Name: ptr("w"), Dims: []int64{1 << 20, 1 << 20}, DataType: ptr(int32(onnxFloat))}},
			Output:      []*onnxpb.ValueInfoProto{valueInfo("w", onnxFloat)},
		}), "has more than 2147483647 elements"},
		{"unknown domain", func() []byte {
			m := &onnxpb.ModelProto{IrVersion: ptr(int64(8)), Graph: &onnxpb.GraphProto{Name: ptr("d")},
				OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: ptr("com.example"), Version: ptr(int64(1))}}}
			b, _ := proto.Marshal(m)
			return b
		}(), `domains "com.example" are not supported`},
		{"undefined input", model(13, &onnxpb.GraphProto{
			Name:   ptr("u"),
			Node:   []*onnxpb.NodeProto{nodeP("Relu", "r", []string{"nowhere"}, []string{"y"})},
			Output: []*onnxpb.ValueInfoProto{valueInfo("y", onnxFloat)},
		}), `node 0 (Relu "r"): input "nowhere" is not defined before this node`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Import("bad.onnx", tc.data, "", Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "bad.onnx: ") {
				t.Fatalf("got %v, want bad.onnx: ...%s...", err, tc.want)
			}
		})
	}
}

// externalModel's weight w (f32[2]) lives in a file beside the model.
func externalModel(loc string, offset, length string) []byte {
	w := &onnxpb.TensorProto{Name: ptr("w"), Dims: []int64{2}, DataType: ptr(int32(onnxFloat)),
		DataLocation: onnxpb.TensorProto_EXTERNAL.Enum()}
	for _, kv := range [][2]string{{"location", loc}, {"offset", offset}, {"length", length}} {
		if kv[1] != "" {
			w.ExternalData = append(w.ExternalData, &onnxpb.StringStringEntryProto{Key: ptr(kv[0]), Value: ptr(kv[1])})
		}
	}
	return model(13, &onnxpb.GraphProto{
		Name:        ptr("e"),
		Input:       []*onnxpb.ValueInfoProto{valueInfo("x", onnxFloat, 2)},
		Initializer: []*onnxpb.TensorProto{w},
		Node:        []*onnxpb.NodeProto{nodeP("Add", "a", []string{"x", "w"}, []string{"y"})},
		Output:      []*onnxpb.ValueInfoProto{valueInfo("y", onnxFloat, 2)},
	})
}

func TestExternalData(t *testing.T) {
	dir := t.TempDir()
	w := tensor.FromFloats(ir.T(ir.F32, 2), []float64{1.5, -2})
	if err := os.WriteFile(filepath.Join(dir, "weights.bin"), append([]byte("PAD!"), w.Bytes()...), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Import("e.onnx", externalModel("weights.bin", "4", "8"), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.Weights.Tensor("w"); err != nil || !slices.Equal(got.F, []float64{1.5, -2}) {
		t.Fatalf("w = %v, %v", got, err)
	}
	for _, tc := range []struct{ loc, off, length, want string }{
		{"../weights.bin", "", "", "outside the model's folder"},
		{"/etc/passwd", "", "", "outside the model's folder"},
		{"sub/../../x", "", "", "outside the model's folder"},
		{"weights.bin", "8", "", "past the file's end"},
		{"weights.bin", "0", "12", "length 12, but the tensor needs 8 bytes"},
		{"weights.bin", "-1", "", `bad offset "-1"`},
		{"missing.bin", "", "", "missing.bin: no such file"},
	} {
		_, err := Import("e.onnx", externalModel(tc.loc, tc.off, tc.length), dir, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s at %s: got %v, want %q", tc.loc, tc.off, err, tc.want)
		}
	}
	if _, err := Import("e.onnx", externalModel("weights.bin", "4", "8"), "", Options{}); err == nil {
		t.Error("external data without a folder was read")
	}
}

// FuzzImportONNX feeds corrupted models to the importer: it must return a model that verifies
// or an error, never panic or hang.
func FuzzImportONNX(f *testing.F) {
	f.Add(linear())
	f.Add(reshapeModel())
	f.Add(externalModel("weights.bin", "0", "8"))
	f.Add(model(13, &onnxpb.GraphProto{
		Name:  ptr("c"),
		Input: []*onnxpb.ValueInfoProto{valueInfo("x", onnxFloat, 1, 2, 4, 4)},
		Initializer: []*onnxpb.TensorProto{floats("w", []int{3, 2, 3, 3}, make([]float64, 54)...),
			encodeTensor("axes", tensor.FromFloats(ir.T(ir.I64, 1), []float64{1}))},
		Node: []*onnxpb.NodeProto{
			nodeP("Conv", "c", []string{"x", "w"}, []string{"a"}, attrInts("pads", 1, 1, 1, 1)),
			nodeP("MaxPool", "p", []string{"a"}, []string{"b"}, attrInts("kernel_shape", 2, 2), attrInts("strides", 2, 2)),
			nodeP("Shape", "s", []string{"b"}, []string{"s"}),
			nodeP("ReduceSum", "r", []string{"b", "axes"}, []string{"y"}),
			nodeP("Softmax", "sm", []string{"y"}, []string{"z"}),
		},
		Output: []*onnxpb.ValueInfoProto{valueInfo("z", onnxFloat), valueInfo("s", onnxInt64)},
	}))
	dir := f.TempDir()
	os.WriteFile(filepath.Join(dir, "weights.bin"), make([]byte, 8), 0o644)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Import("fuzz.onnx", data, dir, Options{Shapes: map[string][]int{"input": {1, 2}}})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.onnx: ") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		if m.Graph == nil || len(m.Graph.Outputs) == 0 {
			t.Fatal("a model without outputs was accepted")
		}
	})
}
