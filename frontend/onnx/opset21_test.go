package onnx

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// Opsets 18 to 21: the reductions read their axes from the second input from opset 18 (and an
// axes attribute is refused there), and a node setting an attribute its op gained after opset 17
// that import does not implement is refused by name; opset 22 is past the importer's.
func TestOpsets18To21(t *testing.T) {
	reduce := func(opset int64, op string, axesInput bool, attrs ...*onnxpb.AttributeProto) []byte {
		in := []string{"x"}
		var inits []*onnxpb.TensorProto
		if axesInput {
			in = append(in, "axes")
			inits = append(inits, encodeTensor("axes", tensor.FromFloats(ir.T(ir.I64, 1), []float64{1})))
		}
		return model(opset, &onnxpb.GraphProto{Name: ptr("m"), Input: []*onnxpb.ValueInfoProto{valueInfo("x", onnxFloat, 2, 3)},
			Initializer: inits, Node: []*onnxpb.NodeProto{nodeP(op, "r", in, []string{"y"}, attrs...)},
			Output: []*onnxpb.ValueInfoProto{valueInfo("y", onnxFloat, 2)}})
	}
	x := tensor.FromFloats(ir.T(ir.F32, 2, 3), []float64{1, 2, 6, -4, 0.5, 0.5})
	for _, c := range []struct {
		name string
		data []byte
		want string // y, or the error
	}{
		{"ReduceMean 13, axes attribute", reduce(13, "ReduceMean", false, attrInts("axes", 1), attrI("keepdims", 0)), "[3 -1]"},
		{"ReduceMean 18, axes input", reduce(18, "ReduceMean", true, attrI("keepdims", 0)), "[3 -1]"},
		{"ReduceMax 20, axes input", reduce(20, "ReduceMax", true, attrI("keepdims", 0)), "[6 0.5]"},
		{"ReduceL1 21, axes input", reduce(21, "ReduceL1", true, attrI("keepdims", 0)), "[9 5]"},
		{"ReduceSumSquare 18, noop_with_empty_axes", reduce(18, "ReduceSumSquare", true, attrI("keepdims", 0), attrI("noop_with_empty_axes", 1)), "[41 16.5]"},
		{"ReduceMean 18, axes attribute", reduce(18, "ReduceMean", false, attrInts("axes", 1), attrI("keepdims", 0)),
			`attribute "axes" is not an attribute of ReduceMean at opset 18`},
		{"Resize 18, antialias", model(18, &onnxpb.GraphProto{Name: ptr("m"), Input: []*onnxpb.ValueInfoProto{valueInfo("x", onnxFloat, 1, 1, 2, 2)},
			Initializer: []*onnxpb.TensorProto{floats("scales", []int{4}, 1, 1, 2, 2)},
			Node:        []*onnxpb.NodeProto{nodeP("Resize", "r", []string{"x", "", "scales"}, []string{"y"}, attrI("antialias", 1))},
			Output:      []*onnxpb.ValueInfoProto{valueInfo("y", onnxFloat, 1, 1, 4, 4)}}),
			"Resize's attribute antialias (opset 18) is not supported"},
		{"Split 18, num_outputs", model(18, &onnxpb.GraphProto{Name: ptr("m"), Input: []*onnxpb.ValueInfoProto{valueInfo("x", onnxFloat, 2, 3)},
			Node:   []*onnxpb.NodeProto{nodeP("Split", "s", []string{"x"}, []string{"a", "b"}, attrI("axis", 1), attrI("num_outputs", 2))},
			Output: []*onnxpb.ValueInfoProto{valueInfo("a", onnxFloat, 2, 2), valueInfo("b", onnxFloat, 2, 1)}}),
			"Split's attribute num_outputs (opset 18) is not supported"},
		{"QuantizeLinear 21, block_size", model(21, &onnxpb.GraphProto{Name: ptr("m"), Input: []*onnxpb.ValueInfoProto{valueInfo("x", onnxFloat, 2, 4)},
			Initializer: []*onnxpb.TensorProto{floats("s", []int{2, 2}, 1, 1, 1, 1)},
			Node:        []*onnxpb.NodeProto{nodeP("QuantizeLinear", "q", []string{"x", "s"}, []string{"y"}, attrI("block_size", 2))},
			Output:      []*onnxpb.ValueInfoProto{valueInfo("y", onnxUint8, 2, 4)}}),
			"QuantizeLinear's attribute block_size (opset 21) is not supported"},
		{"opset 22", reduce(22, "ReduceMean", true), "opset 22 is not supported (supported: 7 to 21)"},
	} {
		m, err := Import("m.onnx", c.data, "", Options{})
		var got string
		if err != nil {
			got = err.Error()
		} else {
			params, err := m.Weights.Map()
			if err != nil {
				t.Fatal(err)
			}
			out, err := ref.Run(m.Graph, map[string]*tensor.Tensor{"x": x}, params)
			if err != nil {
				t.Fatal(err)
			}
			got = fmt.Sprint(out["y"].F)
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
