package onnx

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// ONNX's TensorProto.DataType numbers (onnx.proto).
const (
	onnxFloat    = 1
	onnxUint8    = 2
	onnxInt8     = 3
	onnxUint16   = 4
	onnxInt16    = 5
	onnxInt32    = 6
	onnxInt64    = 7
	onnxString   = 8
	onnxBool     = 9
	onnxFloat16  = 10
	onnxDouble   = 11
	onnxUint32   = 12
	onnxUint64   = 13
	onnxBFloat16 = 16
	onnxUint4    = 21
	onnxInt4     = 22
)

// dtypeOf maps an ONNX element type to gcomp's; the error names types gcomp has no dtype for.
func dtypeOf(t int32) (ir.DType, error) {
	switch t {
	case onnxFloat:
		return ir.F32, nil
	case onnxUint8:
		return ir.U8, nil
	case onnxInt8:
		return ir.I8, nil
	case onnxInt32:
		return ir.I32, nil
	case onnxInt64:
		return ir.I64, nil
	case onnxBool:
		return ir.Bool, nil
	case onnxFloat16:
		return ir.F16, nil
	case onnxDouble:
		return ir.F64, nil
	case onnxBFloat16:
		return ir.BF16, nil
	}
	name, ok := onnxpb.TensorProto_DataType_name[t]
	if !ok {
		return ir.Invalid, fmt.Errorf("unknown ONNX element type %d", t)
	}
	return ir.Invalid, unsupportedf("element type %s is not supported (supported: FLOAT, FLOAT16, BFLOAT16, DOUBLE, INT8, UINT8, INT32, INT64, BOOL)", name)
}

// onnxDType is dtypeOf's inverse (for Cast's "to" and the tests).
func onnxDType(d ir.DType) int32 {
	switch d {
	case ir.F32:
		return onnxFloat
	case ir.U8:
		return onnxUint8
	case ir.I8:
		return onnxInt8
	case ir.I32:
		return onnxInt32
	case ir.I64:
		return onnxInt64
	case ir.Bool:
		return onnxBool
	case ir.F16:
		return onnxFloat16
	case ir.F64:
		return onnxDouble
	case ir.BF16:
		return onnxBFloat16
	}
	return 0
}

// shapeOf checks ONNX dims (non-negative, element count within ir.MaxElements) before anything is
// allocated from them.
func shapeOf(dims []int64) (ir.Shape, error) {
	s := make(ir.Shape, len(dims))
	n := int64(1)
	for i, d := range dims {
		if d < 0 || d > ir.MaxElements {
			return nil, fmt.Errorf("dim %d is %d", i, d)
		}
		s[i] = int(d)
		if d > 0 {
			if n *= d; n > ir.MaxElements {
				return nil, fmt.Errorf("shape %v has more than %d elements", dims, ir.MaxElements)
			}
		}
	}
	return s, nil
}

// tensorSource says where a TensorProto's external data may be read from.
type tensorSource struct {
	dir string // the model's folder; external data must lie inside it
}

// Tensor decodes a TensorProto (an initializer, a Constant's value, a test's input_N.pb) into a
// host tensor. External data is read relative to dir, the model's folder; dir "" refuses it.
func Tensor(p *onnxpb.TensorProto, dir string) (*tensor.Tensor, error) {
	return tensorSource{dir}.decode(p)
}

// typeOf checks a TensorProto's element type and dims. With allow4 a 4-bit tensor (uint4, int4:
// initializers only, gcomp having no 4-bit dtype) is u8 or i8 of its values (packed4).
func typeOf(p *onnxpb.TensorProto, allow4 bool) (ir.Type, error) {
	if p.GetSegment() != nil {
		return ir.Type{}, unsupportedf("segmented tensors are not supported")
	}
	d, err := ir.U8, error(nil)
	switch {
	case allow4 && p.GetDataType() == onnxInt4:
		d = ir.I8
	case allow4 && p.GetDataType() == onnxUint4:
	default:
		d, err = dtypeOf(p.GetDataType())
	}
	if err != nil {
		return ir.Type{}, err
	}
	shape, err := shapeOf(p.GetDims())
	if err != nil {
		return ir.Type{}, err
	}
	return ir.Type{DType: d, Shape: shape}, nil
}

// packed4 reports whether p holds 4-bit values, two a byte (typeOf).
func packed4(p *onnxpb.TensorProto) bool {
	return p.GetDataType() == onnxInt4 || p.GetDataType() == onnxUint4
}

// dataBytes is how many bytes p's values of type t take: two 4-bit values a byte.
func dataBytes(p *onnxpb.TensorProto, t ir.Type) int {
	if packed4(p) {
		return (t.Shape.NumElements() + 1) / 2
	}
	return t.Shape.NumElements() * t.DType.Size()
}

// describe names p's type in messages: t, or the 4-bit type it was read from.
func describe(p *onnxpb.TensorProto, t ir.Type) string {
	if packed4(p) {
		return strings.ToLower(onnxpb.TensorProto_DataType(p.GetDataType()).String()) + fmt.Sprint(t.Shape)
	}
	return t.String()
}

// unpack4 is the values of t (u8 or i8) packed two a byte in b: element 2i in byte i's low
// nibble, 2i+1 in its high nibble; i8's nibbles are two's complement.
func unpack4(t ir.Type, b []byte) *tensor.Tensor {
	x := tensor.New(t)
	for i := range x.I {
		v := int64(b[i/2]>>(4*(i%2))) & 15
		if t.DType == ir.I8 && v >= 8 {
			v -= 16
		}
		x.I[i] = v
	}
	return x
}

// decode converts a TensorProto other than an initializer (a Constant's value, a test's input):
// no 4-bit types.
func (src tensorSource) decode(p *onnxpb.TensorProto) (*tensor.Tensor, error) {
	return src.decodeAny(p, false)
}

// decodeWeight converts an initializer: 4-bit ones too, to u8 or i8 of their values.
func (src tensorSource) decodeWeight(p *onnxpb.TensorProto) (*tensor.Tensor, error) {
	return src.decodeAny(p, true)
}

func (src tensorSource) decodeAny(p *onnxpb.TensorProto, allow4 bool) (*tensor.Tensor, error) {
	t, err := typeOf(p, allow4)
	if err != nil {
		return nil, err
	}
	d, n := t.DType, t.Shape.NumElements()
	fromBytes := tensor.FromBytes
	if packed4(p) {
		fromBytes = func(t ir.Type, b []byte) (*tensor.Tensor, error) { return unpack4(t, b), nil }
	}
	if p.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
		raw, err := src.external(p, dataBytes(p, t))
		if err != nil {
			return nil, err
		}
		return fromBytes(t, raw)
	}
	if raw := p.GetRawData(); raw != nil {
		if len(raw) != dataBytes(p, t) {
			return nil, fmt.Errorf("%s needs %d bytes of raw_data, has %d", describe(p, t), dataBytes(p, t), len(raw))
		}
		return fromBytes(t, raw)
	}
	if packed4(p) { // int32_data holds the packed bytes, one a value
		v := p.GetInt32Data()
		if len(v) != dataBytes(p, t) {
			return nil, fmt.Errorf("%s needs %d packed bytes, int32_data has %d", describe(p, t), dataBytes(p, t), len(v))
		}
		b := make([]byte, len(v))
		for i, e := range v {
			if e < 0 || e > 255 {
				return nil, fmt.Errorf("%s: int32_data element %d is %d, not a byte of two 4-bit values", describe(p, t), i, e)
			}
			b[i] = byte(e)
		}
		return unpack4(t, b), nil
	}
	// The typed fields' lengths are checked before the tensor is allocated from the dims.
	have, field := len(p.GetInt32Data()), "int32_data"
	switch d {
	case ir.F32:
		have, field = len(p.GetFloatData()), "float_data"
	case ir.F64:
		have, field = len(p.GetDoubleData()), "double_data"
	case ir.I64:
		have, field = len(p.GetInt64Data()), "int64_data"
	}
	if have != n {
		return nil, fmt.Errorf("%s needs %d values, %s has %d", t, n, field, have)
	}
	x := tensor.New(t)
	switch d {
	case ir.F32:
		v := p.GetFloatData()
		for i, f := range v {
			x.F[i] = float64(f)
		}
	case ir.F64:
		v := p.GetDoubleData()
		copy(x.F, v)
	case ir.I64:
		v := p.GetInt64Data()
		copy(x.I, v)
	default: // int32_data holds int32, int8, uint8, bool, and the bits of float16 and bfloat16
		v := p.GetInt32Data()
		for i, e := range v {
			switch d {
			case ir.F16:
				x.F[i] = tensor.F16ToFloat(uint16(e))
			case ir.BF16:
				x.F[i] = tensor.BF16ToFloat(uint16(e))
			case ir.Bool:
				if e != 0 && e != 1 {
					return nil, fmt.Errorf("bool element %d is %d", i, e)
				}
				x.I[i] = int64(e)
			default:
				x.I[i] = tensor.WrapInt(d, int64(e))
			}
		}
	}
	return x, nil
}

// external reads want bytes of a tensor stored outside the model, where externalRange says. The
// file is opened again (it may have changed since import checked it), so what it is and its size
// are checked again before anything is allocated.
func (src tensorSource) external(p *onnxpb.TensorProto, want int) ([]byte, error) {
	r, err := src.externalRange(p, want)
	if err != nil {
		return nil, err
	}
	f, err := openExternal(r.loc, r.path, r.offset, want)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, want)
	if _, err := f.ReadAt(buf, r.offset); err != nil {
		return nil, fmt.Errorf("external data %q: %v", r.loc, err)
	}
	return buf, nil
}

// extRange is where a tensor's external data lies.
type extRange struct {
	loc, path string
	offset    int64
}

// externalRange checks where want bytes of a tensor stored outside the model lie: location
// names a regular file whose resolved path (symbolic links followed) lies inside the model's
// folder, offset and length must lie within the file's real size, and length (if given) must
// equal what the tensor's type needs.
func (src tensorSource) externalRange(p *onnxpb.TensorProto, want int) (extRange, error) {
	var loc string
	offset, length := int64(0), int64(-1)
	for _, kv := range p.GetExternalData() {
		var err error
		switch kv.GetKey() {
		case "location":
			loc = kv.GetValue()
		case "offset":
			offset, err = strconv.ParseInt(kv.GetValue(), 10, 64)
		case "length":
			length, err = strconv.ParseInt(kv.GetValue(), 10, 64)
		}
		if err != nil || offset < 0 || (kv.GetKey() == "length" && length < 0) {
			return extRange{}, fmt.Errorf("external data: bad %s %q", kv.GetKey(), kv.GetValue())
		}
	}
	if loc == "" {
		return extRange{}, fmt.Errorf("external data without a location")
	}
	if src.dir == "" {
		return extRange{}, fmt.Errorf("external data %q: the model was not read from a file, so there is no folder to read it from", loc)
	}
	clean := filepath.Clean(filepath.FromSlash(loc))
	if filepath.IsAbs(loc) || filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) || strings.ContainsRune(loc, 0) {
		return extRange{}, fmt.Errorf("external data location %q is outside the model's folder", loc)
	}
	if length >= 0 && length != int64(want) {
		return extRange{}, fmt.Errorf("external data %q: length %d, but the tensor needs %d bytes", loc, length, want)
	}
	path, err := tensorio.Inside(src.dir, clean)
	if err != nil {
		return extRange{}, fmt.Errorf("external data location %q: %v", loc, err)
	}
	f, err := openExternal(loc, path, offset, want)
	if err != nil {
		return extRange{}, err
	}
	f.Close()
	return extRange{loc: loc, path: path, offset: offset}, nil
}

// openExternal opens an external data file without blocking (a named pipe is no data file) and
// checks that it is a regular file holding want bytes at offset.
func openExternal(loc, path string, offset int64, want int) (*os.File, error) {
	f, st, err := tensorio.OpenRead(path)
	if err != nil {
		return nil, fmt.Errorf("external data %q: %v", loc, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("external data %q is not a regular file", loc)
	}
	if offset > st.Size() || int64(want) > st.Size()-offset {
		f.Close()
		return nil, fmt.Errorf("external data %q: %d bytes at offset %d are past the file's end (%d bytes)", loc, want, offset, st.Size())
	}
	return f, nil
}

// encodeTensor is Tensor's inverse (raw_data), for tests and for writing test inputs.
func encodeTensor(name string, x *tensor.Tensor) *onnxpb.TensorProto {
	dims := make([]int64, len(x.Type.Shape))
	for i, d := range x.Type.Shape {
		dims[i] = int64(d)
	}
	dt := onnxDType(x.Type.DType)
	return &onnxpb.TensorProto{Name: &name, Dims: dims, DataType: &dt, RawData: x.Bytes()}
}
