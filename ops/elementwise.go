package ops

import (
	"math"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// Scalar definitions shared by the elementwise ops and the reductions.

func sigmoid(x float64) float64 {
	if x < 0 {
		e := math.Exp(x)
		return e / (1 + e)
	}
	return 1 / (1 + math.Exp(-x))
}

func relu(x float64) float64 {
	if x > 0 || x != x {
		return x
	}
	return 0
}

// fmax is max with NaN propagation and max(-0, +0) = +0.
func fmax(a, b float64) float64 {
	switch {
	case a != a || b != b:
		return math.NaN()
	case a == b:
		if math.Signbit(a) {
			return b
		}
		return a
	case a > b:
		return a
	}
	return b
}

// fmin is min with NaN propagation and min(-0, +0) = -0.
func fmin(a, b float64) float64 { return -fmax(-a, -b) }

// idiv truncates toward zero, defines x/0 = 0, and wraps min/-1 (Go's int64 division already does).
func idiv(a, b int64) int64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func b2f(b bool) float64 { return float64(b2i(b)) }

// intRange is the range of an integer or bool dtype.
func intRange(d ir.DType) (lo, hi int64) {
	switch d {
	case ir.I8:
		return math.MinInt8, math.MaxInt8
	case ir.U8:
		return 0, math.MaxUint8
	case ir.I32:
		return math.MinInt32, math.MaxInt32
	case ir.Bool:
		return 0, 1
	}
	return math.MinInt64, math.MaxInt64
}

// wrap brings an int64 result into dtype d: two's complement for integers, the low bit for bool
// (so the bitwise definitions of not, and, or are also the logical ones).
func wrap(d ir.DType, n int64) int64 {
	if d == ir.Bool {
		return n & 1
	}
	return tensor.WrapInt(d, n)
}

// grain is the number of elements one task of an elementwise loop handles.
const grain = 1 << 15

// evalMap is the driver of the unary elementwise ops: f for float operands, i for integer and
// bool operands; the result is rounded (floats) or wrapped (integers) to its dtype.
func evalMap(f func(float64) float64, i func(int64) int64) func([]*tensor.Tensor, ir.Attrs, ir.Type) (*tensor.Tensor, error) {
	return func(args []*tensor.Tensor, _ ir.Attrs, out ir.Type) (*tensor.Tensor, error) {
		x, r, d := args[0], tensor.Empty(out), out.DType
		chunks(r.Len(), grain, func(lo, hi int) {
			if x.F != nil {
				switch xs, rs := x.F[lo:hi], r.F[lo:hi]; d { // F32 and F64 inline the rounding
				case ir.F32:
					for j, a := range xs {
						rs[j] = float64(float32(f(a)))
					}
				case ir.F64:
					for j, a := range xs {
						rs[j] = f(a)
					}
				default:
					for j, a := range xs {
						rs[j] = tensor.RoundFloat(d, f(a))
					}
				}
				return
			}
			for j := lo; j < hi; j++ {
				r.I[j] = wrap(d, i(x.I[j]))
			}
		})
		return r, nil
	}
}

// evalMap2 is the driver of the binary elementwise ops. Float operands go through f, whose result
// is rounded to a float result dtype or, for comparisons, is 0 or 1 for a bool result.
func evalMap2(f func(a, b float64) float64, i func(a, b int64) int64) func([]*tensor.Tensor, ir.Attrs, ir.Type) (*tensor.Tensor, error) {
	return func(args []*tensor.Tensor, _ ir.Attrs, out ir.Type) (*tensor.Tensor, error) {
		x, y, r, d := args[0], args[1], tensor.Empty(out), out.DType
		chunks(r.Len(), grain, func(lo, hi int) {
			switch {
			case x.F != nil && r.F != nil:
				xs, ys, rs := x.F[lo:hi], y.F[lo:hi], r.F[lo:hi]
				switch d { // F32 and F64 inline the rounding
				case ir.F32:
					for j, a := range xs {
						rs[j] = float64(float32(f(a, ys[j])))
					}
				case ir.F64:
					for j, a := range xs {
						rs[j] = f(a, ys[j])
					}
				default:
					for j, a := range xs {
						rs[j] = tensor.RoundFloat(d, f(a, ys[j]))
					}
				}
			case x.F != nil:
				for j := lo; j < hi; j++ {
					r.I[j] = int64(f(x.F[j], y.F[j]))
				}
			default:
				for j := lo; j < hi; j++ {
					r.I[j] = wrap(d, i(x.I[j], y.I[j]))
				}
			}
		})
		return r, nil
	}
}

func evalSelect(args []*tensor.Tensor, _ ir.Attrs, out ir.Type) (*tensor.Tensor, error) {
	p, t, f := args[0], args[1], args[2]
	r := tensor.Empty(out)
	chunks(r.Len(), grain, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			src := f
			if p.I[j] != 0 {
				src = t
			}
			if r.F != nil {
				r.F[j] = src.F[j]
			} else {
				r.I[j] = src.I[j]
			}
		}
	})
	return r, nil
}

func evalCast(args []*tensor.Tensor, _ ir.Attrs, out ir.Type) (*tensor.Tensor, error) {
	x, r, d := args[0], tensor.New(out), out.DType
	chunks(r.Len(), grain, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			switch {
			case x.F != nil && r.F != nil:
				r.F[j] = tensor.RoundFloat(d, x.F[j])
			case x.F != nil:
				r.I[j] = floatToInt(d, x.F[j])
			case r.F != nil:
				r.F[j] = intToFloat(d, x.I[j])
			case d == ir.Bool:
				r.I[j] = b2i(x.I[j] != 0)
			default:
				r.I[j] = tensor.WrapInt(d, x.I[j])
			}
		}
	})
	return r, nil
}

// floatToInt truncates toward zero and saturates; NaN is 0; bool is x != 0.
func floatToInt(d ir.DType, f float64) int64 {
	if d == ir.Bool {
		return b2i(f != 0)
	}
	lo, hi := intRange(d)
	switch {
	case f != f:
		return 0
	case f <= float64(lo):
		return lo
	case f >= float64(hi): // for i64, float64(hi) is 2^63, which no int64 reaches
		return hi
	}
	return int64(f)
}

// intToFloat rounds n to d once. float64(n) is exact below 2^53; above, it is made round-to-odd
// (truncate, then set the last bit if inexact), which a second rounding to a narrower format
// cannot spoil.
func intToFloat(d ir.DType, n int64) float64 {
	f := float64(n)
	if d == ir.F64 || (n < 1<<53 && n > -1<<53) {
		return tensor.RoundFloat(d, f)
	}
	away := f == 0x1p63 // n rounded up past the int64 range
	if !away {
		m := int64(f)
		if m == n {
			return tensor.RoundFloat(d, f)
		}
		away = (n > 0) == (m > n)
	}
	if away {
		f = math.Nextafter(f, 0)
	}
	return tensor.RoundFloat(d, math.Float64frombits(math.Float64bits(f)|1))
}
