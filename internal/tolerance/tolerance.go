package tolerance

import (
	"math"

	"github.com/gcomp/gcomp/ir"
)

// Tolerance returns the relative bound and the absolute floor for results of dtype d (the
// result's float type; tf32 when f32 products ran on tensor cores) that depend on a contraction
// of length k (the longest dot_general or conv2d contraction on the way to the result; 0 or 1
// when there is none). The floor assumes operands of magnitude at most 1; see Scale. Non-float
// dtypes return 0, 0: compare them exactly.
func Tolerance(d ir.DType, tf32 bool, k int) (rel, abs float64) {
	switch d {
	case ir.F32:
		rel = 1e-5
		if tf32 {
			rel = 5e-3
		}
	case ir.F16, ir.BF16:
		rel = 2e-2
	case ir.F64:
		rel = 1e-12
	default:
		return 0, 0
	}
	return rel, rel * math.Sqrt(float64(max(k, 1)))
}

// OutputFloor is the absolute floor for a whole model's output (what `gcomp check` uses):
// rel·RMS of the reference's finite elements. Tolerance's rel·√K floor needs the magnitudes of
// the contraction's operands (Scale), which inside a model are intermediates nobody drew; the
// output's own RMS is the typical size its elements cancel against, and for a bare contraction of
// unit-scale operands (RMS ≈ √K) the two agree. Zero when there are no finite elements.
func OutputFloor(rel float64, want []float64) float64 {
	var sum float64
	finite := 0
	for _, w := range want {
		if !math.IsNaN(w) && !math.IsInf(w, 0) {
			sum += w * w
			finite++
		}
	}
	if finite == 0 || rel == 0 {
		return 0
	}
	return rel * max(math.Sqrt(sum/float64(finite)), 1e-30)
}

// Scale adapts an absolute floor to operands larger than 1: the contraction's terms are bounded
// by maxA·maxB instead of 1. Smaller products leave abs as it is.
func Scale(abs, maxA, maxB float64) float64 {
	return abs * max(1, maxA*maxB)
}

// Within reports whether got passes against want: |got − want| ≤ max(rel·|want|, abs). NaN never
// passes; an infinity passes only against the same infinity.
func Within(got, want, rel, abs float64) bool {
	if math.IsNaN(got) || math.IsNaN(want) {
		return false
	}
	if math.IsInf(got, 0) || math.IsInf(want, 0) {
		return got == want
	}
	return math.Abs(got-want) <= max(rel*math.Abs(want), abs)
}

// Agree is Within for a model's outputs, where docs/ops.md defines the special values: NaN
// passes against NaN (ops.md says where results are NaN; payloads are not compared, as ir.md does
// not preserve them) and nothing else, and a zero passes only against a zero of the same sign
// (ops.md defines the sign of every zero result: -0 + -0 = -0, min(-0, +0) = -0, ...).
func Agree(got, want, rel, abs float64) bool {
	if math.IsNaN(got) || math.IsNaN(want) {
		return math.IsNaN(got) && math.IsNaN(want)
	}
	if got == 0 && want == 0 {
		return math.Signbit(got) == math.Signbit(want)
	}
	return Within(got, want, rel, abs)
}

// Precision returns the float dtype whose tolerance result v is held to: the least precise float
// type among v and the values it is computed from. Graph inputs and parameters are data, not
// computation, and do not count. An f16 exp cast to an f64 output was computed in f16 and is held
// to f16's tolerance, not f64's. A non-float v returns its own dtype (compared exactly).
func Precision(v *ir.Value) ir.DType {
	prec := v.Type.DType
	if !prec.IsFloat() {
		return prec
	}
	loosest, _ := Tolerance(prec, false, 0)
	seen := map[*ir.Value]bool{v: true}
	stack := []*ir.Value{v}
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if u.Op == ir.OpInput || u.Op == ir.OpParam {
			continue
		}
		if rel, _ := Tolerance(u.Type.DType, false, 0); rel > loosest {
			prec, loosest = u.Type.DType, rel
		}
		for _, a := range u.Args {
			if !seen[a] {
				seen[a] = true
				stack = append(stack, a)
			}
		}
	}
	return prec
}

// AgreeBound is the comparison of an element with its own error bound (Bounds): it passes when
// |got − want| ≤ bound. NaN passes against NaN and nothing else, an infinity only against the same
// infinity, and a zero against a zero of the same sign where the bound is 0 (the result is exact,
// and ops.md defines its sign); where the bound is not 0 the sign of a zero is not determined by
// the arithmetic. An infinite bound (the arithmetic does not determine the element) passes
// anything.
func AgreeBound(got, want, bound float64) bool {
	switch {
	case math.IsInf(bound, 1):
		return true
	case math.IsNaN(got) || math.IsNaN(want):
		return math.IsNaN(want) && math.IsNaN(got)
	case got == 0 && want == 0 && bound == 0:
		return math.Signbit(want) == math.Signbit(got)
	case math.IsInf(got, 0) || math.IsInf(want, 0):
		return got == want
	}
	return math.Abs(got-want) <= bound
}
