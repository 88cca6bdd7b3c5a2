package nvvm

import (
	"fmt"
	"math"

	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	irg "github.com/gcomp/gcomp/ir"
)

// Elementwise ops with the op table's numerics (docs/ops.md), as codegen/ptx computes them:
// floats narrower than f64 compute in f32 and round back to f16/bf16 after every op; integers
// compute at their own width, so they wrap as the table says.

func fzero(d irg.DType) constant.Constant { return constVal(d, 0) }

// call calls an intrinsic or libdevice function of one type, declaring it on first use.
func (kg *kgen) call(name string, ret types.Type, args ...value.Value) value.Value {
	var ps []types.Type
	for _, a := range args {
		ps = append(ps, a.Type())
	}
	return kg.b.NewCall(kg.md.declare(name, ret, ps...), args...)
}

// round brings a float computed in f32 back into f16/bf16 (to nearest even).
func (kg *kgen) round(d irg.DType, x value.Value) value.Value {
	switch d {
	case irg.F16:
		return kg.b.NewFPExt(kg.b.NewFPTrunc(x, types.Half), types.Float)
	case irg.BF16:
		return kg.roundBF16(x)
	}
	return x
}

// roundBF16 rounds an f32 to bf16 precision (nearest even) on its bits: libNVVM 11.8 has no
// bfloat type. A NaN keeps its sign and top payload bits and is made quiet.
func (kg *kgen) roundBF16(x value.Value) value.Value {
	b := kg.b
	u := b.NewBitCast(x, types.I32)
	odd := b.NewAnd(b.NewLShr(u, ci(16)), ci(1))
	r := b.NewAnd(b.NewAdd(b.NewAdd(u, ci(0x7FFF)), odd), constant.NewInt(types.I32, -0x10000))
	nan := b.NewOr(b.NewAnd(u, constant.NewInt(types.I32, -0x10000)), ci(0x400000))
	isNaN := b.NewFCmp(enum.FPredUNO, x, x)
	return b.NewBitCast(b.NewSelect(isNaN, nan, r), types.Float)
}

func signed(d irg.DType) bool { return d == irg.I8 || d == irg.I32 || d == irg.I64 }

func (kg *kgen) unary(op string, d irg.DType, x value.Value, out irg.DType) (value.Value, error) {
	b := kg.b
	switch op {
	case "neg":
		switch {
		case d.IsFloat():
			return kg.round(d, b.NewFSub(constant.NewFloat(regType(d).(*types.FloatType), math.Copysign(0, -1)), x)), nil
		case d != irg.Bool:
			return b.NewSub(constVal(d, 0), x), nil
		}
	case "abs":
		switch {
		case d.IsFloat():
			return kg.call(fname("llvm.fabs", d), regType(d), x), nil
		case d == irg.U8:
			return x, nil
		case d != irg.Bool:
			return b.NewSelect(b.NewICmp(enum.IPredSLT, x, constVal(d, 0)), b.NewSub(constVal(d, 0), x), x), nil
		}
	case "not":
		if d == irg.Bool {
			return b.NewXor(x, constant.True), nil
		}
		return b.NewXor(x, constant.NewInt(regType(d).(*types.IntType), -1)), nil
	case "relu":
		// x if x > 0 or x is NaN, else +0.
		return b.NewSelect(b.NewFCmp(enum.FPredUGT, x, fzero(d)), x, fzero(d)), nil
	case "sqrt":
		name := "llvm.nvvm.sqrt.rn.f"
		if d == irg.F64 {
			name = "llvm.nvvm.sqrt.rn.d"
		}
		return kg.round(d, kg.call(name, regType(d), x)), nil
	case "floor", "ceil":
		return kg.call(fname("llvm."+op, d), regType(d), x), nil
	case "cast":
		return kg.cast(d, x, out), nil
	case "exp", "log", "tanh", "erf", "sin", "cos", "rsqrt":
		return kg.round(d, kg.libdevice(op, d, x)), nil
	case "sigmoid":
		one := constVal(d, 1)
		e := kg.libdevice("exp", d, b.NewFSub(constant.NewFloat(regType(d).(*types.FloatType), math.Copysign(0, -1)), x))
		return kg.round(d, b.NewFDiv(one, b.NewFAdd(one, e))), nil
	}
	return nil, fmt.Errorf("%s on %s is not supported by the NVVM code generator", op, d)
}

// fname is an overloaded LLVM intrinsic's name for a float dtype.
func fname(stem string, d irg.DType) string {
	if d == irg.F64 {
		return stem + ".f64"
	}
	return stem + ".f32"
}

// libdevice calls NVIDIA's libdevice function for op (__nv_expf for f32, __nv_exp for f64).
func (kg *kgen) libdevice(op string, d irg.DType, args ...value.Value) value.Value {
	name := "__nv_" + op
	if d != irg.F64 {
		name += "f"
	}
	kg.md.libdevice = true
	return kg.call(name, regType(d), args...)
}

func (kg *kgen) binary(op string, d irg.DType, x, y value.Value) (value.Value, error) {
	b := kg.b
	switch op {
	case "add", "sub", "mul", "div":
		if d.IsFloat() {
			var r value.Value
			switch op {
			case "add":
				r = b.NewFAdd(x, y)
			case "sub":
				r = b.NewFSub(x, y)
			case "mul":
				r = b.NewFMul(x, y)
			default:
				r = b.NewFDiv(x, y)
			}
			return kg.round(d, r), nil
		}
		if d == irg.Bool {
			break
		}
		switch op {
		case "add":
			return b.NewAdd(x, y), nil
		case "sub":
			return b.NewSub(x, y), nil
		case "mul":
			return b.NewMul(x, y), nil
		}
		return kg.idiv(d, x, y), nil
	case "pow":
		return kg.round(d, kg.libdevice("pow", d, x, y)), nil
	case "max", "min":
		if d.IsFloat() {
			return kg.fminmax(op, d, x, y), nil
		}
		pred := map[string]enum.IPred{"max": enum.IPredUGT, "min": enum.IPredULT}[op]
		if signed(d) {
			pred = map[string]enum.IPred{"max": enum.IPredSGT, "min": enum.IPredSLT}[op]
		}
		return b.NewSelect(b.NewICmp(pred, x, y), x, y), nil
	case "and":
		return b.NewAnd(x, y), nil
	case "or":
		return b.NewOr(x, y), nil
	case "eq", "ne", "lt", "le", "gt", "ge":
		if d.IsFloat() {
			// Ordered comparisons are false on NaN; ne is the unordered une, true on NaN.
			p := map[string]enum.FPred{"eq": enum.FPredOEQ, "ne": enum.FPredUNE, "lt": enum.FPredOLT,
				"le": enum.FPredOLE, "gt": enum.FPredOGT, "ge": enum.FPredOGE}[op]
			return b.NewFCmp(p, x, y), nil
		}
		p := map[string]enum.IPred{"eq": enum.IPredEQ, "ne": enum.IPredNE, "lt": enum.IPredULT,
			"le": enum.IPredULE, "gt": enum.IPredUGT, "ge": enum.IPredUGE}[op]
		if signed(d) {
			p = map[string]enum.IPred{"eq": enum.IPredEQ, "ne": enum.IPredNE, "lt": enum.IPredSLT,
				"le": enum.IPredSLE, "gt": enum.IPredSGT, "ge": enum.IPredSGE}[op]
		}
		return b.NewICmp(p, x, y), nil // bool compares unsigned: false < true
	}
	return nil, fmt.Errorf("%s on %s is not supported by the NVVM code generator", op, d)
}

// fminmax propagates NaN (the sum of a NaN operand) and orders -0 below +0 (on equal operands
// the and (max) or or (min) of the two images).
func (kg *kgen) fminmax(op string, d irg.DType, x, y value.Value) value.Value {
	b := kg.b
	it := types.I32
	if d == irg.F64 {
		it = types.I64
	}
	ft := regType(d)
	xb, yb := b.NewBitCast(x, it), b.NewBitCast(y, it)
	var z, m value.Value
	if op == "max" {
		z = b.NewBitCast(b.NewAnd(xb, yb), ft)
		m = b.NewSelect(b.NewFCmp(enum.FPredOGT, x, y), x, y)
	} else {
		z = b.NewBitCast(b.NewOr(xb, yb), ft)
		m = b.NewSelect(b.NewFCmp(enum.FPredOLT, x, y), x, y)
	}
	r := b.NewSelect(b.NewFCmp(enum.FPredOEQ, x, y), z, m)
	return b.NewSelect(b.NewFCmp(enum.FPredUNO, x, y), b.NewFAdd(x, y), r)
}

// idiv truncates toward zero with x/0 = 0 and min/-1 = min.
func (kg *kgen) idiv(d irg.DType, x, y value.Value) value.Value {
	b := kg.b
	zero := b.NewICmp(enum.IPredEQ, y, constVal(d, 0))
	if !signed(d) {
		q := b.NewUDiv(x, b.NewSelect(zero, constVal(d, 1), y))
		return b.NewSelect(zero, constVal(d, 0), q)
	}
	m1 := b.NewICmp(enum.IPredEQ, y, constVal(d, -1))
	safe := b.NewOr(zero, m1)
	q := b.NewSDiv(x, b.NewSelect(safe, constVal(d, 1), y))
	q2 := b.NewSelect(m1, b.NewSub(constVal(d, 0), x), q)
	return b.NewSelect(zero, constVal(d, 0), q2)
}
