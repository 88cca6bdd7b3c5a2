// Package tensor is the host-side tensor that the reference interpreter computes on and that weights,
// inputs and outputs travel in.
//
// Every float dtype is held as float64 values that are exactly representable in the dtype (the
// rounding helpers below put them there), every integer and bool dtype as int64 values already
// wrapped to the dtype's width. One storage type per kind keeps the interpreter's kernels few; the
// bytes of the in-memory layout (little-endian, C order) come from Bytes and FromBytes.
package tensor

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gcomp/gcomp/ir"
)

// Tensor is a dense, row-major tensor. Exactly one of F and I is used, by dtype.
type Tensor struct {
	Type ir.Type
	F    []float64 // float dtypes
	I    []int64   // integer and bool dtypes
}

// New returns a zero tensor of type t.
func New(t ir.Type) *Tensor { return alloc(t, true) }

// Empty returns a tensor of type t whose elements are unspecified (a recycled buffer is not
// cleared): for a caller that writes every element.
func Empty(t ir.Type) *Tensor { return alloc(t, false) }

func alloc(t ir.Type, zero bool) *Tensor {
	x := &Tensor{Type: ir.Type{DType: t.DType, Shape: t.Shape.Clone()}}
	n := t.Shape.NumElements()
	if t.DType.IsFloat() {
		if x.F = takeF(n, zero); x.F == nil {
			x.F = make([]float64, n)
		}
	} else if x.I = takeI(n, zero); x.I == nil {
		x.I = make([]int64, n)
	}
	return x
}

// Len is the number of elements.
func (x *Tensor) Len() int { return x.Type.Shape.NumElements() }

// At returns element i as a float64 whatever the dtype.
func (x *Tensor) At(i int) float64 {
	if x.F != nil {
		return x.F[i]
	}
	return float64(x.I[i])
}

// Clone returns a deep copy.
func (x *Tensor) Clone() *Tensor {
	c := &Tensor{Type: ir.Type{DType: x.Type.DType, Shape: x.Type.Shape.Clone()}}
	if x.F != nil {
		c.F = append([]float64(nil), x.F...)
	}
	if x.I != nil {
		c.I = append([]int64(nil), x.I...)
	}
	return c
}

// RoundFloat rounds f to the nearest value of the float dtype d (ties to even).
func RoundFloat(d ir.DType, f float64) float64 {
	switch d {
	case ir.F32:
		return float64(float32(f))
	case ir.F16:
		return F16ToFloat(FloatToF16(f))
	case ir.BF16:
		return BF16ToFloat(FloatToBF16(f))
	case ir.F8E4M3, ir.F8E5M2:
		return FP8ToFloat(d, FloatToFP8(d, f))
	}
	return f
}

// WrapInt wraps n to the integer dtype d with two's-complement overflow; bool becomes 0 or 1.
func WrapInt(d ir.DType, n int64) int64 {
	switch d {
	case ir.I32:
		return int64(int32(n))
	case ir.I8:
		return int64(int8(n))
	case ir.U8:
		return int64(uint8(n))
	case ir.Bool:
		if n != 0 {
			return 1
		}
		return 0
	}
	return n
}

// Bytes returns the tensor's memory image: little-endian, row-major, dtype-sized elements.
func (x *Tensor) Bytes() []byte {
	d := x.Type.DType
	size := d.Size()
	out := make([]byte, x.Len()*size)
	for i := 0; i < x.Len(); i++ {
		b := out[i*size:]
		switch d {
		case ir.F32:
			binary.LittleEndian.PutUint32(b, math.Float32bits(float32(x.F[i])))
		case ir.F64:
			binary.LittleEndian.PutUint64(b, math.Float64bits(x.F[i]))
		case ir.F16:
			binary.LittleEndian.PutUint16(b, FloatToF16(x.F[i]))
		case ir.BF16:
			binary.LittleEndian.PutUint16(b, FloatToBF16(x.F[i]))
		case ir.I32:
			binary.LittleEndian.PutUint32(b, uint32(x.I[i]))
		case ir.I64:
			binary.LittleEndian.PutUint64(b, uint64(x.I[i]))
		case ir.I8, ir.U8, ir.Bool:
			b[0] = byte(x.I[i])
		case ir.F8E4M3, ir.F8E5M2:
			b[0] = fp8Bits(d, x.F[i])
		}
	}
	return out
}

// FromBytes builds a tensor of type t from its memory image (see Bytes).
func FromBytes(t ir.Type, data []byte) (*Tensor, error) {
	size := t.DType.Size()
	if size == 0 {
		return nil, fmt.Errorf("tensor: invalid dtype %s", t.DType)
	}
	if len(data) != t.Shape.NumElements()*size {
		return nil, fmt.Errorf("tensor: %s needs %d bytes, have %d", t, t.Shape.NumElements()*size, len(data))
	}
	x := New(t)
	for i := 0; i < x.Len(); i++ {
		b := data[i*size:]
		switch t.DType {
		case ir.F32:
			x.F[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
		case ir.F64:
			x.F[i] = math.Float64frombits(binary.LittleEndian.Uint64(b))
		case ir.F16:
			x.F[i] = F16ToFloat(binary.LittleEndian.Uint16(b))
		case ir.BF16:
			x.F[i] = BF16ToFloat(binary.LittleEndian.Uint16(b))
		case ir.I32:
			x.I[i] = int64(int32(binary.LittleEndian.Uint32(b)))
		case ir.I64:
			x.I[i] = int64(binary.LittleEndian.Uint64(b))
		case ir.I8:
			x.I[i] = int64(int8(b[0]))
		case ir.U8:
			x.I[i] = int64(b[0])
		case ir.F8E4M3, ir.F8E5M2:
			x.F[i] = FP8ToFloat(t.DType, b[0])
		case ir.Bool:
			if b[0] > 1 {
				return nil, fmt.Errorf("tensor: bool element %d has byte value %d, want 0 or 1", i, b[0])
			}
			x.I[i] = int64(b[0])
		}
	}
	return x, nil
}

// FromFloats builds a float tensor, rounding each value to the dtype.
func FromFloats(t ir.Type, vals []float64) *Tensor {
	x := New(t)
	for i, v := range vals {
		if x.F != nil {
			x.F[i] = RoundFloat(t.DType, v)
		} else {
			x.I[i] = WrapInt(t.DType, int64(v))
		}
	}
	return x
}
