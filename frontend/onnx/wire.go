package onnx

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
)

// Field numbers in onnx.proto on the way to the weights' bytes.
const (
	modelGraph       = 7 // ModelProto.graph
	graphInitializer = 5 // GraphProto.initializer
	tensorRawData    = 9 // TensorProto.raw_data
)

// unmarshalModel is proto.Unmarshal of a ModelProto whose initializers' raw_data share data's
// memory instead of being copied out of it (protobuf's Go runtime always copies bytes fields):
// a model's weights are then held once, in the buffer the file was read into. It unmarshals a
// copy of data without those raw_data fields (the graph's structure, small) and points each
// initializer's RawData into data.
func unmarshalModel(data []byte, m *onnxpb.ModelProto) error {
	stripped, raws, err := stripModel(data)
	if err == nil {
		err = proto.Unmarshal(stripped, m)
	}
	inits := m.GetGraph().GetInitializer()
	if err != nil || len(inits) != len(raws) {
		// Malformed wire data, or a layout the walk does not follow: let protobuf judge the
		// original bytes (its error, or a model whose weights are copied).
		m.Reset()
		return proto.Unmarshal(data, m)
	}
	for i, raw := range raws {
		if raw != nil {
			inits[i].RawData = raw
		}
	}
	return nil
}

// stripModel returns a ModelProto's bytes without its initializers' raw_data, and those, one
// per initializer in order (nil where an initializer has none), as slices of data.
func stripModel(data []byte) ([]byte, [][]byte, error) {
	var raws [][]byte
	out, err := rewrite(data, modelGraph, func(graph []byte) ([]byte, error) {
		return rewrite(graph, graphInitializer, func(t []byte) ([]byte, error) {
			var raw []byte
			stripped, err := rewrite(t, tensorRawData, func(r []byte) ([]byte, error) {
				raw = r // the last occurrence wins, as in protobuf's merge
				return nil, nil
			})
			raws = append(raws, raw)
			return stripped, err
		})
	})
	return out, raws, err
}

// rewrite copies the message b, replacing the value of each length-delimited field num by
// f(value); a nil result drops the field.
func rewrite(b []byte, num protowire.Number, f func([]byte) ([]byte, error)) ([]byte, error) {
	out := make([]byte, 0, 256)
	for len(b) > 0 {
		n, typ, tagLen := protowire.ConsumeTag(b)
		if tagLen < 0 {
			return nil, protowire.ParseError(tagLen)
		}
		valLen := protowire.ConsumeFieldValue(n, typ, b[tagLen:])
		if valLen < 0 {
			return nil, protowire.ParseError(valLen)
		}
		field := b[:tagLen+valLen]
		b = b[tagLen+valLen:]
		if n != num || typ != protowire.BytesType {
			out = append(out, field...)
			continue
		}
		v, _ := protowire.ConsumeBytes(field[tagLen:])
		// Keep a present but empty field present: a nil-or-not distinction is presence.
		v = v[:len(v):len(v)]
		nv, err := f(v)
		if err != nil {
			return nil, err
		}
		if nv != nil {
			out = protowire.AppendTag(out, n, protowire.BytesType)
			out = protowire.AppendBytes(out, nv)
		}
	}
	return out, nil
}
