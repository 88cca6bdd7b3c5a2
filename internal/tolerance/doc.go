// Package tolerance says how close a compiled kernel's result must be to the reference
// interpreter's: the rule `gcomp check` and the code generator's tests apply per element.
//
// An element passes when
//
//	|got − want| ≤ max(rel·|want|, abs)
//
// with rel and abs from Tolerance. NaN never passes (got or want), and an infinity passes only
// against the same infinity. Integer and bool results, and floats of exact ops, are compared
// bit for bit by the caller instead. A model's outputs (`gcomp check`) use Agree, which adds
// docs/ops.md's special values: NaN agrees with NaN, a zero only with a zero of its sign; and
// their rel is that of the least precise float type they are computed in (Precision), not of
// the output's dtype.
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
