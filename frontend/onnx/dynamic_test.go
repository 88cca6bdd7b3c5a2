package onnx

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// viewModel is torch's x.view(x.size(0), -1) after an add of two inputs sharing the dim_param
// batch: Shape -> Gather -> Unsqueeze -> Concat -> Reshape. x's axis 1 is dims[0], y's first
// axis dims[1] (a dim_param, or "" for an unnamed dynamic axis).
func viewModel(dims ...any) []byte {
	return model(13, &onnxpb.GraphProto{
		Name:  ptr("view"),
		Input: []*onnxpb.ValueInfoProto{valueInfo("x", onnxFloat, "batch", dims[0], 2), valueInfo("y", onnxFloat, dims[1], 2, 2)},
		Node: []*onnxpb.NodeProto{
			constNode(int64sTensor("zero", nil, 0)), constNode(int64sTensor("axes", []int{1}, 0)),
			constNode(int64sTensor("rest", []int{1}, -1)),
			nodeP("Add", "add", []string{"x", "y"}, []string{"a"}),
			nodeP("Shape", "shape", []string{"a"}, []string{"s"}),
			nodeP("Gather", "gather", []string{"s", "zero"}, []string{"b"}),
			nodeP("Unsqueeze", "unsqueeze", []string{"b", "axes"}, []string{"bu"}),
			nodeP("Concat", "concat", []string{"bu", "rest"}, []string{"shp"}, attrI("axis", 0)),
			nodeP("Reshape", "view", []string{"a", "shp"}, []string{"z"}),
		},
		Output: []*onnxpb.ValueInfoProto{valueInfo("z", onnxFloat, "batch", 4)},
	})
}

// constNode is a Constant node of t, named as t (torch exports the indices of its shape
// arithmetic as Constant nodes).
func constNode(t *onnxpb.TensorProto) *onnxpb.NodeProto {
	return nodeP("Constant", t.GetName(), nil, []string{t.GetName()},
		&onnxpb.AttributeProto{Name: ptr("value"), Type: onnxpb.AttributeProto_TENSOR.Enum(), T: t})
}

// TestMaxShape: --max-shape turns an input's dim_params into ranged dims [1, bound] that inputs
// sharing the dim_param share; the Shape/Reshape pattern of torch's view keeps the leading dim
// symbolic; the imported graph runs at any size in range. Contradictions are one error naming
// the input, the dim and both values.
func TestMaxShape(t *testing.T) {
	for _, c := range []struct {
		name string
		data []byte
		max  map[string][]int
		fix  map[string][]int
		want string // the output's type, or the error
	}{
		{"shared", viewModel(2, "batch"), map[string][]int{"x": {8, 2, 2}}, nil, "f32[batch,4]"},
		{"both bounded", viewModel(2, "batch"), map[string][]int{"x": {8, 2, 2}, "y": {8, 2, 2}}, nil, "f32[batch,4]"},
		{"odd dim_param", viewModel("n (heads)", "batch"), map[string][]int{"x": {8, 2, 2}, "y": {8, 2, 2}},
			nil, `operands do not broadcast: dim 1 is n__heads_ and 2`},
		{"bounds disagree", viewModel(2, "batch"), map[string][]int{"x": {8, 2, 2}, "y": {4, 2, 2}}, nil,
			`--max-shape y: dim 0 ("batch") is 4, but --max-shape x bounds "batch" by 8 (its dim 0)`},
		{"static dim", viewModel(2, "batch"), map[string][]int{"x": {8, 3, 2}}, nil,
			`--max-shape x: dim 1 is 3, but input "x" declares it static, 2`},
		{"no such input", viewModel(2, "batch"), map[string][]int{"w": {8, 2, 2}}, nil, `--max-shape w: the model has no input "w" (inputs: "x", "y")`},
		{"zero bound", viewModel(2, "batch"), map[string][]int{"x": {0, 2, 2}}, nil, `--max-shape x: dim 0 ("batch") is 0, want a bound of at least 1`},
		{"rank", viewModel(2, "batch"), map[string][]int{"x": {8, 2}}, nil, `--max-shape x: shape [8 2] has rank 2, input "x" has rank 3`},
		{"with --shape", viewModel(2, "batch"), map[string][]int{"x": {8, 2, 2}}, map[string][]int{"x": {8, 2, 2}}, `input "x" has a --shape too`},
		{"y unbounded alone", viewModel(2, "other"), map[string][]int{"x": {8, 2, 2}}, nil, `dimension 0 is symbolic ("other"): fix it with --shape y=Nx2x2`},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := Import("v.onnx", c.data, "", Options{MaxShapes: c.max, Shapes: c.fix})
			if err != nil {
				if !strings.Contains(err.Error(), c.want) {
					t.Fatalf("error %q, want %q", err, c.want)
				}
				return
			}
			if got := m.Graph.Outputs[0].Value.Type.String(); got != c.want {
				t.Fatalf("output %s, want %s\n%s", got, c.want, m.Graph)
			}
			if d := m.Graph.Dims; len(d) != 1 || d[0] != (ir.Dim{Name: "batch", Lo: 1, Hi: 8}) {
				t.Fatalf("dims %v, want batch in [1,8]", d)
			}
			for _, n := range []int{1, 3, 8} {
				x, y := tensor.New(ir.T(ir.F32, n, 2, 2)), tensor.New(ir.T(ir.F32, n, 2, 2))
				for i := range x.F {
					x.F[i], y.F[i] = float64(i), float64(2*i)
				}
				out, err := ref.Run(m.Graph, map[string]*tensor.Tensor{"x": x, "y": y}, nil)
				if err != nil {
					t.Fatalf("batch %d: %v", n, err)
				}
				z := out["z"]
				if !z.Type.Equal(ir.T(ir.F32, n, 4)) || z.F[len(z.F)-1] != float64(3*(4*n-1)) {
					t.Fatalf("batch %d: z = %v", n, z)
				}
			}
		})
	}
}

// An unnamed dynamic axis (neither a size nor a dim_param) bounded by --max-shape gets a dim of
// its own, named after the input and the axis.
func TestMaxShapeUnnamedDim(t *testing.T) {
	in := valueInfo("x.in", onnxFloat, 1, 4)
	in.Type.GetTensorType().Shape.Dim[0] = &onnxpb.TensorShapeProto_Dimension{}
	data := model(13, &onnxpb.GraphProto{Name: ptr("u"), Input: []*onnxpb.ValueInfoProto{in},
		Node: []*onnxpb.NodeProto{nodeP("Relu", "r", []string{"x.in"}, []string{"y"})}, Output: []*onnxpb.ValueInfoProto{valueInfo("y", onnxFloat)}})
	m, err := Import("u.onnx", data, "", Options{MaxShapes: map[string][]int{"x.in": {5, 4}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Graph.Outputs[0].Value.Type.String(); got != "f32[x_in_d0,4]" || m.Graph.Dims[0] != (ir.Dim{Name: "x_in_d0", Lo: 1, Hi: 5}) {
		t.Fatalf("y is %s, dims %v", got, m.Graph.Dims)
	}
	if _, err := Import("u.onnx", data, "", Options{MaxShapes: map[string][]int{"x.in": {0, 4}}}); err == nil || !strings.Contains(err.Error(), "dim 0 (unnamed) is 0, want a bound of at least 1") {
		t.Fatalf("bound 0: %v", err)
	}
}

// TestSizesRefused: a size of an input with --max-shape used other than as a Reshape's shape
// (as a number in the graph, a ConstantOfShape's shape, an Expand's) is refused by name.
func TestSizesRefused(t *testing.T) {
	for _, c := range []struct {
		name  string
		nodes []*onnxpb.NodeProto
		want  string
	}{
		{"ConstantOfShape", []*onnxpb.NodeProto{nodeP("Shape", "s", []string{"x"}, []string{"s"}),
			nodeP("ConstantOfShape", "c", []string{"s"}, []string{"y"})},
			`node 1 (ConstantOfShape "c"): the shape of node 1 (ConstantOfShape "c") depends on the size [batch,4] of an input with --max-shape`},
		{"as a value", []*onnxpb.NodeProto{nodeP("Shape", "s", []string{"x"}, []string{"s"}),
			nodeP("Cast", "c", []string{"s"}, []string{"f"}, attrI("to", 1)), nodeP("Mul", "m", []string{"x", "f"}, []string{"y"})},
			`depends on the size [batch,4] of an input with --max-shape`},
		{"Div of a difference", []*onnxpb.NodeProto{nodeP("Shape", "s", []string{"x"}, []string{"s"}),
			constNode(int64sTensor("k", []int{2}, 5, 2)), nodeP("Sub", "d", []string{"s", "k"}, []string{"d"}),
			nodeP("Div", "q", []string{"d", "k"}, []string{"q"}), nodeP("Reshape", "r", []string{"x", "q"}, []string{"y"})},
			`op div depends on the size [batch-5,2] of an input with --max-shape`},
		{"Expand", []*onnxpb.NodeProto{nodeP("Shape", "s", []string{"x"}, []string{"s"}),
			nodeP("Expand", "e", []string{"x", "s"}, []string{"y"})},
			`the shape of node 1 (Expand "e") depends on the size [batch,4]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := model(13, &onnxpb.GraphProto{Name: ptr("r"), Input: []*onnxpb.ValueInfoProto{valueInfo("x", onnxFloat, "batch", 4)},
				Node: c.nodes, Output: []*onnxpb.ValueInfoProto{valueInfo("y", onnxFloat)}})
			_, err := Import("r.onnx", data, "", Options{MaxShapes: map[string][]int{"x": {8, 4}}})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			if _, ok := IsUnsupported(err); !ok {
				t.Fatalf("error %v is not marked unsupported", err)
			}
		})
	}
}

// FuzzImportMaxShape feeds corrupted models with dynamic axes to the importer with --max-shape:
// a model that verifies or an error, never a panic.
func FuzzImportMaxShape(f *testing.F) {
	f.Add(viewModel(2, "batch"))
	f.Add(viewModel("n", "batch"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Import("fuzz.onnx", data, "", Options{MaxShapes: map[string][]int{"x": {8, 2, 2}}})
		if err == nil && (m.Graph == nil || len(m.Graph.Outputs) == 0) {
			t.Fatal("a model without outputs was accepted")
		}
	})
}

// Integer arithmetic on sizes read by Shape computes expressions: x.view(x.size(0) * 2, -1).
func TestSizeArithmetic(t *testing.T) {
	data := model(13, &onnxpb.GraphProto{
		Name:  ptr("a"),
		Input: []*onnxpb.ValueInfoProto{valueInfo("x", onnxFloat, "batch", 2, 3)},
		Node: []*onnxpb.NodeProto{
			constNode(int64sTensor("zero", nil, 0)), constNode(int64sTensor("two", nil, 2)),
			constNode(int64sTensor("axes", []int{1}, 0)), constNode(int64sTensor("rest", []int{1}, -1)),
			nodeP("Shape", "s", []string{"x"}, []string{"s"}),
			nodeP("Gather", "g", []string{"s", "zero"}, []string{"b"}),
			nodeP("Mul", "m", []string{"b", "two"}, []string{"b2"}),
			nodeP("Unsqueeze", "u", []string{"b2", "axes"}, []string{"bu"}),
			nodeP("Concat", "c", []string{"bu", "rest"}, []string{"shp"}, attrI("axis", 0)),
			nodeP("Reshape", "r", []string{"x", "shp"}, []string{"y"}),
		},
		Output: []*onnxpb.ValueInfoProto{valueInfo("y", onnxFloat)},
	})
	m, err := Import("a.onnx", data, "", Options{MaxShapes: map[string][]int{"x": {8, 2, 3}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Graph.Outputs[0].Value.Type.String(); got != "f32[2*batch,3]" {
		t.Fatalf("y is %s, want f32[2*batch,3]", got)
	}
}
