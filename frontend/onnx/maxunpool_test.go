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

// MaxUnpool's indices are flat over the whole output (MaxPool's Indices), channels included.
func TestMaxUnpool(t *testing.T) {
	for _, tc := range []struct {
		name   string
		idx    []float64
		outSh  []float64 // output_shape, if any
		shape  []int
		want   []float64
		errSub string
	}{
		{"two channels", []float64{1, 6}, nil, []int{1, 2, 2, 2}, []float64{0, 5, 0, 0, 0, 0, 6, 0}, ""},
		{"output_shape pads the high end", []float64{3, 4}, []float64{1, 2, 3, 2}, []int{1, 2, 3, 2},
			[]float64{0, 0, 0, 5, 0, 0, 6, 0, 0, 0, 0, 0}, ""},
		{"output_shape too small", []float64{0, 4}, []float64{1, 2, 1, 2}, nil, nil, "smaller than the unpooled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inputs := []string{"x", "i"}
			var inits []*onnxpb.TensorProto
			if tc.outSh != nil {
				inputs = append(inputs, "s")
				inits = append(inits, encodeTensor("s", tensor.FromFloats(ir.T(ir.I64, len(tc.outSh)), tc.outSh)))
			}
			data := model(13, &onnxpb.GraphProto{
				Name:        ptr("u"),
				Input:       []*onnxpb.ValueInfoProto{valueInfo("x", onnxFloat, 1, 2, 1, 1), valueInfo("i", onnxInt64, 1, 2, 1, 1)},
				Initializer: inits,
				Node: []*onnxpb.NodeProto{nodeP("MaxUnpool", "u", inputs, []string{"y"},
					attrInts("kernel_shape", 2, 2), attrInts("strides", 2, 2))},
				Output: []*onnxpb.ValueInfoProto{{Name: ptr("y")}},
			})
			m, err := Import("u.onnx", data, "", Options{})
			if tc.errSub != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSub) {
					t.Fatalf("got %v, want an error with %q", err, tc.errSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out, err := ref.Run(m.Graph, map[string]*tensor.Tensor{
				"x": tensor.FromFloats(ir.T(ir.F32, 1, 2, 1, 1), []float64{5, 6}),
				"i": tensor.FromFloats(ir.T(ir.I64, 1, 2, 1, 1), tc.idx),
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			y := out["y"]
			if !slices.Equal([]int(y.Type.Shape), tc.shape) || !slices.Equal(y.F, tc.want) {
				t.Fatalf("%s %v, want %v %v", y.Type, y.F, tc.shape, tc.want)
			}
		})
	}
}
