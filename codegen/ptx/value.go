package ptx

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
)

// val is one element of a graph value held in a register or an immediate. Floats of every width
// but f64 live in f32 registers (f16 and bf16 values are always exactly representable in their
// dtype: every op rounds its result back); i8, u8 and i32 live in 32-bit registers, sign- or
// zero-extended; bool lives in a predicate.
type val struct {
	dt ir.DType
	r  string
}

func classOf(d ir.DType) regClass {
	switch d {
	case ir.F32, ir.F16, ir.BF16, ir.F8E4M3, ir.F8E5M2:
		return rF32
	case ir.F64:
		return rF64
	case ir.I64:
		return rU64
	case ir.Bool:
		return rPred
	}
	return rU32
}

// arith is the PTX type suffix arithmetic on a dtype's register uses.
func arith(d ir.DType) string {
	switch d {
	case ir.F32, ir.F16, ir.BF16, ir.F8E4M3, ir.F8E5M2:
		return "f32"
	case ir.F64:
		return "f64"
	case ir.I64:
		return "s64"
	}
	return "s32" // i32, and i8/u8 widened to 32 bits (sign- or zero-extended) fit s32 arithmetic
}

// bits is the untyped suffix of the register width.
func bits(d ir.DType) string {
	switch d {
	case ir.F64, ir.I64:
		return "b64"
	}
	return "b32"
}

// memType is the PTX type of one element in memory as ld/st name it.
func memType(d ir.DType) string {
	switch d {
	case ir.F32:
		return "f32"
	case ir.F64:
		return "f64"
	case ir.F16, ir.BF16:
		return "b16"
	case ir.I32:
		return "s32"
	case ir.I64:
		return "s64"
	case ir.I8:
		return "s8"
	}
	return "u8" // u8, bool, f8e4m3, f8e5m2
}

// memClass is the register class ld/st use for one element in memory.
func memClass(d ir.DType) regClass {
	switch d {
	case ir.F16, ir.BF16:
		return rB16
	case ir.Bool, ir.F8E4M3, ir.F8E5M2:
		return rU32
	}
	return classOf(d)
}

// constVal returns an immediate of dtype d with value f (already representable in d; for i64
// the limits arrive as ±2^63, of which +2^63 stands for MaxInt64, see exactInt).
func (e *emitter) constVal(d ir.DType, f float64) val {
	switch d {
	case ir.F32, ir.F16, ir.BF16, ir.F8E4M3, ir.F8E5M2:
		return val{d, immF32(f)}
	case ir.F64:
		return val{d, immF64(f)}
	case ir.Bool:
		return e.predConst(f != 0)
	}
	return val{d, fmt.Sprint(exactInt(f))}
}

// predConst materializes a constant predicate.
func (e *emitter) predConst(v bool) val {
	r := e.b.reg(rU32)
	n := "0"
	if v {
		n = "1"
	}
	e.b.ins("mov.u32", r, n)
	p := e.b.reg(rPred)
	e.b.ins("setp.ne.u32", p, r, "0")
	return val{ir.Bool, p}
}

// reg materializes v into a register (immediates become a mov).
func (e *emitter) reg(v val) string {
	if !isImm(v.r) {
		return v.r
	}
	r := e.b.reg(classOf(v.dt))
	e.b.ins("mov."+bits(v.dt), r, v.r)
	return r
}
