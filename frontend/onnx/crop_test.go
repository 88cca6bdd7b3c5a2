package onnx

import (
	"math"
	"testing"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// Resize's tf_crop_and_resize: the crop box in input coordinates, positions past the input
// set to extrapolation_value, and an axis of unchanged length still cropped.
func TestResizeCropAndResize(t *testing.T) {
	for _, tc := range []struct {
		mode  string
		roi   []float64
		sizes []float64
		want  []float64
	}{
		// Axis 1: sources i·(1.5·3)/2 = 0, 2.25, 4.5 (past 3: extrapolated).
		{"linear", []float64{0, 0, 1, 1.5}, []float64{1, 3}, []float64{0, 2.25, -7}},
		{"nearest", []float64{0, 0, 1, 1.5}, []float64{1, 3}, []float64{0, 2, -7}},
		// Same length (5), a shifted box: sources 1, 2, 3, 4, 5 → the last one outside.
		{"linear", []float64{0, 0.25, 1, 1.25}, []float64{1, 5}, []float64{1, 2, 3, 4, -7}},
	} {
		n := 4
		if tc.sizes[1] == 5 {
			n = 5
		}
		iota := make([]float64, n)
		for i := range iota {
			iota[i] = float64(i)
		}
		data := model(13, &onnxpb.GraphProto{
			Name:  ptr("r"),
			Input: []*onnxpb.ValueInfoProto{valueInfo("x", onnxFloat, 1, n)},
			Initializer: []*onnxpb.TensorProto{
				floats("roi", []int{4}, tc.roi...),
				encodeTensor("sizes", tensor.FromFloats(ir.T(ir.I64, 2), tc.sizes)),
			},
			Node: []*onnxpb.NodeProto{nodeP("Resize", "r", []string{"x", "roi", "", "sizes"}, []string{"y"},
				&onnxpb.AttributeProto{Name: ptr("coordinate_transformation_mode"), Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte("tf_crop_and_resize")},
				&onnxpb.AttributeProto{Name: ptr("mode"), Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte(tc.mode)},
				&onnxpb.AttributeProto{Name: ptr("nearest_mode"), Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte("floor")},
				&onnxpb.AttributeProto{Name: ptr("extrapolation_value"), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: ptr(float32(-7))})},
			Output: []*onnxpb.ValueInfoProto{{Name: ptr("y")}},
		})
		m, err := Import("r.onnx", data, "", Options{})
		if err != nil {
			t.Fatal(err)
		}
		out, err := ref.Run(m.Graph, map[string]*tensor.Tensor{"x": tensor.FromFloats(ir.T(ir.F32, 1, n), iota)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := out["y"].F
		if len(got) != len(tc.want) {
			t.Fatalf("%s %v: got %v, want %v", tc.mode, tc.roi, got, tc.want)
		}
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-6 {
				t.Fatalf("%s %v: got %v, want %v", tc.mode, tc.roi, got, tc.want)
			}
		}
	}
}
