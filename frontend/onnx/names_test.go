package onnx

import (
	"slices"
	"testing"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// Names maps the file's names (torch.onnx.export's defaults) to the graph's and back; a --const
// input is no graph input.
func TestNames(t *testing.T) {
	data := model(13, &onnxpb.GraphProto{
		Name:  ptr("torch_jit"),
		Input: []*onnxpb.ValueInfoProto{valueInfo("onnx::Gemm_0", onnxFloat, 2, 2), valueInfo("onnx::Reshape_1", onnxInt64, 1)},
		Node: []*onnxpb.NodeProto{
			nodeP("Relu", "r", []string{"onnx::Gemm_0"}, []string{"4"}),
			nodeP("Reshape", "s", []string{"4", "onnx::Reshape_1"}, []string{"a/b"}),
		},
		Output: []*onnxpb.ValueInfoProto{valueInfo("4", onnxFloat, 2, 2), valueInfo("a/b", onnxFloat, 4)},
	})
	shape := int64sTensor("onnx::Reshape_1", []int{1}, 4)
	c, err := Tensor(shape, "")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Import("m.onnx", data, "", Options{Consts: map[string]*tensor.Tensor{"onnx::Reshape_1": c}})
	if err != nil {
		t.Fatal(err)
	}
	n := m.Names()
	if ir, ok := n.Input("onnx::Gemm_0"); !ok || ir != "onnx__Gemm_0" || n.InputFile(ir) != "onnx::Gemm_0" {
		t.Errorf("Input(onnx::Gemm_0) = %q, %v", ir, ok)
	}
	if _, ok := n.Input("onnx::Reshape_1"); ok {
		t.Error("the --const input is a graph input")
	}
	if ir, ok := n.Output("4"); !ok || ir != "v4" || n.OutputFile("v4") != "4" || n.OutputFile("a_b") != "a/b" {
		t.Errorf("Output(4) = %q, %v; OutputFile(a_b) = %q", ir, ok, n.OutputFile("a_b"))
	}
	if got := n.InputList(); got != `"onnx::Gemm_0"` {
		t.Errorf("InputList = %s", got)
	}
}

// SafeFileNames makes every tensor name one file name: no separators, no leading dot, no two
// alike (nor alike but for case).
func TestSafeFileNames(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"4", "onnx::Gemm_0", "fc.weight", "x-1"}, []string{"4", "onnx__Gemm_0", "fc.weight", "x-1"}},
		{[]string{"../x", "a/b", `c\d`, ".", "..", ".hidden", ""}, []string{"_._x", "a_b", "c_d", "_", "_.", "_hidden", "__2"}},
		{[]string{"a:b", "a_b", "a?b"}, []string{"a_b", "a_b_2", "a_b_3"}},
		{[]string{"Y", "y", "y\n", "é"}, []string{"Y", "y_2", "y_", "_"}},
	} {
		got := SafeFileNames(tc.in)
		if !slices.Equal(got, tc.want) {
			t.Errorf("SafeFileNames(%q) = %q, want %q", tc.in, got, tc.want)
		}
		for _, f := range got {
			if err := tensorio.CheckFileName(f); err != nil || f == "." || f == ".." {
				t.Errorf("%q: %v", f, err)
			}
		}
	}
}
