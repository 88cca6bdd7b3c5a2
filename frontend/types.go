package frontend

import "github.com/gcomp/gcomp/ir"

// DType is the element type of a tensor (an alias of ir.DType, so that a model file needs to
// import only this package).
type DType = ir.DType

// The element types.
const (
	F32  = ir.F32
	F16  = ir.F16
	BF16 = ir.BF16
	F64  = ir.F64
	I32  = ir.I32
	I64  = ir.I64
	I8   = ir.I8
	U8   = ir.U8
	Bool = ir.Bool
	// F8E4M3 and F8E5M2 are storage types (docs/ir.md): x.Cast(F8E4M3) and back, movement ops and
	// Matmul of two fp8 tensors (an F16 result) take them; compute in F16 or F32.
	F8E4M3 = ir.F8E4M3
	F8E5M2 = ir.F8E5M2
)

// Type is a tensor type: dtype and static shape (an alias of ir.Type).
type Type = ir.Type

// T returns the type with dtype d and shape dims, e.g. T(F32, 128, 784).
func T(d DType, dims ...int) Type { return ir.T(d, dims...) }
