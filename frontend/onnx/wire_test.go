package onnx

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// bigWeights is a model whose initializer w (f32[100], over smallWeight) stays bytes at import.
func bigWeights() ([]byte, *tensor.Tensor) {
	vals := make([]float64, 100)
	for i := range vals {
		vals[i] = float64(i) - 49.5
	}
	w := tensor.FromFloats(ir.T(ir.F32, 100), vals)
	return model(13, &onnxpb.GraphProto{
		Name:        ptr("big"),
		Input:       []*onnxpb.ValueInfoProto{valueInfo("x", onnxFloat, 100)},
		Initializer: []*onnxpb.TensorProto{encodeTensor("w", w), floats("s", []int{1}, 2)},
		Node: []*onnxpb.NodeProto{nodeP("Add", "a", []string{"x", "w"}, []string{"y"}),
			nodeP("Mul", "m", []string{"y", "s"}, []string{"z"})},
		Output: []*onnxpb.ValueInfoProto{valueInfo("z", onnxFloat, 100)},
	}), w
}

// The weights' bytes are the model buffer's, not a copy of them.
func TestUnmarshalModelAliases(t *testing.T) {
	data, w := bigWeights()
	var m onnxpb.ModelProto
	if err := unmarshalModel(data, &m); err != nil {
		t.Fatal(err)
	}
	var want onnxpb.ModelProto
	if err := proto.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&m, &want) {
		t.Fatalf("unmarshalModel differs from proto.Unmarshal:\n got %v\nwant %v", &m, &want)
	}
	raw := m.GetGraph().GetInitializer()[0].GetRawData()
	off := bytes.Index(data, w.Bytes())
	if off < 0 || len(raw) != 400 {
		t.Fatalf("raw_data of %d bytes, not found in the model", len(raw))
	}
	data[off] ^= 0xff
	if raw[0] != data[off] {
		t.Fatal("raw_data is a copy of the model's bytes, not a view of them")
	}
}

// Wire layouts protobuf accepts: unmarshalModel must read each as proto.Unmarshal does.
func TestUnmarshalModelLayouts(t *testing.T) {
	tensorMsg := func(fields ...[]byte) []byte { return slices.Concat(fields...) }
	bytesField := func(num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
	}
	name := bytesField(8, []byte("w")) // TensorProto.name
	dims := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 2)
	dtype := protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), onnxFloat)
	raw1, raw2 := bytes.Repeat([]byte{1}, 8), bytes.Repeat([]byte{2}, 8)
	init := func(t []byte) []byte { return bytesField(graphInitializer, t) }
	graph := func(fields ...[]byte) []byte { return bytesField(modelGraph, slices.Concat(fields...)) }
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"raw_data twice (the last wins)", graph(init(tensorMsg(name, dims, dtype, bytesField(tensorRawData, raw1), bytesField(tensorRawData, raw2))))},
		{"graph twice (initializers merge)", slices.Concat(graph(init(tensorMsg(name, bytesField(tensorRawData, raw1)))), graph(init(tensorMsg(dims, bytesField(tensorRawData, raw2)))))},
		{"empty raw_data", graph(init(tensorMsg(name, dims, dtype, bytesField(tensorRawData, nil))))},
		{"no raw_data", graph(init(tensorMsg(name, dims, dtype)))},
		{"raw_data before the name", graph(init(tensorMsg(bytesField(tensorRawData, raw1), name)))},
		{"an empty initializer", graph(init(nil), init(tensorMsg(bytesField(tensorRawData, raw2))))},
		{"raw_data with a varint's wire type", graph(init(protowire.AppendVarint(protowire.AppendTag(nil, tensorRawData, protowire.VarintType), 7)))},
		{"truncated", graph(init(tensorMsg(name, bytesField(tensorRawData, raw1))))[:20]},
	} {
		t.Run(tc.name, func(t *testing.T) { sameAsProto(t, tc.data) })
	}
}

func sameAsProto(t *testing.T, data []byte) {
	t.Helper()
	var got, want onnxpb.ModelProto
	errGot := unmarshalModel(data, &got)
	errWant := proto.Unmarshal(data, &want)
	if (errGot == nil) != (errWant == nil) {
		t.Fatalf("unmarshalModel: %v; proto.Unmarshal: %v", errGot, errWant)
	}
	if errWant == nil && !proto.Equal(&got, &want) {
		t.Fatalf("unmarshalModel differs from proto.Unmarshal:\n got %v\nwant %v", &got, &want)
	}
	if errWant == nil {
		for i, x := range got.GetGraph().GetInitializer() {
			if (x.RawData == nil) != (want.GetGraph().GetInitializer()[i].RawData == nil) {
				t.Fatalf("initializer %d: raw_data presence differs", i)
			}
		}
	}
}

// FuzzUnmarshalModel holds unmarshalModel to proto.Unmarshal on any bytes.
func FuzzUnmarshalModel(f *testing.F) {
	data, _ := bigWeights()
	f.Add(data)
	f.Add(linear())
	f.Add(externalModel("weights.bin", "0", "8"))
	f.Fuzz(func(t *testing.T, data []byte) { sameAsProto(t, data) })
}

// Weights are checked at import and converted when asked for, each call a new tensor.
func TestWeightsLazy(t *testing.T) {
	data, w := bigWeights()
	m, err := Import("big.onnx", data, "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Weights.Names(); !slices.Equal(got, []string{"s", "w"}) {
		t.Fatalf("weights %v", got)
	}
	if typ, ok := m.Weights.Type("w"); !ok || !typ.Equal(ir.T(ir.F32, 100)) {
		t.Fatalf("w's type %v %v", typ, ok)
	}
	a, err := m.Weights.Tensor("w")
	if err != nil || !slices.Equal(a.F, w.F) {
		t.Fatalf("w = %v, %v", a, err)
	}
	a.F[0] = 1e9
	if b, _ := m.Weights.Tensor("w"); b.F[0] != w.F[0] {
		t.Fatal("a caller's change to a weight reached the model")
	}
	if s, _ := m.Weights.Tensor("s"); s == nil || s.F[0] != 2 {
		t.Fatalf("s = %v", s)
	}
	if x, err := m.Weights.Tensor("nope"); x != nil || err != nil {
		t.Fatalf("an unknown weight: %v, %v", x, err)
	}
	var none *Weights
	if none.Len() != 0 || none.Names() != nil {
		t.Fatal("a nil Weights is not empty")
	}
	if x, err := none.Tensor("w"); x != nil || err != nil {
		t.Fatalf("a nil Weights: %v, %v", x, err)
	}
}

// A weight left as bytes is still checked at import: a wrong size or a bad bool is an error
// there, not when a run converts it.
func TestWeightsChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    *onnxpb.TensorProto
		want string
	}{
		{"small, short", &onnxpb.TensorProto{Name: ptr("w"), Dims: []int64{3}, DataType: ptr(int32(onnxFloat)), RawData: make([]byte, 8)},
			"f32[3] needs 12 bytes of raw_data, has 8"},
		{"large, short", &onnxpb.TensorProto{Name: ptr("w"), Dims: []int64{100}, DataType: ptr(int32(onnxFloat)), RawData: make([]byte, 396)},
			"f32[100] needs 400 bytes of raw_data, has 396"},
		{"large bool", &onnxpb.TensorProto{Name: ptr("w"), Dims: []int64{100}, DataType: ptr(int32(onnxBool)), RawData: append(make([]byte, 99), 2)},
			"bool element 99 has byte value 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := model(13, &onnxpb.GraphProto{
				Name:        ptr("c"),
				Input:       []*onnxpb.ValueInfoProto{valueInfo("x", onnxFloat, 1)},
				Initializer: []*onnxpb.TensorProto{tc.p},
				Node:        []*onnxpb.NodeProto{nodeP("Identity", "i", []string{"x"}, []string{"y"})},
				Output:      []*onnxpb.ValueInfoProto{valueInfo("y", onnxFloat, 1)},
			})
			_, err := Import("c.onnx", data, "", Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}
