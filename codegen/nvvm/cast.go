package nvvm

import (
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	irg "github.com/gcomp/gcomp/ir"
)

// cast converts x of dtype from to dtype to with the op table's rules, as codegen/ptx's cast:
// one rounding to nearest even from the exact value (a 64-bit source narrowed to f16/bf16 goes
// through f32 rounded to odd), float→int truncating with saturation and NaN → 0 (the
// llvm.nvvm.f2i.rz family is PTX's cvt.rzi, which does exactly that; LLVM's fptosi would be
// poison out of range), int→int wrapping, anything→bool as x != 0.
func (kg *kgen) cast(from irg.DType, x value.Value, to irg.DType) value.Value {
	b := kg.b
	switch {
	case from == to:
		return x
	case to == irg.Bool:
		if from.IsFloat() {
			return b.NewFCmp(enum.FPredUNE, x, fzero(from)) // NaN → true
		}
		return b.NewICmp(enum.IPredNE, x, constVal(from, 0))
	case from == irg.Bool:
		return b.NewSelect(x, constVal(to, 1), constVal(to, 0))
	case from.IsFloat() && to.IsFloat():
		switch {
		case to == irg.F64:
			return b.NewFPExt(x, types.Double)
		case to == irg.F32 && from == irg.F64:
			return b.NewFPTrunc(x, types.Float)
		case to == irg.F32:
			return x // f16/bf16 values are exact f32 values already
		case from == irg.F64:
			return kg.round(to, kg.toOdd32(x, false))
		}
		return kg.round(to, x)
	case from.IsFloat():
		src := "f"
		if from == irg.F64 {
			src = "d"
		}
		if to == irg.I64 {
			return kg.call("llvm.nvvm."+src+"2ll.rz", types.I64, x)
		}
		r := kg.call("llvm.nvvm."+src+"2i.rz", types.I32, x)
		if to == irg.I32 {
			return r
		}
		lo, hi := -128, 127
		if to == irg.U8 {
			lo, hi = 0, 255
		}
		r = b.NewSelect(b.NewICmp(enum.IPredSLT, r, ci(lo)), ci(lo), r)
		r = b.NewSelect(b.NewICmp(enum.IPredSGT, r, ci(hi)), ci(hi), r)
		return b.NewTrunc(r, types.I8)
	case to.IsFloat():
		conv := func(t types.Type) value.Value {
			if from == irg.U8 {
				return b.NewUIToFP(x, t)
			}
			return b.NewSIToFP(x, t)
		}
		switch {
		case to == irg.F32:
			return conv(types.Float)
		case to == irg.F64:
			return conv(types.Double)
		case from == irg.I64:
			return kg.round(to, kg.toOdd32(x, true))
		}
		return kg.round(to, kg.toOdd32(conv(types.Double), false)) // exact in f64
	}
	fw, tw := from.Size(), to.Size()
	switch {
	case tw > fw && from == irg.U8:
		return b.NewZExt(x, regType(to))
	case tw > fw:
		return b.NewSExt(x, regType(to))
	case tw < fw:
		return b.NewTrunc(x, regType(to))
	}
	return x // i8 ↔ u8: the same bits
}

// toOdd32 converts an f64 (or, with isInt, an i64) to f32 rounded toward zero, then sets the
// last bit if the conversion was inexact: round-to-odd, which makes a later rounding to f16 or
// bf16 correctly rounded from the exact value.
func (kg *kgen) toOdd32(x value.Value, isInt bool) value.Value {
	b := kg.b
	var t, inexact value.Value
	if isInt {
		t = kg.call("llvm.nvvm.ll2f.rz", types.Float, x)
		inexact = b.NewICmp(enum.IPredNE, kg.call("llvm.nvvm.f2ll.rz", types.I64, t), x)
	} else {
		t = kg.call("llvm.nvvm.d2f.rz", types.Float, x)
		inexact = b.NewFCmp(enum.FPredONE, b.NewFPExt(t, types.Double), x) // NaN stays NaN
	}
	odd := b.NewBitCast(b.NewOr(b.NewBitCast(t, types.I32), ci(1)), types.Float)
	return b.NewSelect(inexact, odd, t)
}
