package onnx

import (
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// Einsum's ellipses and diagonals, against values worked out by hand.
func TestEinsumEllipsisDiagonal(t *testing.T) {
	iota := func(shape ...int) *tensor.Tensor {
		typ := ir.T(ir.F32, shape...)
		v := make([]float64, typ.Shape.NumElements())
		for i := range v {
			v[i] = float64(i)
		}
		return tensor.FromFloats(typ, v)
	}
	for _, tc := range []struct {
		eq     string
		in     []*tensor.Tensor
		shape  []int
		want   []float64
		errSub string
	}{
		// x[b] = [[0,1],[2,3]], [[4,5],[6,7]]: diagonals [0,3], [4,7].
		{"...ii->...i", []*tensor.Tensor{iota(2, 2, 2)}, []int{2, 2}, []float64{0, 3, 4, 7}, ""},
		{"ii->i", []*tensor.Tensor{iota(3, 3)}, []int{3}, []float64{0, 4, 8}, ""},
		{"ii", []*tensor.Tensor{iota(3, 3)}, []int{}, []float64{12}, ""}, // the trace
		{"iji->j", []*tensor.Tensor{iota(2, 3, 2)}, []int{3}, []float64{0 + 7, 2 + 9, 4 + 11}, ""},
		// Batched matmul with the batch as an ellipsis; [1,2]·[2,1] per batch.
		{"...ij,...jk->...ik", []*tensor.Tensor{iota(2, 1, 2), iota(2, 2, 1)}, []int{2, 1, 1}, []float64{0*0 + 1*1, 2*2 + 3*3}, ""},
		// Implicit output: the ellipsis first, then the letters used once (sorted).
		{"...j,j", []*tensor.Tensor{iota(2, 3), iota(3)}, []int{2}, []float64{0 + 1 + 4, 0 + 4 + 10}, ""},
		{"i...", []*tensor.Tensor{iota(2, 3)}, []int{3, 2}, []float64{0, 3, 1, 4, 2, 5}, ""},
		// Ellipses of different ranks align from the right.
		{"...i,...i->...", []*tensor.Tensor{iota(2, 3, 2), iota(3, 2)}, []int{2, 3}, []float64{1, 13, 41, 7, 43, 95}, ""},
		{"...i,...i->...", []*tensor.Tensor{iota(2, 2), iota(1, 2)}, nil, nil, "broadcasting dims of sizes 2 and 1"},
		{"ij->i", []*tensor.Tensor{iota(2, 3)}, []int{2}, []float64{3, 12}, ""},
		{"ii->i", []*tensor.Tensor{iota(2, 3)}, nil, nil, "sizes 2 and 3"},
		{"i.j->i", []*tensor.Tensor{iota(2, 3)}, nil, nil, "outside an ellipsis"},
	} {
		var inputs []*onnxpb.ValueInfoProto
		var names []string
		feeds := map[string]*tensor.Tensor{}
		for i, x := range tc.in {
			name := string(rune('a' + i))
			names = append(names, name)
			inputs = append(inputs, valueInfo(name, onnxFloat, anys(x.Type.Shape)...))
			feeds[name] = x
		}
		data := model(13, &onnxpb.GraphProto{
			Name:  ptr("e"),
			Input: inputs,
			Node: []*onnxpb.NodeProto{nodeP("Einsum", "e", names, []string{"y"},
				&onnxpb.AttributeProto{Name: ptr("equation"), Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte(tc.eq)})},
			Output: []*onnxpb.ValueInfoProto{{Name: ptr("y")}},
		})
		m, err := Import("e.onnx", data, "", Options{})
		if tc.errSub != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errSub) {
				t.Errorf("%s: got %v, want an error with %q", tc.eq, err, tc.errSub)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.eq, err)
			continue
		}
		out, err := ref.Run(m.Graph, feeds, nil)
		if err != nil {
			t.Fatal(err)
		}
		y := out["y"]
		if !slices.Equal([]int(y.Type.Shape), tc.shape) || !slices.Equal(y.F, tc.want) {
			t.Errorf("%s: %s %v, want %v %v", tc.eq, y.Type, y.F, tc.shape, tc.want)
		}
	}
}
