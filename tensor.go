package gcomp

import (
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// Tensor is a dense, row-major host tensor: a dtype, a shape and the elements. It is either a
// view over a typed Go slice (Float32, Int64, ...), whose memory a compiled device reads and
// writes directly, or a gcomp host tensor (FromHost). A Tensor does not copy the slice it views:
// the caller must not change it while a Run reads it.
type Tensor struct {
	typ  ir.Type
	view any            // []float32, []float64, []int32, []int64, []int8 or []uint8; or nil
	host *tensor.Tensor // when view is nil
}

// Element is a Go element type a Tensor can view.
type Element interface {
	float32 | float64 | int32 | int64 | int8 | uint8
}

// dtypeOf is the dtype whose elements are T's.
func dtypeOf[T Element]() ir.DType {
	var z T
	switch any(z).(type) {
	case float32:
		return ir.F32
	case float64:
		return ir.F64
	case int32:
		return ir.I32
	case int64:
		return ir.I64
	case int8:
		return ir.I8
	}
	return ir.U8
}

// View returns a tensor of the given shape over data, without copying it. A shape whose
// element count is not len(data) is reported by the Run or Open that reads the tensor (as an
// ErrShapeMismatch).
func View[T Element](data []T, shape ...int) *Tensor {
	return &Tensor{typ: ir.Type{DType: dtypeOf[T](), Shape: ir.Shape(slices.Clone(shape))}, view: data}
}

// Float32 is View for f32 tensors: Float32(pixels, 1, 3, 28, 28).
func Float32(data []float32, shape ...int) *Tensor { return View(data, shape...) }

// Float64 is View for f64 tensors.
func Float64(data []float64, shape ...int) *Tensor { return View(data, shape...) }

// Int32 is View for i32 tensors.
func Int32(data []int32, shape ...int) *Tensor { return View(data, shape...) }

// Int64 is View for i64 tensors (token ids, class labels).
func Int64(data []int64, shape ...int) *Tensor { return View(data, shape...) }

// FromHost wraps a gcomp host tensor (package tensor), for dtypes no Go slice holds in the
// device's layout (f16, bf16, bool) or values read from files. FromHost(nil) is nil, which Run
// and Open report as a missing input or weight.
func FromHost(t *tensor.Tensor) *Tensor {
	if t == nil {
		return nil
	}
	return &Tensor{typ: t.Type, host: t}
}

// DType is the element type's name: "f32", "i64", ...
func (t *Tensor) DType() string { return t.typ.DType.String() }

// Shape is the tensor's shape (a copy).
func (t *Tensor) Shape() []int { return slices.Clone([]int(t.typ.Shape)) }

// String describes the tensor's type, as in "f32[16,10]"; "nil" for a nil tensor.
func (t *Tensor) String() string {
	if t == nil {
		return "nil"
	}
	return t.typ.String()
}

// Values returns the tensor's elements as a []T, where T is the tensor's element type: the
// viewed slice itself for a view (no copy), else a new slice. A T of another dtype is an error.
func Values[T Element](t *Tensor) ([]T, error) {
	if t == nil {
		return nil, errors.New("gcomp: Values of a nil tensor")
	}
	if d := dtypeOf[T](); d != t.typ.DType {
		return nil, fmt.Errorf("gcomp: the tensor is %s, not %s", t.typ, d)
	}
	if v, ok := t.view.([]T); ok {
		return v, nil
	}
	out := make([]T, t.host.Len())
	for i := range out {
		if t.host.F != nil {
			out[i] = T(t.host.F[i])
		} else {
			out[i] = T(t.host.I[i])
		}
	}
	return out, nil
}

// Float32s is Values[float32].
func (t *Tensor) Float32s() ([]float32, error) { return Values[float32](t) }

// Float64s is Values[float64].
func (t *Tensor) Float64s() ([]float64, error) { return Values[float64](t) }

// Int64s is Values[int64].
func (t *Tensor) Int64s() ([]int64, error) { return Values[int64](t) }

// Host returns the tensor as a gcomp host tensor: the wrapped one, or (for a view) a conversion
// that shares the slice where the layouts agree ([]float64 for f64, []int64 for i64).
func (t *Tensor) Host() *tensor.Tensor {
	if t.host != nil {
		return t.host
	}
	switch v := t.view.(type) {
	case []float64:
		return &tensor.Tensor{Type: t.typ, F: v}
	case []int64:
		return &tensor.Tensor{Type: t.typ, I: v}
	case []float32:
		return hostFrom(t.typ, v)
	case []int32:
		return hostFrom(t.typ, v)
	case []int8:
		return hostFrom(t.typ, v)
	case []uint8:
		return hostFrom(t.typ, v)
	}
	panic("gcomp: a Tensor with neither a view nor a host tensor")
}

func hostFrom[T Element](typ ir.Type, v []T) *tensor.Tensor {
	h := &tensor.Tensor{Type: typ}
	if typ.DType.IsFloat() {
		h.F = make([]float64, len(v))
		for i, x := range v {
			h.F[i] = float64(x)
		}
	} else {
		h.I = make([]int64, len(v))
		for i, x := range v {
			h.I[i] = int64(x)
		}
	}
	return h
}

// check reports a view whose slice does not hold its shape's elements.
func (t *Tensor) check(kind, name string) error {
	n := t.typ.Shape.NumElements()
	have := n
	switch v := t.view.(type) {
	case []float32:
		have = len(v)
	case []float64:
		have = len(v)
	case []int32:
		have = len(v)
	case []int64:
		have = len(v)
	case []int8:
		have = len(v)
	case []uint8:
		have = len(v)
	}
	if t.host != nil {
		have = max(len(t.host.F), len(t.host.I))
	}
	if have != n {
		return &ShapeError{Kind: kind, Name: name, Want: t.typ, Elements: have}
	}
	return nil
}

// image is the tensor's memory image as a device holds it: for a view on a little-endian
// host, the slice's own bytes (no copy).
func (t *Tensor) image() []byte {
	if littleEndian {
		switch v := t.view.(type) {
		case []float32:
			return bytesOf(v)
		case []float64:
			return bytesOf(v)
		case []int32:
			return bytesOf(v)
		case []int64:
			return bytesOf(v)
		case []int8:
			return bytesOf(v)
		case []uint8:
			return v
		}
	}
	return t.Host().Bytes()
}

// bytesOf is the memory of v as bytes.
func bytesOf[T Element](v []T) []byte {
	if len(v) == 0 {
		return []byte{}
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(z)))
}

// littleEndian is whether this host stores numbers as devices do (every GPU and the simulator
// are little-endian), so that a Go slice's memory is their memory image.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// newOutput makes the tensor an output of type typ is read into, and the memory to read it into:
// a fresh typed slice's own bytes where the dtype has a Go element type and the host is
// little-endian (the returned Tensor views it), else a byte buffer finish converts.
func newOutput(typ ir.Type) (*Tensor, []byte) {
	n := typ.Shape.NumElements()
	if littleEndian {
		switch typ.DType {
		case ir.F32:
			return viewOf(typ, make([]float32, n))
		case ir.F64:
			return viewOf(typ, make([]float64, n))
		case ir.I32:
			return viewOf(typ, make([]int32, n))
		case ir.I64:
			return viewOf(typ, make([]int64, n))
		case ir.I8:
			return viewOf(typ, make([]int8, n))
		case ir.U8:
			return viewOf(typ, make([]uint8, n))
		}
	}
	return &Tensor{typ: typ}, make([]byte, typ.Bytes())
}

func viewOf[T Element](typ ir.Type, v []T) (*Tensor, []byte) {
	return &Tensor{typ: typ, view: v}, bytesOf(v)
}

// finish completes an output newOutput made once its bytes are read: a tensor without a view
// becomes a host tensor decoded from data.
func (t *Tensor) finish(data []byte) error {
	if t.view != nil {
		return nil
	}
	h, err := tensor.FromBytes(t.typ, data)
	if err != nil {
		return err
	}
	t.host = h
	return nil
}
