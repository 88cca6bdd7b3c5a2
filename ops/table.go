package ops

import (
	"math"

	"github.com/gcomp/gcomp/ir"
)

// conventions are the rules every row's Doc assumes; docs/ops.md starts with them.
const conventions = `- Float results are computed in float64 from the operands' exact values and rounded once to the
  result dtype, round-to-nearest-even. For the IEEE basic operations (add, sub, mul, div, sqrt) this
  equals computing in the dtype itself ("f32 in f32"): float64 carries more than twice the precision
  of f32, f16 and bf16 plus two bits, so the double rounding is innocuous. Transcendental functions
  are float64's, rounded once.
- Integer results wrap (two's complement, modulo 2^bits; u8 modulo 256). Bool is 0 or 1.
- Accumulations (reductions, dot_general, conv2d, avg_pool2d) run in float64 (floats) or wrapping
  int64 (integers), start from +0 (or the reduction's identity) and add in a fixed order, then round
  once. The order never depends on blocking or on the number of threads: results are bit-identical
  whatever GOMAXPROCS is.
- Binary elementwise operands have equal types: there is no implicit broadcasting (the DSL inserts
  broadcast_in_dim).
- Eval errors exist only where the data can be wrong (gather's indices); everything else is caught
  by inference.`

// The op table. Every row's Doc is its specification, and Eval implements exactly that.
func init() {
	un := func(name string, allowed dset, f func(float64) float64, i func(int64) int64, doc string) *Op {
		return &Op{Name: name, Arity: 1, Class: Elementwise, Doc: doc + typesDoc(allowed), Infer: inferUnary(allowed), Eval: evalMap(f, i)}
	}
	bin := func(name string, allowed dset, result ir.DType, f func(a, b float64) float64, i func(a, b int64) int64, doc string) *Op {
		return &Op{Name: name, Arity: 2, Class: Elementwise, Doc: doc + typesDoc(allowed), Infer: inferBinary(allowed, result), Eval: evalMap2(f, i)}
	}
	cmp := func(name string, f func(a, b float64) bool, i func(a, b int64) bool, doc string) *Op {
		return bin(name, anyType, ir.Bool, func(a, b float64) float64 { return b2f(f(a, b)) },
			func(a, b int64) int64 { return b2i(i(a, b)) }, doc+" The result is bool; bool operands compare as 0 < 1.")
	}
	reduce := func(name string, f func(a, b float64) float64, i func(a, b int64) int64, fid float64, doc string) *Op {
		return &Op{Name: name, Arity: 1, Class: Reduce, Doc: doc + reduceDoc,
			Attrs: []AttrSpec{{"axes", AttrInts, false}, {"keepdims", AttrBool, true}},
			Infer: inferReduce, Eval: evalReduce(f, i, fid)}
	}
	register(
		// Unary elementwise.
		un("neg", numeric, func(x float64) float64 { return -x }, func(x int64) int64 { return -x },
			"-x. neg(+0) = -0, neg(NaN) = NaN. Integers wrap: neg(i32 min) = i32 min, neg(u8 x) = 256-x mod 256."),
		un("abs", numeric, math.Abs, func(x int64) int64 { return max(x, -x) },
			"|x|. abs(-0) = +0, abs(-inf) = +inf, abs(NaN) = NaN. Integers wrap: abs(i32 min) = i32 min; u8 is unchanged."),
		un("exp", floats, math.Exp, nil, "e^x. exp(-inf) = +0, exp(+inf) = +inf, exp(NaN) = NaN; overflow gives +inf."),
		un("log", floats, math.Log, nil, "Natural log. log(±0) = -inf, log(x<0) = NaN, log(+inf) = +inf."),
		un("sqrt", floats, math.Sqrt, nil, "Square root. sqrt(-0) = -0, sqrt(x<0) = NaN, sqrt(+inf) = +inf."),
		un("rsqrt", floats, func(x float64) float64 { return 1 / math.Sqrt(x) }, nil,
			"1/sqrt(x), computed in float64 and rounded once. rsqrt(+0) = +inf, rsqrt(-0) = -inf, rsqrt(x<0) = NaN, rsqrt(+inf) = +0."),
		un("tanh", floats, math.Tanh, nil, "Hyperbolic tangent. tanh(±0) = ±0, tanh(±inf) = ±1."),
		un("sigmoid", floats, sigmoid, nil,
			"1/(1+e^-x), computed stably: e^x/(1+e^x) for x < 0, so no intermediate overflows. sigmoid(-inf) = +0, sigmoid(+inf) = 1, sigmoid(NaN) = NaN."),
		un("relu", floats, relu, nil, "max(x, 0): x if x > 0, NaN if x is NaN, else +0 (relu(-0) = +0)."),
		un("erf", floats, math.Erf, nil, "Error function. erf(±0) = ±0, erf(±inf) = ±1."),
		un("sin", floats, math.Sin, nil, "Sine of x radians. sin(±0) = ±0, sin(±inf) = NaN."),
		un("cos", floats, math.Cos, nil, "Cosine of x radians. cos(±inf) = NaN."),
		un("floor", floats, math.Floor, nil, "Largest integer ≤ x, in the same dtype. floor(-0) = -0; ±inf and NaN pass through."),
		un("ceil", floats, math.Ceil, nil, "Smallest integer ≥ x, in the same dtype. ceil(-0.5) = -0; ±inf and NaN pass through."),
		un("not", logical, nil, func(x int64) int64 { return ^x },
			"Logical not for bool; bitwise complement for integers (u8: 255-x)."),

		// Binary elementwise. Both operands have the same type; there is no implicit broadcasting.
		bin("add", numeric, 0, func(a, b float64) float64 { return a + b }, func(a, b int64) int64 { return a + b },
			"a + b. IEEE: inf + -inf = NaN, -0 + -0 = -0, -0 + +0 = +0. Integers wrap."),
		bin("sub", numeric, 0, func(a, b float64) float64 { return a - b }, func(a, b int64) int64 { return a - b },
			"a - b. IEEE: inf - inf = NaN, +0 - +0 = +0. Integers wrap."),
		bin("mul", numeric, 0, func(a, b float64) float64 { return a * b }, func(a, b int64) int64 { return a * b },
			"a * b. IEEE: 0 * inf = NaN, the sign of a zero product is the xor of the signs. Integers wrap."),
		bin("div", numeric, 0, func(a, b float64) float64 { return a / b }, idiv,
			"a / b. Floats: IEEE (x/±0 = ±inf for x ≠ 0, 0/0 = NaN). Integers: truncates toward zero, "+
				"and by our definition x / 0 = 0 for every x; min / -1 wraps to min."),
		bin("pow", floats, 0, math.Pow, nil,
			"a^b, floats only, with C99/Go pow special cases: pow(x, ±0) = 1 for any x (NaN too), pow(1, y) = 1, "+
				"pow(x<0, non-integer y) = NaN, pow(±0, y<0) = +inf (odd integer y: ±inf)."),
		bin("max", numeric, 0, fmax, func(a, b int64) int64 { return max(a, b) },
			"The larger of a and b. NaN propagates (like torch.maximum): max(NaN, x) = NaN; max(-0, +0) = +0."),
		bin("min", numeric, 0, fmin, func(a, b int64) int64 { return min(a, b) },
			"The smaller of a and b. NaN propagates (like torch.minimum): min(NaN, x) = NaN; min(-0, +0) = -0."),
		cmp("eq", func(a, b float64) bool { return a == b }, func(a, b int64) bool { return a == b },
			"a == b. NaN == x is false; -0 == +0 is true."),
		cmp("ne", func(a, b float64) bool { return a != b }, func(a, b int64) bool { return a != b },
			"a != b. NaN != x is true, NaN != NaN too."),
		cmp("lt", func(a, b float64) bool { return a < b }, func(a, b int64) bool { return a < b },
			"a < b. Every ordered comparison with NaN is false; -0 < +0 is false."),
		cmp("le", func(a, b float64) bool { return a <= b }, func(a, b int64) bool { return a <= b },
			"a <= b. false when either is NaN."),
		cmp("gt", func(a, b float64) bool { return a > b }, func(a, b int64) bool { return a > b },
			"a > b. false when either is NaN."),
		cmp("ge", func(a, b float64) bool { return a >= b }, func(a, b int64) bool { return a >= b },
			"a >= b. false when either is NaN."),
		bin("and", logical, 0, nil, func(a, b int64) int64 { return a & b }, "Logical and for bool; bitwise and for integers."),
		bin("or", logical, 0, nil, func(a, b int64) int64 { return a | b }, "Logical or for bool; bitwise or for integers."),

		&Op{Name: "select", Arity: 3, Class: Elementwise, Infer: inferSelect, Eval: evalSelect,
			Doc: "select(pred, on_true, on_false): on_true[i] where pred[i], else on_false[i]. pred is bool; all three " +
				"have the same shape and the branches the same type. The unselected branch never matters (a NaN there does not propagate)."},
		&Op{Name: "cast", Arity: 1, Class: Elementwise, Attrs: []AttrSpec{{"to", AttrDType, false}}, Infer: inferCast, Eval: evalCast,
			Doc: "Converts to dtype `to`. float→float and int→float round to nearest even (once, from the exact value; out of range gives ±inf). " +
				"To f8e4m3/f8e5m2 the rounding saturates as PTX's cvt.rn.satfinite does: beyond the largest finite (448, 57344), ±inf included, " +
				"gives the largest finite of that sign, and NaN stays NaN; from fp8 every conversion to a wider float is exact. " +
				"float→int truncates toward zero, NaN becomes 0, and values beyond the int's range saturate to its min or max " +
				"(our definition, matching PTX cvt.rzi.sat; C leaves it undefined). int→int wraps (two's complement). " +
				"Anything→bool is x != 0 (so NaN → true); bool→number is 0 or 1."},

		// Reductions.
		reduce("reduce_sum", func(a, b float64) float64 { return a + b }, func(a, b int64) int64 { return a + b }, 0,
			"Sum over axes. Floats accumulate in float64 from +0 and round once (a sum of only -0 is +0); integers wrap. Empty: 0."),
		reduce("reduce_prod", func(a, b float64) float64 { return a * b }, func(a, b int64) int64 { return a * b }, 1,
			"Product over axes, accumulated in float64 and rounded once; integers wrap. Empty: 1."),
		reduce("reduce_max", fmax, func(a, b int64) int64 { return max(a, b) }, math.Inf(-1),
			"Maximum over axes with max's rules: NaN propagates, max(-0, +0) = +0. Empty: -inf (integers: the dtype's minimum)."),
		reduce("reduce_min", fmin, func(a, b int64) int64 { return min(a, b) }, math.Inf(1),
			"Minimum over axes with min's rules: NaN propagates, min(-0, +0) = -0. Empty: +inf (integers: the dtype's maximum)."),

		// Contractions.
		&Op{Name: "dot_general", Arity: 2, Class: Contraction, Infer: inferDot, Eval: evalDot,
			Attrs: []AttrSpec{{"lhs_batch", AttrInts, true}, {"rhs_batch", AttrInts, true}, {"lhs_contract", AttrInts, true}, {"rhs_contract", AttrInts, true}},
			Doc: "StableHLO dot_general: lhs_batch[i] pairs with rhs_batch[i], lhs_contract[i] with rhs_contract[i] (sizes must agree; " +
				"absent lists are empty). Result dims: batch dims (in lhs_batch order), then lhs free dims, then rhs free dims, each in order. " +
				"Operands have one numeric dtype. Each result is Σ lhs·rhs over the contracting index, flattened row-major in " +
				"lhs_contract order, summed in ascending order in float64 from +0 and rounded once (integers: wrapping int64). " +
				"fp8 operands (both f8e4m3 or both f8e5m2) give an f16 result; the compiler runs it for sm_89/sm_90 on fp8 tensor cores " +
				"(f32 accumulation, one byte per operand element), before sm_89 as the f16 GEMM of the operands cast to f16 (exact), the fp8 pass; a per-tensor or per-row scale is a mul before or after."},
		&Op{Name: "conv2d", Arity: 2, Class: Contraction, Infer: inferConv, Eval: evalConv,
			Attrs: []AttrSpec{{"stride", AttrInts, true}, {"padding", AttrInts, true}, {"dilation", AttrInts, true}, {"groups", AttrInt, true}},
			Doc: "PyTorch conv2d without bias: x[N,C,H,W], w[O,C/groups,KH,KW] → [N,O,OH,OW], OH = ⌊(H+2·pad−dil·(KH−1)−1)/stride⌋+1. " +
				"Defaults: stride [1,1], padding [0,0], dilation [1,1], groups 1. Float dtypes. Padding is symmetric and literally zeros " +
				"(so an inf weight over padding gives NaN). Each output sums over (c, kh, kw) in row-major order in float64 from +0 and rounds once."},

		// Pooling.
		&Op{Name: "max_pool2d", Arity: 1, Class: Other, Infer: inferPool, Eval: evalPool(true),
			Attrs: []AttrSpec{{"kernel", AttrInts, false}, {"stride", AttrInts, true}, {"padding", AttrInts, true}},
			Doc: "PyTorch max_pool2d, ceil_mode=false, x[N,C,H,W]: the max over each window with max's rules (NaN propagates). " +
				"Padding counts as -inf and is at most half the kernel, so every window holds an input element. stride defaults to kernel, padding to [0,0]."},
		&Op{Name: "avg_pool2d", Arity: 1, Class: Other, Infer: inferPool, Eval: evalPool(false),
			Attrs: []AttrSpec{{"kernel", AttrInts, false}, {"stride", AttrInts, true}, {"padding", AttrInts, true}, {"count_include_pad", AttrBool, true}},
			Doc: "PyTorch avg_pool2d, ceil_mode=false: the window's sum (float64, row-major order, padding as zeros) divided by KH·KW " +
				"if count_include_pad (the default) or else by the number of input elements in the window, rounded once. stride defaults to kernel."},

		// Movement.
		&Op{Name: "reshape", Arity: 1, Class: Movement, Attrs: []AttrSpec{{"shape", AttrInts, false}}, Infer: inferReshape, Eval: evalReshape,
			Doc: "Same elements in row-major order, new shape with the same element count (no -1 here)."},
		&Op{Name: "transpose", Arity: 1, Class: Movement, Attrs: []AttrSpec{{"perm", AttrInts, false}}, Infer: inferTranspose, Eval: evalTranspose,
			Doc: "Permutes dimensions: result dim i is operand dim perm[i]."},
		&Op{Name: "broadcast_in_dim", Arity: 1, Class: Movement, Attrs: []AttrSpec{{"shape", AttrInts, false}, {"dims", AttrInts, false}},
			Infer: inferBroadcast, Eval: evalBroadcast,
			Doc: "StableHLO broadcast_in_dim: operand dim i maps to result dim dims[i] (unique, any order); its size is 1 (repeated) " +
				"or the result's size. Result dims not in dims are new and repeat the operand."},
		&Op{Name: "slice", Arity: 1, Class: Movement, Attrs: []AttrSpec{{"start", AttrInts, false}, {"limit", AttrInts, false}, {"stride", AttrInts, true}},
			Infer: inferSlice, Eval: evalSlice,
			Doc: "Elements start[i], start[i]+stride[i], ... below limit[i] in each dim; 0 ≤ start ≤ limit ≤ size, stride ≥ 1 (default 1)."},
		&Op{Name: "concat", Arity: Variadic, Class: Movement, Attrs: []AttrSpec{{"axis", AttrInt, false}}, Infer: inferConcat, Eval: evalConcat,
			Doc: "Joins the operands along axis, in operand order; they have one dtype and equal sizes in the other dims."},
		&Op{Name: "pad", Arity: 1, Class: Movement, Attrs: []AttrSpec{{"low", AttrInts, false}, {"high", AttrInts, false}, {"value", AttrFloat, true}},
			Infer: inferPad, Eval: evalPad,
			Doc: "Constant padding: low[i] elements before and high[i] after dim i, all equal to value (default 0), converted to the dtype " +
				"as cast converts a float. No interior padding; negative padding is rejected."},
		&Op{Name: "gather", Arity: 2, Class: Other, Infer: inferGather, Eval: evalGather,
			Doc: "gather(table, indices): row lookup (embedding). Result shape indices.shape + table.shape[1:], result[i..., j...] = " +
				"table[indices[i...], j...]. Indices are integers; one outside [0, rows) is an error naming it (no clamping, no wrap)."},
		&Op{Name: "iota", Arity: 0, Class: Other, Attrs: []AttrSpec{{"shape", AttrInts, false}, {"dim", AttrInt, false}, {"dtype", AttrDType, false}},
			Infer: inferIota, Eval: evalIota,
			Doc: "The index along dim at every position, as a numeric dtype (rounded for floats, wrapped for integers)."},
		&Op{Name: "constant", Arity: 0, Class: Other, Attrs: []AttrSpec{{"shape", AttrInts, false}, {"dtype", AttrDType, false}, {"value", AttrFloats, false}},
			Infer: inferConstant, Eval: evalConstant,
			Doc: "A literal: value has 1 element (splat) or one per element in row-major order. Floats are rounded to the dtype; " +
				"for integer and bool dtypes every value must be an integer in the dtype's range (bool: 0 or 1)."},
	)
}

func typesDoc(s dset) string { return " Operand types: " + s.String() + "." }

const reduceDoc = " axes are sorted, unique and in range; keepdims (default false) keeps them as size 1. " +
	"The reduced elements of each output are combined in row-major order."
