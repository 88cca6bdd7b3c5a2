// Package tolerance says how close a compiled kernel's result must be to the reference
// interpreter's: the rule `gcomp check` and the code generator's tests apply per element.
//
// An element passes when
//
//	|got − want| ≤ max(rel·|want|, abs)
//
// with rel and abs from Tolerance. NaN never passes (got or want), and an infinity passes only
// against the same infinity. Integer and bool results, and floats of exact ops, are compared
// bit for bit by the caller instead. This is the rule of the code generator's tests, which know
// each kernel's contraction length and operand scale.
//
// # Error bounds of a whole graph
//
// A model's outputs (`gcomp check`, the random-graph property) are held to a bound per element
// derived from the reference's own computation (Bounds, compared by AgreeBound): a running
// first-order error analysis carried beside the values, as numerical analysis bounds an
// algorithm's forward error. Where a result cancels, the error a correct kernel commits is set by
// the magnitudes of the terms that cancelled, not by the small result, so no bound relative to
// the result (or to the output's RMS) can be both tight and safe. Each op adds its own rounding
// and passes on its operands' bounds E by its sensitivity:
//
//   - graph inputs, parameters, iota, constants, philox_uniform: exact (E = 0);
//   - movement ops and gather: E moves with the elements (pad's padding is exact);
//   - exact elementwise ops (abs, neg, relu, max, min, select, floor, ceil, comparisons, logic):
//     the op evaluated with each operand moved by ±E, the largest change; a comparison that may
//     flip has E = 1 and a select on it may take the other side;
//   - correctly rounded ops (add, sub, mul, div, sqrt, and casts to or from integers): the same,
//     plus rel·|result|;
//   - a cast from a float type to a float type: the rounded image of [x − E, x + E], the farther
//     of RN(x − E) and RN(x + E) from the result (rounding to nearest is monotone, and every
//     device rounds such a cast once to nearest, as ops.md defines it): 0 for an exact operand,
//     so autocast's casts of weights and inputs to bf16 or f16 are exact;
//   - approximations (exp, log, sin, cos, tanh, sigmoid, erf, rsqrt, pow): the same with each
//     operand moved by E + u·|operand| (one rounding of the reduced argument), plus rel·|result|;
//   - sums (reduce_sum, avg_pool2d): the sum of the operands' E, plus rel·|result| + 8u·Σ|terms|;
//   - contractions (dot_general, conv2d): C(E_a, |b|) + C(|a|, E_b) + rel·|result| +
//     8u·C(|a|, |b|), and with TF32 also 2·2⁻¹¹·C(|a|, |b|) (both operands rounded to a 10-bit
//     mantissa); C(|a|, |b|) is the sum of the |terms| of each result. An f16 or bf16
//     contraction accumulates in f32 (tensor cores; the direct templates in f64) and rounds once
//     to its dtype, so its bound is the rounded image of the reference's f64 sum s widened by
//     C(E_a, |b|) + C(|a|, E_b) + 4K·u₃₂·C(|a|, |b|) (K products; the worst case of round-to-
//     nearest and of tensor cores' truncating block additions, with the reference's own f64
//     roundings and flushed subnormals): with exact operands one unit of the result's dtype
//     where s lies near a rounding boundary and 0 elsewhere, not u of the low dtype per addition;
//   - reduce_max, reduce_min, max_pool2d: the largest E among the candidates; reduce_prod:
//     Π(|a|(1+rel) + E) − Π|a|;
//   - a custom kernel, attention, attention_lse and attention_grad (kernels whose softmax
//     runs in f32 with approximate exponentials whatever the operands' dtype): every operand
//     moved together by ±(E + rel·|operand|), plus rel·|result|.
//
// u is the unit roundoff of the op's dtype (2⁻²⁴ for f32) and rel its Tolerance, the allowance
// per rounded op (about 168u for f32, which covers the approximate transcendentals); results below
// the smallest normal add one subnormal spacing. 8u·Σ|terms| is the accumulation: K roundings of
// partial sums, which for mixed signs add like a random walk to about u·Σ|terms|/2 (sums of one
// sign are held by rel·|result|). A bound is +∞ where an operand's error reaches a singularity
// (a gather index or a philox seed that may move, ∞ − ∞): the arithmetic does not determine the
// element, and it passes whatever it is. Elsewhere NaN passes only against NaN, an infinity only
// against itself, and a zero only against a zero of the same sign where the bound is 0 (an exact
// result, whose sign docs/ops.md defines).
//
// Without the graph (a bare tensor, CompareIn in runtime/check) a model's output is held to
// Agree: the rule above with rel of the least precise float type the value is computed in
// (Precision), the floor rel·RMS(want) (OutputFloor), NaN against NaN and signed zeros.
//
// # Relative part
//
// The per-dtype bounds: f32 1e-5 (FFMA accumulation and the documented approximate
// transcendentals stay well inside it), tf32 5e-3 (operands rounded to a 10-bit mantissa), f16
// and bf16 2e-2, f64 1e-12.
//
// # Absolute floor
//
// A contraction of length K (a dot_general's contracting dims, a conv2d's C·KH·KW taps) sums K
// products; for operands of magnitude at most 1 with mixed signs its results are of size
// about √K, but a single element may cancel to near zero, where a relative bound alone would ask
// for more than the arithmetic can give. The floor measures the error against the typical
// result size instead:
//
//	abs = rel · √K
//
// for unit-scale operands; for larger operands multiply by max|a|·max|b| (Scale). Why √K is
// enough: f32 accumulation in ascending k commits one rounding of at most u = 2⁻²⁴ times the
// running sum per step; for random-signed products of deviation σ the running sum after i terms
// is about σ√i, so the rounding errors add up like a random walk to about u·σ·K/√2. Against the
// floor 1e-5·σ√K (1e-5 ≈ 168u) that is √K/240 of it: below the floor for K up to about 50,000
// even in this pessimistic model (every step rounding by its full half ulp), far beyond the
// contractions of the examples (GPT-2 small: K = 3072). Without a contraction (K = 1) the floor
// is rel itself, which only matters for results below 1 in magnitude.
package tolerance
