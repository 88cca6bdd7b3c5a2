package ptx

import "github.com/gcomp/gcomp/ir"

// cast converts x to dtype to with the op table's rules: one rounding to nearest even from the
// exact value, float→int truncating with saturation and NaN → 0 (PTX's cvt.rzi does exactly
// that), int→int wrapping, anything→bool as x != 0.
func (e *emitter) cast(x val, to ir.DType) val {
	from := x.dt
	switch {
	case from == to:
		return x
	case to == ir.Bool:
		if from.IsFloat() {
			p := e.b.reg(rPred)
			e.b.ins("setp.neu."+arith(from), p, e.reg(x), zeroImm(from)) // NaN → true
			return val{to, p}
		}
		p := e.b.reg(rPred)
		e.b.ins("setp.ne."+arith(from), p, e.reg(x), "0")
		return val{to, p}
	case from == ir.Bool:
		if to.IsFloat() {
			one := immF32(1)
			if to == ir.F64 {
				one = immF64(1)
			}
			return e.op(to, "selp."+arith(to), one, zeroImm(to), e.reg(x))
		}
		return e.op(to, "selp."+bits(to), "1", "0", e.reg(x))
	case from.IsFloat() && to.IsFloat():
		return e.floatToFloat(x, to)
	case from.IsFloat():
		return e.floatToInt(x, to)
	case to.IsFloat():
		return e.intToFloat(x, to)
	}
	return e.intToInt(x, to)
}

func (e *emitter) floatToFloat(x val, to ir.DType) val {
	switch {
	case to == ir.F64:
		return e.op(to, "cvt.f64.f32", e.reg(x)) // f16, bf16 and f32 are exact in f64
	case to == ir.F32 && x.dt == ir.F64:
		return e.op(to, "cvt.rn.f32.f64", e.reg(x))
	case to == ir.F32:
		return val{to, x.r} // f16/bf16 values are exact f32 values already
	case x.dt == ir.F64:
		// f64 → f16/bf16 through f32 rounded to odd: 24 bits ≥ 11 + 2, so the second rounding
		// gives the correctly rounded result.
		return e.round(e.toOdd32(e.reg(x), "f64", "cvt.f64.f32", to))
	}
	// f32, f16 or bf16 → f16/bf16: one rounding from the exact value.
	return e.round(val{to, x.r})
}

// toOdd32 converts a 64-bit source (f64 or s64) to f32 rounded toward zero, then sets the last
// bit if the conversion was inexact: round-to-odd, which makes a later narrower rounding exact.
func (e *emitter) toOdd32(src, srcType, back string, d ir.DType) val {
	t := e.b.reg(rF32)
	e.b.ins("cvt.rz.f32."+srcType, t, src)
	w := e.b.reg(classOf(map[string]ir.DType{"f64": ir.F64, "s64": ir.I64}[srcType]))
	e.b.ins(back, w, t)
	inexact := e.b.reg(rPred)
	cmp := "setp.ne.s64"
	if srcType == "f64" {
		cmp = "setp.ne.f64" // NaN: ne is false, the NaN stays NaN
	}
	e.b.ins(cmp, inexact, w, src)
	o := e.b.reg(rF32)
	e.b.ins("or.b32", o, t, "1")
	r := e.b.reg(rF32)
	e.b.ins("selp.f32", r, o, t, inexact)
	return val{d, r}
}

func (e *emitter) floatToInt(x val, to ir.DType) val {
	src := arith(x.dt)
	switch to {
	case ir.I64:
		return e.op(to, "cvt.rzi.s64."+src, e.reg(x))
	case ir.I32:
		return e.op(to, "cvt.rzi.s32."+src, e.reg(x))
	}
	// i8/u8: saturate in 32 bits, then clamp to the narrow range.
	r := e.op(to, "cvt.rzi.s32."+src, e.reg(x))
	lo, hi := "-128", "127"
	if to == ir.U8 {
		lo, hi = "0", "255"
	}
	r = e.op(to, "max.s32", r.r, lo)
	return e.op(to, "min.s32", r.r, hi)
}

func (e *emitter) intToFloat(x val, to ir.DType) val {
	src := arith(x.dt)
	switch to {
	case ir.F32:
		return e.op(to, "cvt.rn.f32."+src, e.reg(x))
	case ir.F64:
		return e.op(to, "cvt.rn.f64."+src, e.reg(x))
	}
	// f16/bf16: 32-bit integers are exact in f64, 64-bit ones go through round-to-odd f32.
	if x.dt == ir.I64 {
		return e.round(e.toOdd32(e.reg(x), "s64", "cvt.rzi.s64.f32", to))
	}
	wide := e.op(ir.F64, "cvt.rn.f64."+src, e.reg(x))
	return e.round(e.toOdd32(wide.r, "f64", "cvt.f64.f32", to))
}

func (e *emitter) intToInt(x val, to ir.DType) val {
	switch {
	case to == ir.I64 && x.dt == ir.U8:
		return e.op(to, "cvt.u64.u32", e.reg(x))
	case to == ir.I64:
		return e.op(to, "cvt.s64.s32", e.reg(x))
	case x.dt == ir.I64:
		return e.round(e.op(to, "cvt.u32.u64", e.reg(x)))
	}
	return e.round(val{to, e.reg(x)})
}
