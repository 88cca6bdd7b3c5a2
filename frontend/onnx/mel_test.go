package onnx

import (
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

func melModel(mels, dft, rate int, lo, hi float64) []byte {
	i32 := func(name string, v int) *onnxpb.TensorProto {
		return encodeTensor(name, tensor.FromFloats(ir.T(ir.I32), []float64{float64(v)}))
	}
	return model(17, &onnxpb.GraphProto{
		Name: ptr("mel"),
		Initializer: []*onnxpb.TensorProto{i32("m", mels), i32("d", dft), i32("r", rate),
			floats("lo", nil, lo), floats("hi", nil, hi)},
		Node:   []*onnxpb.NodeProto{nodeP("MelWeightMatrix", "w", []string{"m", "d", "r", "lo", "hi"}, []string{"y"})},
		Output: []*onnxpb.ValueInfoProto{{Name: ptr("y")}},
	})
}

// The operator's own example (ONNX's test_melweightmatrix): 8 mel bins over a 16-point DFT.
func TestMelWeightMatrix(t *testing.T) {
	m, err := Import("mel.onnx", melModel(8, 16, 8192, 0, 4096), "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := m.Graph.Outputs[0].Value
	if !c.Type.Equal(ir.T(ir.F32, 9, 8)) || c.Op != "constant" {
		t.Fatalf("output %s %s, want a f32[9,8] constant", c.Op, c.Type)
	}
	ones := map[int]int{0: 0, 1: 0, 2: 1, 3: 1, 4: 2, 5: 3, 6: 4, 7: 5} // mel bin → its DFT bin
	want := make([]float64, 9*8)
	for mel, bin := range ones {
		want[bin*8+mel] = 1
	}
	got := c.Attrs["value"].([]float64)
	if len(got) == 1 {
		t.Fatalf("value %v", got)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	if _, err := Import("mel.onnx", melModel(0, 16, 8192, 0, 4096), "", Options{}); err == nil || !strings.Contains(err.Error(), "want positive sizes") {
		t.Fatalf("0 mel bins: %v", err)
	}
	if _, err := Import("mel.onnx", melModel(8, 16, 8192, 0, 9000), "", Options{}); err == nil || !strings.Contains(err.Error(), "outside 0 to 8") {
		t.Fatalf("an upper edge past Nyquist: %v", err)
	}
}
