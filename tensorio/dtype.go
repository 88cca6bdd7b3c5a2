package tensorio

import (
	"fmt"
	"math/bits"
)

// Array is a dense tensor: a dtype name, a shape and the element bytes,
// little-endian and in C order. len(Data) is the product of Shape times the
// dtype size; an empty Shape is a scalar with one element.
type Array struct {
	DType string // "f32","f16","bf16","f64","i32","u32","i64","i8","u8","bool","f8e4m3","f8e5m2"
	Shape []int
	Data  []byte // little-endian, C order, len = numel*size
}

// dtypeInfo is one row of the dtype table: the project's name, the element
// size, NumPy's type code without byte order ("" when NumPy has none) and the
// safetensors name.
type dtypeInfo struct {
	name string
	size int
	npy  string
	st   string
}

var dtypes = []dtypeInfo{
	{"f32", 4, "f4", "F32"},
	{"f16", 2, "f2", "F16"},
	{"bf16", 2, "", "BF16"},
	{"f64", 8, "f8", "F64"},
	{"i32", 4, "i4", "I32"},
	{"u32", 4, "u4", "U32"},
	{"i64", 8, "i8", "I64"},
	{"i8", 1, "i1", "I8"},
	{"u8", 1, "u1", "U8"},
	{"bool", 1, "b1", "BOOL"},
	{"f8e4m3", 1, "", "F8_E4M3"},
	{"f8e5m2", 1, "", "F8_E5M2"},
}

// lookup returns the row whose field (selected by key) equals s.
func lookup(key func(dtypeInfo) string, s string) (dtypeInfo, bool) {
	for _, d := range dtypes {
		if s != "" && key(d) == s {
			return d, true
		}
	}
	return dtypeInfo{}, false
}

func byName(d dtypeInfo) string { return d.name }
func byNPY(d dtypeInfo) string  { return d.npy }
func byST(d dtypeInfo) string   { return d.st }

// DTypeSize returns the size in bytes of one element of dtype, and whether
// dtype is known.
func DTypeSize(dtype string) (int, bool) {
	d, ok := lookup(byName, dtype)
	return d.size, ok
}

// byteSize returns numel(shape)*elem, or an error when a dimension is
// negative or the product overflows int.
func byteSize(shape []int, elem int) (int, error) {
	n := uint64(elem)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension in shape %v", shape)
		}
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 || lo > uint64(maxInt) {
			return 0, fmt.Errorf("shape %v too large", shape)
		}
		n = lo
	}
	return int(n), nil
}

const maxInt = int(^uint(0) >> 1)

// check validates a before it is written and returns its dtype row.
func (a *Array) check() (dtypeInfo, error) {
	if a == nil {
		return dtypeInfo{}, fmt.Errorf("nil array")
	}
	d, ok := lookup(byName, a.DType)
	if !ok {
		return d, fmt.Errorf("unknown dtype %q", a.DType)
	}
	n, err := byteSize(a.Shape, d.size)
	if err != nil {
		return d, err
	}
	if len(a.Data) != n {
		return d, fmt.Errorf("%s%v needs %d data bytes, have %d", a.DType, a.Shape, n, len(a.Data))
	}
	return d, nil
}
