package tolerance

import (
	"math"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// roundedImage bounds |RN_d(y) − val| over every y within delta of s, where val = RN_d(s) is the
// reference's result: rounding to nearest is monotone, so RN_d(y) lies between RN_d(s − delta)
// and RN_d(s + delta), and the bound is the farther of the two from val. A result known exactly
// (delta 0) rounds identically on every device (bound 0); one known within less than half a unit
// of d moves by at most one unit of d, and only where s lies near a rounding boundary. An
// infinite or NaN delta is not determined (+∞); a NaN result is compared for what it is (0).
func roundedImage(d ir.DType, s, delta, val float64) float64 {
	switch {
	case math.IsNaN(delta) || math.IsInf(delta, 0):
		return math.Inf(1)
	case math.IsNaN(val):
		return 0
	}
	worst := 0.0
	for _, y := range []float64{s - delta, s + delta} {
		if r := tensor.RoundFloat(d, y); r != val {
			worst = max(worst, orInf(math.Abs(r-val)))
		}
	}
	return worst
}

// castFloat bounds a cast from a float dtype to a float dtype. ops.md defines it as rounding to
// nearest even, once, from the operand's exact value, and every code generator rounds so
// (cvt.rn; f64 to f16 and bf16 through an f32 rounded to odd): the same operand gives the same
// result on every device, and an operand within E of the reference's gives one within the
// rounded image of [x − E, x + E]. Autocast's casts of exact weights and inputs to bf16 or f16
// are therefore exact, not off by a relative allowance of the low dtype.
func castFloat(v *ir.Value, a Bound, val *tensor.Tensor) []float64 {
	if a.Err == nil {
		return nil
	}
	e := make([]float64, val.Len())
	for i := range e {
		e[i] = roundedImage(v.Type.DType, a.Val.At(i), a.Err[i], val.At(i))
	}
	return e
}

// halfAccumulation is c in the bound c·K·u₃₂·Σ|a·b| of an f16 or bf16 contraction's f32
// accumulation. docs/codegen.md: tensor cores multiply f16 and bf16 operands exactly (their
// products fit f32's mantissa) and add them into f32 accumulators (mma.sync …f32.bf16 with f32
// accumulators); the direct and persistent templates accumulate in f64, the reference's way.
// Hardware tensor cores add a block of n products to the accumulator aligned to the largest
// term and truncated rather than rounded (Fasi, Higham, Mikaitis and Pranesh, "Numerical
// behavior of NVIDIA tensor cores", 2021): each block errs by at most (n+2)·2u₃₂ of the sum of
// its magnitudes, the accumulator's included, which over K/n blocks is at most
// 2(n+2)/n·K·u₃₂·Σ|a·b|; c = 4 covers every block size n ≥ 2, and round-to-nearest sequential
// accumulation (γ_K ≈ K·u₃₂, what the simulator does) with a margin of 4. The worst case costs
// nothing here: for K up to 2¹⁴ it stays below one rounding of the result to bf16, while the
// rule for f32 results (accumulation, a typical case) cannot afford it.
const halfAccumulation = 4

// contractionLen is K, the number of products each result element of a contraction sums:
// dot_general's contracting dims, conv2d's C/groups·KH·KW taps (padding taps included).
func contractionLen(v *ir.Value) int {
	k := 1
	switch v.Op {
	case "dot_general":
		for _, d := range v.Attrs.Ints("lhs_contract") {
			k *= v.Args[0].Type.Shape[d]
		}
	case "conv2d":
		for _, n := range v.Args[1].Type.Shape[1:] {
			k *= n
		}
	}
	return k
}

// halfContraction finishes the bound of an f16 or bf16 contraction: opErr is what the operands'
// bounds contribute (C(Ea, |b|) + C(|a|, Eb), nil when both are exact) and mags C(|a|, |b|).
// The device's sum before its one rounding to the result dtype is within
//
//	delta = opErr + 4·K·u₃₂·Σ|a·b| + K·u₆₄·Σ|a·b| + 2K·2⁻¹²⁶
//
// of the reference's f64 sum s (f32 accumulation as halfAccumulation says, the reference's own
// f64 roundings, and an f32 accumulator that flushes subnormal products and partial sums), and
// the result is s's rounded image (roundedImage): an exact-data contraction is off by at most
// one unit of the result's dtype, and by none unless s lies near a rounding boundary.
func halfContraction(v *ir.Value, args []Bound, val *tensor.Tensor, opErr, mags []float64) ([]float64, error) {
	s, err := evalF64(v, []*tensor.Tensor{f64(args[0].Val, nil), f64(args[1].Val, nil)})
	if err != nil {
		return nil, err
	}
	k := float64(contractionLen(v))
	acc := halfAccumulation*k*unitRoundoff(ir.F32) + k*unitRoundoff(ir.F64)
	e := make([]float64, len(s))
	for i := range e {
		delta := acc*mags[i] + 2*k*0x1p-126
		if opErr != nil {
			delta += opErr[i]
		}
		e[i] = roundedImage(v.Type.DType, s[i], delta, val.At(i))
	}
	return e, nil
}
