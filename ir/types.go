package ir

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gcomp/gcomp/ir/sym"
)

// DType is the element type of a tensor.
type DType uint8

// The element types. The zero value is Invalid so that a forgotten dtype is caught by the verifier.
const (
	Invalid DType = iota
	F32
	F16
	BF16
	F64
	I32
	I64
	I8
	U8
	Bool
	// F8E4M3 and F8E5M2 are the 8-bit floats of OCP's OFP8 and NVIDIA's sm_89/sm_90: storage types
	// that ops cast to and from (and move), never compute in. E4M3: bias 7, no infinities,
	// S.1111.111 is NaN, largest finite 448. E5M2: bias 15, IEEE-like (±inf, NaNs), largest 57344.
	F8E4M3
	F8E5M2
)

var dtypeNames = [...]string{Invalid: "invalid", F32: "f32", F16: "f16", BF16: "bf16", F64: "f64",
	I32: "i32", I64: "i64", I8: "i8", U8: "u8", Bool: "bool", F8E4M3: "f8e4m3", F8E5M2: "f8e5m2"}

var dtypeSizes = [...]int{F32: 4, F16: 2, BF16: 2, F64: 8, I32: 4, I64: 8, I8: 1, U8: 1, Bool: 1, F8E4M3: 1, F8E5M2: 1}

// DTypes lists every valid element type, in declaration order.
var DTypes = []DType{F32, F16, BF16, F64, I32, I64, I8, U8, Bool, F8E4M3, F8E5M2}

func (d DType) String() string {
	if int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return "dtype(" + strconv.Itoa(int(d)) + ")"
}

// ParseDType returns the dtype spelled s ("f32", "i64", ...).
func ParseDType(s string) (DType, bool) {
	for _, d := range DTypes {
		if dtypeNames[d] == s {
			return d, true
		}
	}
	return Invalid, false
}

// Size is the number of bytes one element occupies in memory.
func (d DType) Size() int {
	if int(d) < len(dtypeSizes) {
		return dtypeSizes[d]
	}
	return 0
}

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool { return d == F32 || d == F16 || d == BF16 || d == F64 || d.IsFP8() }

// IsFP8 reports whether d is one of the 8-bit float storage types.
func (d DType) IsFP8() bool { return d == F8E4M3 || d == F8E5M2 }

// IsInt reports whether d is an integer type (bool is not).
func (d DType) IsInt() bool { return d == I32 || d == I64 || d == I8 || d == U8 }

// IntLimits returns the smallest and largest value of integer type d (bool: 0 and 1).
func (d DType) IntLimits() (lo, hi int64) {
	switch d {
	case I8:
		return math.MinInt8, math.MaxInt8
	case U8:
		return 0, math.MaxUint8
	case I32:
		return math.MinInt32, math.MaxInt32
	case Bool:
		return 0, 1
	}
	return math.MinInt64, math.MaxInt64
}

// Valid reports whether d is one of DTypes.
func (d DType) Valid() bool { return d > Invalid && d <= F8E5M2 }

// Shape is a static tensor shape. A scalar has the empty shape.
type Shape []int

// NumElements is the product of the dimensions (1 for a scalar).
func (s Shape) NumElements() int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// Rank is the number of dimensions.
func (s Shape) Rank() int { return len(s) }

// Equal reports whether two shapes have the same dimensions.
func (s Shape) Equal(t Shape) bool {
	if len(s) != len(t) {
		return false
	}
	for i := range s {
		if s[i] != t[i] {
			return false
		}
	}
	return true
}

// Clone returns a copy that does not alias s.
func (s Shape) Clone() Shape { return append(Shape{}, s...) }

// Strides returns the row-major (C order) element strides of s.
func (s Shape) Strides() []int {
	st := make([]int, len(s))
	acc := 1
	for i := len(s) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= s[i]
	}
	return st
}

func (s Shape) String() string {
	var sb strings.Builder
	sb.WriteByte('[')
	for i, d := range s {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.Itoa(d))
	}
	sb.WriteByte(']')
	return sb.String()
}

// Type is a tensor type: element type and static shape, printed as f32[64,3,28,28].
type Type struct {
	DType DType
	Shape Shape
	// Sym is each axis's size as an expression over the graph's dims, printed f32[batch,seq,768],
	// when the type depends on them (dims.go, docs/dynamic.md); Shape then holds each axis's
	// upper bound. nil for a static type.
	Sym []sym.Expr
}

// T is shorthand for Type{d, shape}.
func T(d DType, shape ...int) Type { return Type{DType: d, Shape: Shape(shape)} }

func (t Type) String() string {
	if t.Sym != nil {
		return t.DType.String() + symString(t.Sym)
	}
	return t.DType.String() + t.Shape.String()
}

// Equal reports whether two types have the same dtype and shape, and the same symbolic sizes.
func (t Type) Equal(u Type) bool {
	return t.DType == u.DType && t.Shape.Equal(u.Shape) && (t.Sym == nil && u.Sym == nil || symEqual(t, u))
}

// Bytes is the size of a tensor of this type in memory.
func (t Type) Bytes() int { return t.Shape.NumElements() * t.DType.Size() }

// ParseType parses the text form of a type, e.g. "f32[2,3]" or "i64[]".
func ParseType(s string) (Type, error) {
	open := strings.IndexByte(s, '[')
	if open < 0 || !strings.HasSuffix(s, "]") {
		return Type{}, fmt.Errorf("bad type %q: want dtype[dims]", s)
	}
	d, ok := ParseDType(s[:open])
	if !ok {
		return Type{}, fmt.Errorf("unknown dtype %q", s[:open])
	}
	body := s[open+1 : len(s)-1]
	shape := Shape{}
	if body != "" {
		for _, f := range strings.Split(body, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 0 {
				return Type{}, fmt.Errorf("bad dimension %q in type %q", f, s)
			}
			shape = append(shape, n)
		}
	}
	return Type{DType: d, Shape: shape}, nil
}
