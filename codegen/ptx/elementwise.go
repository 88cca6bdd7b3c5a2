package ptx

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
)

// emitter lowers graph ops to instructions on one builder.
type emitter struct {
	b *builder
}

func (e *emitter) tmp(d ir.DType) string { return e.b.reg(classOf(d)) }

// op1/op2/op3 emit an instruction into a fresh register of dtype d's class.
func (e *emitter) op(d ir.DType, opcode string, args ...string) val {
	r := e.tmp(d)
	e.b.ins(opcode, append([]string{r}, args...)...)
	return val{d, r}
}

// round brings a value computed in its register type back into dtype d: f16 and bf16 round to
// nearest even through their 16-bit form, i8 and u8 wrap.
func (e *emitter) round(v val) val {
	switch v.dt {
	case ir.F16, ir.BF16:
		h := e.b.reg(rB16)
		e.b.ins("cvt.rn."+halfName(v.dt)+".f32", h, e.reg(v))
		return e.widenHalf(v.dt, h)
	case ir.F8E4M3, ir.F8E5M2:
		return e.widenFP8(v.dt, e.narrowFP8(v.dt, e.reg(v)))
	case ir.I8:
		return e.op(v.dt, "cvt.s32.s8", e.reg(v))
	case ir.U8:
		return e.op(v.dt, "and.b32", e.reg(v), "255")
	}
	return v
}

func halfName(d ir.DType) string {
	if d == ir.BF16 {
		return "bf16"
	}
	return "f16"
}

// widenHalf converts a 16-bit f16/bf16 image to f32 exactly. bf16 is the top half of an f32, so
// a shift does it on every target (cvt.f32.bf16 needs sm_90).
func (e *emitter) widenHalf(d ir.DType, h string) val {
	if d == ir.F16 {
		return e.op(d, "cvt.f32.f16", h)
	}
	r := e.b.reg(rU32)
	e.b.ins("cvt.u32.u16", r, h)
	e.b.ins("shl.b32", r, r, "16")
	return e.op(d, "mov.b32", r)
}

// narrowHalf converts an f32 holding an exact f16/bf16 value to its 16-bit image.
func (e *emitter) narrowHalf(v val) string {
	h := e.b.reg(rB16)
	e.b.ins("cvt.rn."+halfName(v.dt)+".f32", h, e.reg(v))
	return h
}

// unary lowers a one-operand elementwise op.
func (e *emitter) unary(op string, x val, out ir.DType, attrs ir.Attrs) (val, error) {
	d := x.dt
	t := arith(d)
	switch op {
	case "neg":
		if d == ir.Bool {
			break
		}
		return e.round(e.op(d, "neg."+t, e.reg(x))), nil
	case "abs":
		if d.IsFloat() {
			return e.op(d, "abs."+t, e.reg(x)), nil
		}
		// abs of the minimum wraps to itself, as neg does.
		n := e.op(d, "neg."+t, e.reg(x))
		p := e.b.reg(rPred)
		e.b.ins("setp.lt."+t, p, e.reg(x), "0")
		return e.round(e.op(d, "selp."+bits(d), n.r, e.reg(x), p)), nil
	case "not":
		if d == ir.Bool {
			return e.op(d, "not.pred", e.reg(x)), nil
		}
		return e.round(e.op(d, "not."+bits(d), e.reg(x))), nil
	case "relu":
		// x if x > 0 or x is NaN, else +0 (so relu(-0) = +0).
		p := e.b.reg(rPred)
		e.b.ins("setp.gtu."+t, p, e.reg(x), zeroImm(d))
		return e.op(d, "selp."+t, e.reg(x), zeroImm(d), p), nil
	case "sqrt":
		return e.round(e.op(d, "sqrt.rn."+t, e.reg(x))), nil
	case "floor":
		return e.op(d, "cvt.rmi."+t+"."+t, e.reg(x)), nil
	case "ceil":
		return e.op(d, "cvt.rpi."+t+"."+t, e.reg(x)), nil
	case "cast":
		return e.cast(x, out), nil
	case "rsqrt", "exp", "log", "sigmoid", "tanh", "erf", "sin", "cos":
		return e.transcendental(op, x)
	}
	return val{}, fmt.Errorf("%s on %s is not supported by the PTX code generator", op, d)
}

func zeroImm(d ir.DType) string {
	if d == ir.F64 {
		return immF64(0)
	}
	return immF32(0)
}

// binary lowers a two-operand elementwise op.
func (e *emitter) binary(op string, a, b val) (val, error) {
	d := a.dt
	t := arith(d)
	if d == ir.Bool {
		switch op {
		case "and", "or":
			return e.op(d, op+".pred", e.reg(a), e.reg(b)), nil
		case "eq", "ne", "lt", "le", "gt", "ge":
			return e.compare(op, e.boolToInt(a), e.boolToInt(b)), nil
		}
		return val{}, fmt.Errorf("%s on bool is not supported", op)
	}
	switch op {
	case "add", "sub":
		if d.IsFloat() {
			// .rn keeps ptxas from contracting a mul and an add into an fma.
			return e.round(e.op(d, op+".rn."+t, e.reg(a), e.reg(b))), nil
		}
		return e.round(e.op(d, op+"."+t, e.reg(a), e.reg(b))), nil
	case "mul":
		if d.IsFloat() {
			return e.round(e.op(d, "mul.rn."+t, e.reg(a), e.reg(b))), nil
		}
		return e.round(e.op(d, "mul.lo."+t, e.reg(a), e.reg(b))), nil
	case "div":
		if d.IsFloat() {
			return e.round(e.op(d, "div.rn."+t, e.reg(a), e.reg(b))), nil
		}
		return e.idiv(a, b), nil
	case "max", "min":
		if d.IsFloat() {
			return e.fminmax(op, a, b), nil
		}
		return e.op(d, op+"."+t, e.reg(a), e.reg(b)), nil
	case "and", "or":
		return e.op(d, op+"."+bits(d), e.reg(a), e.reg(b)), nil
	case "eq", "ne", "lt", "le", "gt", "ge":
		return e.compare(op, a, b), nil
	case "pow":
		return e.pow(a, b)
	}
	return val{}, fmt.Errorf("%s on %s is not supported by the PTX code generator", op, d)
}

func (e *emitter) boolToInt(v val) val {
	return e.op(ir.I32, "selp.u32", "1", "0", e.reg(v))
}

// compare: ordered comparisons are false on NaN; ne is the unordered "neu", true on NaN.
func (e *emitter) compare(op string, a, b val) val {
	cmp := op
	if op == "ne" && a.dt.IsFloat() {
		cmp = "neu"
	}
	p := e.b.reg(rPred)
	e.b.ins("setp."+cmp+"."+arith(a.dt), p, e.reg(a), e.reg(b))
	return val{ir.Bool, p}
}

// fminmax propagates NaN and orders -0 below +0. On equal operands the bitwise and (max) or or
// (min) of the two images picks +0 or -0; otherwise PTX's max/min is exact.
func (e *emitter) fminmax(op string, a, b val) val {
	d, t := a.dt, arith(a.dt)
	ar, br := e.reg(a), e.reg(b)
	m := e.op(d, op+"."+t, ar, br)
	bitop := "and." + bits(d)
	if op == "min" {
		bitop = "or." + bits(d)
	}
	z := e.op(d, bitop, ar, br)
	eq := e.b.reg(rPred)
	e.b.ins("setp.eq."+t, eq, ar, br)
	r := e.op(d, "selp."+t, z.r, m.r, eq)
	nan := e.b.reg(rPred)
	e.b.ins("setp.nan."+t, nan, ar, br)
	s := e.op(d, "add.rn."+t, ar, br) // a NaN operand makes the sum NaN
	return e.op(d, "selp."+t, s.r, r.r, nan)
}

// idiv truncates toward zero with x/0 = 0 and min/-1 = min (the wrap of -min).
func (e *emitter) idiv(a, b val) val {
	d, t := a.dt, arith(a.dt)
	ar, br := e.reg(a), e.reg(b)
	zero, m1 := e.b.reg(rPred), e.b.reg(rPred)
	e.b.ins("setp.eq."+t, zero, br, "0")
	e.b.ins("setp.eq."+t, m1, br, "-1")
	safe := e.b.reg(rPred)
	e.b.ins("or.pred", safe, zero, m1)
	den := e.op(d, "selp."+bits(d), "1", br, safe)
	q := e.op(d, "div."+t, ar, den.r)
	n := e.op(d, "neg."+t, ar)
	q = e.op(d, "selp."+bits(d), n.r, q.r, m1)
	q = e.op(d, "selp."+bits(d), "0", q.r, zero)
	return e.round(q)
}

// selectVal lowers select(pred, a, b).
func (e *emitter) selectVal(p, a, b val) val {
	if a.dt == ir.Bool {
		t1 := e.op(ir.Bool, "and.pred", e.reg(p), e.reg(a))
		np := e.op(ir.Bool, "not.pred", e.reg(p))
		t2 := e.op(ir.Bool, "and.pred", np.r, e.reg(b))
		return e.op(ir.Bool, "or.pred", t1.r, t2.r)
	}
	return e.op(a.dt, "selp."+bits(a.dt), e.reg(a), e.reg(b), e.reg(p))
}
