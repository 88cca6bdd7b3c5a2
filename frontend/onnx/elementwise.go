package onnx

import (
	"fmt"
	"math"

	"github.com/gcomp/gcomp/ir"
)

// converters maps ONNX op types to their conversion; refused names ops that will not be
// supported, with the reason.
var converters = map[string]converter{}

var refused = map[string]string{
	"NonZero":                   "its output's shape depends on the input's values",
	"Unique":                    "its output's shape depends on the input's values",
	"Compress":                  "its output's shape depends on the condition's values",
	"NonMaxSuppression":         "its output's shape depends on the input's values",
	"Loop":                      "control flow (its trip count and outputs depend on data)",
	"If":                        "control flow (the branch taken depends on data)",
	"Scan":                      "control flow (subgraphs)",
	"SequenceInsert":            "sequences are not tensors",
	"SequenceMap":               "sequences are not tensors",
	"SequenceConstruct":         "sequences are not tensors",
	"SequenceAt":                "sequences are not tensors",
	"SequenceEmpty":             "sequences are not tensors",
	"SplitToSequence":           "sequences are not tensors",
	"ConcatFromSequence":        "sequences are not tensors",
	"OptionalGetElement":        "optionals are not tensors",
	"OptionalHasElement":        "optionals are not tensors",
	"Optional":                  "optionals are not tensors",
	"StringNormalizer":          "strings are not tensors gcomp computes on",
	"TfIdfVectorizer":           "strings and n-gram tables",
	"Bernoulli":                 "random ops",
	"RandomNormal":              "random ops",
	"RandomUniform":             "random ops",
	"RandomNormalLike":          "random ops",
	"RandomUniformLike":         "random ops",
	"Multinomial":               "random ops",
	"ArgMax":                    "gcomp's op table has no argmax yet",
	"ArgMin":                    "gcomp's op table has no argmin yet",
	"TopK":                      "gcomp's op table has no topk yet",
	"Hardmax":                   "gcomp's op table has no argmax yet",
	"CumSum":                    "gcomp's op table has no cumsum yet",
	"Resize":                    "gcomp's op table has no resize yet",
	"Upsample":                  "gcomp's op table has no resize yet",
	"ConvTranspose":             "gcomp's op table has no conv_transpose yet",
	"ReverseSequence":           "gcomp's op table has no flip yet",
	"GatherElements":            "gcomp's op table has no gather along an axis with per-element indices",
	"GatherND":                  "gcomp's op table has no gather_nd",
	"ScatterElements":           "gcomp's op table has no scatter",
	"Scatter":                   "gcomp's op table has no scatter",
	"ScatterND":                 "gcomp's op table has no scatter",
	"QuantizeLinear":            "quantization is not supported yet",
	"DequantizeLinear":          "quantization is not supported yet",
	"DynamicQuantizeLinear":     "quantization is not supported yet",
	"QLinearConv":               "quantization is not supported yet",
	"QLinearMatMul":             "quantization is not supported yet",
	"ConvInteger":               "quantization is not supported yet",
	"MatMulInteger":             "quantization is not supported yet",
	"DFT":                       "complex numbers are not supported",
	"STFT":                      "complex numbers are not supported",
	"GridSample":                "gcomp's op table has no data-dependent gather",
	"RoiAlign":                  "gcomp's op table has no data-dependent gather",
	"MaxRoiPool":                "gcomp's op table has no data-dependent gather",
	"LpPool":                    "gcomp's op table has no Lp pooling",
	"Atan":                      "gcomp's op table has no atan",
	"Asin":                      "gcomp's op table has no atan (asin is built from it)",
	"Acos":                      "gcomp's op table has no atan (acos is built from it)",
	"LRN":                       "gcomp's op table has no windowed sum over channels",
	"NegativeLogLikelihoodLoss": "gcomp's op table has no gather along an axis with per-element indices (the expanded form of the loss is imported where its ops are)",
	"SoftmaxCrossEntropyLoss":   "gcomp's op table has no gather along an axis with per-element indices (the expanded form of the loss is imported where its ops are)",
}

func init() {
	for name, op := range map[string]string{"Abs": "abs", "Neg": "neg", "Exp": "exp", "Log": "log",
		"Sqrt": "sqrt", "Ceil": "ceil", "Floor": "floor", "Sin": "sin", "Cos": "cos", "Tanh": "tanh",
		"Sigmoid": "sigmoid", "Relu": "relu", "Erf": "erf", "Not": "not"} {
		converters[name] = unaryConv(op)
	}
	for name, op := range map[string]string{"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div",
		"Equal": "eq", "Less": "lt", "Greater": "gt", "LessOrEqual": "le", "GreaterOrEqual": "ge",
		"And": "and", "Or": "or", "Xor": "ne"} {
		converters[name] = binaryConv(op)
	}
	for name, op := range map[string]string{"Max": "max", "Min": "min", "Sum": "add", "Mean": "add"} {
		converters[name] = variadicConv(op, name == "Mean")
	}
	converters["Identity"] = func(n *node) ([]*val, error) { return n.in[:1], n.inputs(1, 1) }
	converters["Pow"] = convPow
	converters["Mod"] = convMod
	converters["Where"] = func(n *node) ([]*val, error) {
		if err := n.inputs(3, 3); err != nil {
			return nil, err
		}
		return one(n.selectOp(n.in[0], n.in[1], n.in[2]))
	}
	converters["Cast"] = convCast
	converters["CastLike"] = convCast
	converters["Clip"] = convClip
	converters["Reciprocal"] = floatUnary(func(n *node, x *val) *val { return n.bin("div", n.splat(x, 1), x) })
	converters["Tan"] = floatUnary(func(n *node, x *val) *val { return n.bin("div", n.unary("sin", x), n.unary("cos", x)) })
	converters["Softsign"] = floatUnary(func(n *node, x *val) *val {
		return n.bin("div", x, n.bin("add", n.splat(x, 1), n.unary("abs", x)))
	})
	converters["Softplus"] = floatUnary(func(n *node, x *val) *val { return n.unary("log", n.bin("add", n.unary("exp", x), n.splat(x, 1))) })
	converters["Sinh"] = floatUnary(func(n *node, x *val) *val {
		return n.bin("mul", n.bin("sub", n.unary("exp", x), n.unary("exp", n.unary("neg", x))), n.splat(x, 0.5))
	})
	converters["Cosh"] = floatUnary(func(n *node, x *val) *val {
		return n.bin("mul", n.bin("add", n.unary("exp", x), n.unary("exp", n.unary("neg", x))), n.splat(x, 0.5))
	})
	converters["Asinh"] = floatUnary(func(n *node, x *val) *val {
		return n.unary("log", n.bin("add", x, n.unary("sqrt", n.bin("add", n.bin("mul", x, x), n.splat(x, 1)))))
	})
	converters["Acosh"] = floatUnary(func(n *node, x *val) *val {
		return n.unary("log", n.bin("add", x, n.unary("sqrt", n.bin("sub", n.bin("mul", x, x), n.splat(x, 1)))))
	})
	converters["Atanh"] = floatUnary(func(n *node, x *val) *val {
		return n.bin("mul", n.unary("log", n.bin("div", n.bin("add", n.splat(x, 1), x), n.bin("sub", n.splat(x, 1), x))), n.splat(x, 0.5))
	})
	converters["IsNaN"] = floatUnary(func(n *node, x *val) *val { return n.bin("ne", x, x) })
	converters["IsInf"] = floatUnary(func(n *node, x *val) *val {
		pos, neg := n.attrInt("detect_positive", 1) != 0, n.attrInt("detect_negative", 1) != 0
		r := n.bin("ne", x, x) // false everywhere, of x's shape
		r = n.bin("and", r, n.bin("eq", x, n.splat(x, 1)))
		if pos {
			r = n.bin("or", r, n.bin("eq", x, n.splat(x, math.Inf(1))))
		}
		if neg {
			r = n.bin("or", r, n.bin("eq", x, n.splat(x, math.Inf(-1))))
		}
		return r
	})
	converters["Sign"] = numericUnary(func(n *node, x *val) *val {
		r := must(n.selectOp(n.bin("gt", x, n.splat(x, 0)), n.splat(x, 1), x))
		if x.t.DType == ir.U8 {
			return r
		}
		return must(n.selectOp(n.bin("lt", x, n.splat(x, 0)), n.splat(x, -1), r))
	})
	converters["Round"] = floatUnary(func(n *node, x *val) *val { return n.roundEven(x) })
	// Activations, as their ONNX definitions.
	converters["LeakyRelu"] = floatUnary(func(n *node, x *val) *val {
		a := n.attrFloat("alpha", 0.01)
		return must(n.selectOp(n.bin("lt", x, n.splat(x, 0)), n.bin("mul", x, n.splat(x, a)), x))
	})
	converters["Elu"] = floatUnary(func(n *node, x *val) *val {
		a := n.attrFloat("alpha", 1)
		neg := n.bin("mul", n.bin("sub", n.unary("exp", x), n.splat(x, 1)), n.splat(x, a))
		return must(n.selectOp(n.bin("lt", x, n.splat(x, 0)), neg, x))
	})
	converters["Selu"] = floatUnary(func(n *node, x *val) *val {
		a := n.attrFloat("alpha", 1.67326319217681884765625)
		g := n.attrFloat("gamma", 1.05070102214813232421875)
		neg := n.bin("sub", n.bin("mul", n.unary("exp", x), n.splat(x, a)), n.splat(x, a))
		return n.bin("mul", must(n.selectOp(n.bin("le", x, n.splat(x, 0)), neg, x)), n.splat(x, g))
	})
	converters["Celu"] = floatUnary(func(n *node, x *val) *val {
		a := n.attrFloat("alpha", 1)
		e := n.bin("mul", n.bin("sub", n.unary("exp", n.bin("div", x, n.splat(x, a))), n.splat(x, 1)), n.splat(x, a))
		return n.bin("add", n.bin("max", x, n.splat(x, 0)), n.bin("min", e, n.splat(x, 0)))
	})
	converters["HardSigmoid"] = floatUnary(func(n *node, x *val) *val {
		a, b := n.attrFloat("alpha", 0.2), n.attrFloat("beta", 0.5)
		y := n.bin("add", n.bin("mul", x, n.splat(x, a)), n.splat(x, b))
		return n.bin("max", n.bin("min", y, n.splat(x, 1)), n.splat(x, 0))
	})
	converters["HardSwish"] = floatUnary(func(n *node, x *val) *val {
		y := n.bin("add", n.bin("mul", x, n.splat(x, 1.0/6)), n.splat(x, 0.5))
		return n.bin("mul", x, n.bin("max", n.bin("min", y, n.splat(x, 1)), n.splat(x, 0)))
	})
	converters["ThresholdedRelu"] = floatUnary(func(n *node, x *val) *val {
		a := n.attrFloat("alpha", 1)
		return must(n.selectOp(n.bin("gt", x, n.splat(x, a)), x, n.splat(x, 0)))
	})
	converters["Shrink"] = numericUnary(func(n *node, x *val) *val {
		bias, l := n.attrFloat("bias", 0), n.attrFloat("lambd", 0.5)
		hi := must(n.selectOp(n.bin("gt", x, n.splat(x, l)), n.bin("sub", x, n.splat(x, bias)), n.splat(x, 0)))
		return must(n.selectOp(n.bin("lt", x, n.splat(x, -l)), n.bin("add", x, n.splat(x, bias)), hi))
	})
	converters["PRelu"] = func(n *node) ([]*val, error) {
		if err := n.inputs(2, 2); err != nil {
			return nil, err
		}
		x, s := n.in[0], n.in[1]
		sb, err := n.broadcastLike(s, x.t)
		if err != nil {
			return nil, err
		}
		return one(n.selectOp(n.bin("lt", x, n.splat(x, 0)), n.bin("mul", x, sb), x))
	}
}

// roundEven rounds half to even: floor(x), plus 1 above the half, and at the half when floor(x)
// is odd.
func (n *node) roundEven(x *val) *val {
	f := n.unary("floor", x)
	d := n.bin("sub", x, f)
	half := n.splat(x, 0.5)
	odd := n.bin("ne", n.bin("sub", f, n.bin("mul", n.unary("floor", n.bin("mul", f, half)), n.splat(x, 2))), n.splat(x, 0))
	up := n.bin("or", n.bin("gt", d, half), n.bin("and", n.bin("eq", d, half), odd))
	return must(n.selectOp(up, n.bin("add", f, n.splat(x, 1)), f))
}

func unaryConv(op string) converter {
	return func(n *node) ([]*val, error) {
		if err := n.inputs(1, 1); err != nil {
			return nil, err
		}
		if n.in[0].t.DType == ir.Bool && op != "not" || n.in[0].t.DType.IsInt() && !intUnary[op] {
			return nil, unsupportedf("%s of %s is not supported", n.p.GetOpType(), n.in[0].t.DType)
		}
		return one(n.op(op, nil, n.in[0]))
	}
}

var intUnary = map[string]bool{"abs": true, "neg": true, "not": true}

// floatUnary wraps a conversion of a float tensor.
func floatUnary(f func(n *node, x *val) *val) converter {
	return func(n *node) ([]*val, error) {
		if err := n.inputs(1, 1); err != nil {
			return nil, err
		}
		if !n.in[0].t.DType.IsFloat() {
			return nil, unsupportedf("%s of %s is not supported (floats only)", n.p.GetOpType(), n.in[0].t.DType)
		}
		return []*val{f(n, n.in[0])}, nil
	}
}

func numericUnary(f func(n *node, x *val) *val) converter {
	return func(n *node) ([]*val, error) {
		if err := n.inputs(1, 1); err != nil {
			return nil, err
		}
		if n.in[0].t.DType == ir.Bool {
			return nil, unsupportedf("%s of bool is not supported", n.p.GetOpType())
		}
		return []*val{f(n, n.in[0])}, nil
	}
}

func binaryConv(op string) converter {
	return func(n *node) ([]*val, error) {
		if err := n.inputs(2, 2); err != nil {
			return nil, err
		}
		x, y := n.in[0], n.in[1]
		if n.opset < 7 && n.attrInt("broadcast", 0) != 0 {
			return nil, unsupportedf("the legacy broadcast attribute is not supported")
		}
		if (op == "and" || op == "or" || op == "ne") && x.t.DType != ir.Bool {
			return nil, fmt.Errorf("%s needs bool operands, has %s", n.p.GetOpType(), x.t.DType)
		}
		if x.t.DType == ir.Bool && (op == "add" || op == "sub" || op == "mul" || op == "div") {
			return nil, unsupportedf("%s of bool is not supported", n.p.GetOpType())
		}
		return one(n.binary(op, x, y))
	}
}

func variadicConv(op string, mean bool) converter {
	return func(n *node) ([]*val, error) {
		if err := n.inputs(1, 1<<20); err != nil {
			return nil, err
		}
		xs, err := n.broadcastAll(n.in...)
		if err != nil {
			return nil, err
		}
		r := xs[0]
		for _, x := range xs[1:] {
			if r, err = n.binary(op, r, x); err != nil {
				return nil, err
			}
		}
		if mean {
			if !r.t.DType.IsFloat() {
				return nil, unsupportedf("Mean of %s is not supported", r.t.DType)
			}
			r = n.bin("div", r, n.splat(r, float64(len(xs))))
		}
		return []*val{r}, nil
	}
}

func convPow(n *node) ([]*val, error) {
	if err := n.inputs(2, 2); err != nil {
		return nil, err
	}
	x, y := n.in[0], n.in[1]
	if x.t.DType == ir.Bool || y.t.DType == ir.Bool {
		return nil, unsupportedf("Pow of bool is not supported")
	}
	// pow is float-only: integer operands go through f64, where small integer powers are exact,
	// and the result converts back to the base's type (ONNX: the result has the base's type).
	w := x.t.DType
	if !w.IsFloat() {
		w = ir.F64
	}
	r, err := n.binary("pow", n.cast(x, w), n.cast(y, w))
	if err != nil {
		return nil, err
	}
	return []*val{n.cast(r, x.t.DType)}, nil
}

func convMod(n *node) ([]*val, error) {
	if err := n.inputs(2, 2); err != nil {
		return nil, err
	}
	xs, err := n.broadcastAll(n.in[0], n.in[1])
	if err != nil {
		return nil, err
	}
	a, b := xs[0], xs[1]
	if a.t.DType != b.t.DType || a.t.DType == ir.Bool {
		return nil, fmt.Errorf("Mod needs two numeric operands of one type, has %s and %s", a.t.DType, b.t.DType)
	}
	fmod := n.attrInt("fmod", 0) != 0
	if a.t.DType.IsFloat() && !fmod {
		return nil, fmt.Errorf("Mod of floats needs fmod=1")
	}
	var r *val
	if a.t.DType.IsFloat() {
		// C's fmod: a - trunc(a/b)*b, in f64 so that the quotient's rounding does not show.
		a64, b64 := n.cast(a, ir.F64), n.cast(b, ir.F64)
		q := n.bin("div", a64, b64)
		t := must(n.selectOp(n.bin("lt", q, n.splat(q, 0)), n.unary("ceil", q), n.unary("floor", q)))
		return []*val{n.cast(n.bin("sub", a64, n.bin("mul", t, b64)), a.t.DType)}, nil
	}
	// Integers: div truncates; the truncated remainder takes a's sign (fmod=1) or is moved to
	// b's sign (fmod=0, Python's %).
	r = n.bin("sub", a, n.bin("mul", n.bin("div", a, b), b))
	if !fmod && a.t.DType != ir.U8 {
		zero := n.splat(r, 0)
		fix := n.bin("and", n.bin("ne", r, zero), n.bin("ne", n.bin("lt", r, zero), n.bin("lt", b, zero)))
		r = must(n.selectOp(fix, n.bin("add", r, b), r))
	}
	return []*val{r}, nil
}

func convCast(n *node) ([]*val, error) {
	var to ir.DType
	var err error
	if n.p.GetOpType() == "CastLike" {
		if err := n.inputs(2, 2); err != nil {
			return nil, err
		}
		to = n.in[1].t.DType
	} else {
		if err := n.inputs(1, 1); err != nil {
			return nil, err
		}
		if !n.has("to") {
			return nil, fmt.Errorf("Cast needs the attribute to")
		}
		if to, err = dtypeOf(int32(n.attrInt("to", 0))); err != nil {
			return nil, err
		}
	}
	return []*val{n.cast(n.in[0], to)}, nil
}

func convClip(n *node) ([]*val, error) {
	if err := n.inputs(1, 3); err != nil {
		return nil, err
	}
	x := n.in[0]
	if x.t.DType == ir.Bool {
		return nil, fmt.Errorf("Clip of bool")
	}
	var lo, hi *val
	if n.opset < 11 {
		if n.has("min") {
			lo = n.splat(x, n.attrFloat("min", 0))
		}
		if n.has("max") {
			hi = n.splat(x, n.attrFloat("max", 0))
		}
	} else {
		lo, hi = n.arg(1), n.arg(2)
	}
	// Clip is max then min, with NaN propagating as ONNX's reference (numpy.clip) does.
	for _, b := range []struct {
		v  *val
		op string
	}{{lo, "max"}, {hi, "min"}} {
		if b.v == nil {
			continue
		}
		if len(b.v.t.Shape) != 0 && b.v.t.Shape.NumElements() != 1 {
			return nil, fmt.Errorf("Clip's bounds must be scalars, has %s", b.v.t)
		}
		bound := n.reshape(b.v, nil)
		var err error
		if x, err = n.binary(b.op, x, bound); err != nil {
			return nil, err
		}
	}
	return []*val{x}, nil
}
