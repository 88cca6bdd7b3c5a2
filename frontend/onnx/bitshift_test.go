package onnx

import (
	"testing"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// BitShift on uint8 against Go's shifts, every shift count from 0 to 9.
func TestBitShift(t *testing.T) {
	var xs, ys []float64
	for _, x := range []uint8{0, 1, 37, 128, 200, 255} {
		for y := uint8(0); y < 10; y++ {
			xs, ys = append(xs, float64(x)), append(ys, float64(y))
		}
	}
	for _, dir := range []string{"LEFT", "RIGHT"} {
		data := model(11, &onnxpb.GraphProto{
			Name:  ptr("s"),
			Input: []*onnxpb.ValueInfoProto{valueInfo("x", onnxUint8, len(xs)), valueInfo("y", onnxUint8, len(xs))},
			Node: []*onnxpb.NodeProto{nodeP("BitShift", "s", []string{"x", "y"}, []string{"z"},
				&onnxpb.AttributeProto{Name: ptr("direction"), Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte(dir)})},
			Output: []*onnxpb.ValueInfoProto{valueInfo("z", onnxUint8, len(xs))},
		})
		m, err := Import("s.onnx", data, "", Options{})
		if err != nil {
			t.Fatal(err)
		}
		out, err := ref.Run(m.Graph, map[string]*tensor.Tensor{
			"x": tensor.FromFloats(ir.T(ir.U8, len(xs)), xs),
			"y": tensor.FromFloats(ir.T(ir.U8, len(xs)), ys),
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, got := range out["z"].I {
			x, y := uint8(xs[i]), uint8(ys[i])
			want := x >> y
			if dir == "LEFT" {
				want = x << y
			}
			if got != int64(want) {
				t.Errorf("%d %s %d = %d, want %d", x, dir, y, got, want)
			}
		}
	}
}
