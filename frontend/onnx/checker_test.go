package onnx

import (
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

func attrF(name string, v float32) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: ptr(name), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: ptr(v)}
}

func attrI(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: ptr(name), Type: onnxpb.AttributeProto_INT.Enum(), I: ptr(v)}
}

func int64sTensor(name string, shape []int, v ...int64) *onnxpb.TensorProto {
	x := tensor.New(ir.T(ir.I64, shape...))
	copy(x.I, v)
	return encodeTensor(name, x)
}

// oneNode is a model of one node over x (f32[2,4]) and the given initializers, its output y.
func oneNode(n *onnxpb.NodeProto, inits ...*onnxpb.TensorProto) []byte {
	return model(13, &onnxpb.GraphProto{
		Name:        ptr("m"),
		Input:       []*onnxpb.ValueInfoProto{valueInfo("x", onnxFloat, 2, 4)},
		Initializer: inits,
		Node:        []*onnxpb.NodeProto{n},
		Output:      []*onnxpb.ValueInfoProto{valueInfo("y", onnxFloat)},
	})
}

// Models onnx.checker rejects are refused, with an error naming the node where a node is at fault,
// instead of being imported with a guess (an axis of the wrong type read as 0, an update dropped,
// an empty Range, the last of two initializers).
func TestCheckerRejects(t *testing.T) {
	rangeOf := func(limit float64) []byte {
		return model(13, &onnxpb.GraphProto{
			Name:        ptr("r"),
			Initializer: []*onnxpb.TensorProto{floats("start", nil, 0), floats("limit", nil, limit), floats("delta", nil, 1)},
			Node:        []*onnxpb.NodeProto{nodeP("Range", "rg", []string{"start", "limit", "delta"}, []string{"y"})},
			Output:      []*onnxpb.ValueInfoProto{valueInfo("y", onnxFloat)},
		})
	}
	softmax := func(attrs ...*onnxpb.AttributeProto) []byte {
		return oneNode(nodeP("Softmax", "sm", []string{"x"}, []string{"y"}, attrs...))
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"attribute of the wrong type", softmax(attrF("axis", 1)),
			`node 0 (Softmax "sm"): attribute "axis" is FLOAT, but Softmax declares it INT`},
		{"attribute twice", softmax(attrI("axis", 1), attrI("axis", 0)),
			`node 0 (Softmax "sm"): attribute "axis" is given twice`},
		{"attribute without a type", softmax(&onnxpb.AttributeProto{Name: ptr("axis"), I: ptr(int64(1))}),
			`node 0 (Softmax "sm"): attribute "axis" has no type (UNDEFINED)`},
		{"unknown attribute", softmax(attrI("axes", 1)),
			`node 0 (Softmax "sm"): attribute "axes" is not an attribute of Softmax at opset 13 (its attributes: axis)`},
		{"ScatterND index out of range", oneNode(nodeP("ScatterND", "sc", []string{"x", "i", "u"}, []string{"y"}),
			int64sTensor("i", []int{1, 2}, 9, 9), floats("u", []int{1}, 5)),
			`node 0 (ScatterND "sc"): index 9 (element 0 of the indices) is out of range [-2, 2) for dim 0 of data f32[2,4]`},
		{"ScatterElements index out of range", oneNode(nodeP("ScatterElements", "se", []string{"x", "i", "u"}, []string{"y"}),
			int64sTensor("i", []int{1, 1}, 4), floats("u", []int{1, 1}, 5)),
			`node 0 (ScatterElements "se"): index 4 (element 0 of the indices) is out of range [-2, 2) for axis 0 of data f32[2,4]`},
		{"Range to inf", rangeOf(math.Inf(1)), `node 0 (Range "rg"): limit is +Inf; Range needs finite bounds`},
		{"Range to nan", rangeOf(math.NaN()), `node 0 (Range "rg"): limit is NaN; Range needs finite bounds`},
		{"initializer twice", oneNode(nodeP("Add", "a", []string{"x", "w"}, []string{"y"}),
			floats("w", []int{2, 4}, 1, 1, 1, 1, 1, 1, 1, 1), floats("w", []int{2, 4}, 2, 2, 2, 2, 2, 2, 2, 2)),
			`bad.onnx: initializer "w" is given twice`},
		{"input twice", model(13, &onnxpb.GraphProto{
			Name:   ptr("m"),
			Input:  []*onnxpb.ValueInfoProto{valueInfo("x", onnxFloat, 2, 4), valueInfo("x", onnxFloat, 3)},
			Node:   []*onnxpb.NodeProto{nodeP("Relu", "r", []string{"x"}, []string{"y"})},
			Output: []*onnxpb.ValueInfoProto{valueInfo("y", onnxFloat)},
		}), `bad.onnx: input "x" is declared twice`},
		{"input over an initializer of another shape", model(13, &onnxpb.GraphProto{
			Name:        ptr("m"),
			Input:       []*onnxpb.ValueInfoProto{valueInfo("w", onnxFloat, 9, 9)},
			Initializer: []*onnxpb.TensorProto{floats("w", []int{2, 4}, 1, 2, 3, 4, 5, 6, 7, 8)},
			Node:        []*onnxpb.NodeProto{nodeP("Relu", "r", []string{"w"}, []string{"y"})},
			Output:      []*onnxpb.ValueInfoProto{valueInfo("y", onnxFloat)},
		}), `bad.onnx: input "w": its initializer is f32[2,4], shape [2 4]: dimension 0 is 2, the model declares 9`},
		{"input over an initializer of another dtype", model(13, &onnxpb.GraphProto{
			Name:        ptr("m"),
			Input:       []*onnxpb.ValueInfoProto{valueInfo("w", onnxInt64, 2)},
			Initializer: []*onnxpb.TensorProto{floats("w", []int{2}, 1, 2)},
			Node:        []*onnxpb.NodeProto{nodeP("Relu", "r", []string{"w"}, []string{"y"})},
			Output:      []*onnxpb.ValueInfoProto{valueInfo("y", onnxFloat)},
		}), `bad.onnx: input "w": its initializer is f32[2], the input declares i64`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Import("bad.onnx", tc.data, "", Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "bad.onnx: ") {
				t.Fatalf("got %v\nwant bad.onnx: ...%s...", err, tc.want)
			}
		})
	}
}

// A scatter index known only at run time is checked when the model runs, as Gather's is: an index
// out of range is an error, never an update silently dropped; one in range (negative ones
// counting from the end) scatters.
func TestScatterNDIndexAtRunTime(t *testing.T) {
	data := model(13, &onnxpb.GraphProto{
		Name:        ptr("m"),
		Input:       []*onnxpb.ValueInfoProto{valueInfo("x", onnxFloat, 2, 4), valueInfo("i", onnxInt64, 1, 2)},
		Initializer: []*onnxpb.TensorProto{floats("u", []int{1}, 5)},
		Node:        []*onnxpb.NodeProto{nodeP("ScatterND", "sc", []string{"x", "i", "u"}, []string{"y"})},
		Output:      []*onnxpb.ValueInfoProto{valueInfo("y", onnxFloat, 2, 4)},
	})
	m, err := Import("sc.onnx", data, "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	params, err := m.Weights.Map()
	if err != nil {
		t.Fatal(err)
	}
	x := tensor.New(ir.T(ir.F32, 2, 4))
	for _, tc := range []struct {
		idx  []int64
		want string // an error, or "" for a run whose y[1][3] is 5
	}{
		{[]int64{1, 3}, ""},
		{[]int64{-1, -1}, ""},
		{[]int64{9, 9}, "index 9"},
		{[]int64{0, 4}, "index 4"},
		{[]int64{-3, 0}, "index -1"},
	} {
		i := tensor.New(ir.T(ir.I64, 1, 2))
		copy(i.I, tc.idx)
		outs, err := ref.Run(m.Graph, map[string]*tensor.Tensor{"x": x, "i": i}, params)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.idx, err)
		case tc.want == "" && outs["y"].F[7] != 5:
			t.Errorf("%v: y = %v, want 5 at [1][3]", tc.idx, outs["y"].F)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: got %v, want an error with %q", tc.idx, err, tc.want)
		}
	}
}
