package tolerance

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// halfDot is a dot product of two dt vectors of length k with a dt result, and its bound.
func halfDot(t *testing.T, dt ir.DType, a, b []float64) (val, bound float64) {
	t.Helper()
	k := len(a)
	g := ir.NewGraph("g")
	av := g.Input("a", ir.T(dt, k), nil)
	bv := g.Input("b", ir.T(dt, k), nil)
	g.SetOutput("y", g.Add("dot_general", ir.T(dt), ir.Attrs{"lhs_contract": []int{0}, "rhs_contract": []int{0}}, av, bv))
	out, err := Bounds(g, map[string]*tensor.Tensor{"a": tensor.FromFloats(av.Type, a), "b": tensor.FromFloats(bv.Type, b)}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return out["y"].Val.At(0), out["y"].At(0)
}

// f32 accumulators of the kinds a correct device may use (docs/codegen.md, halfAccumulation):
// each sums the exact products of f16 or bf16 operands into an f32 accumulator in its own way.
var accumulators = []struct {
	name string
	sum  func(p []*big.Float) *big.Float
}{
	{"ascending, round to nearest", func(p []*big.Float) *big.Float { return seqSum(p, false, big.ToNearestEven) }},
	{"descending, round to nearest", func(p []*big.Float) *big.Float { return seqSum(p, true, big.ToNearestEven) }},
	{"ascending, truncating", func(p []*big.Float) *big.Float { return seqSum(p, false, big.ToZero) }},
	{"pairwise tree, round to nearest", pairSum},
	{"tensor-core blocks of 8, aligned and truncated", func(p []*big.Float) *big.Float { return blockSum(p, 8) }},
	{"tensor-core blocks of 2, aligned and truncated", func(p []*big.Float) *big.Float { return blockSum(p, 2) }},
}

func f32(mode big.RoundingMode) *big.Float { return new(big.Float).SetPrec(24).SetMode(mode) }

// seqSum adds p one at a time into an f32 accumulator rounded by mode.
func seqSum(p []*big.Float, reverse bool, mode big.RoundingMode) *big.Float {
	acc := f32(mode)
	for i := range p {
		j := i
		if reverse {
			j = len(p) - 1 - i
		}
		acc.Add(acc, p[j])
	}
	return acc
}

// pairSum adds p as a balanced tree of f32 additions.
func pairSum(p []*big.Float) *big.Float {
	if len(p) == 1 {
		return f32(big.ToNearestEven).Set(p[0])
	}
	h := len(p) / 2
	return f32(big.ToNearestEven).Add(pairSum(p[:h]), pairSum(p[h:]))
}

// blockSum models a tensor core's accumulation (Fasi et al. 2021): n products at a time are
// added to the accumulator with every term aligned to the largest one's 24-bit grid and
// truncated there, and the sum truncated to 24 bits.
func blockSum(p []*big.Float, n int) *big.Float {
	acc := new(big.Float)
	for i := 0; i < len(p); i += n {
		terms := append([]*big.Float{acc}, p[i:min(i+n, len(p))]...)
		e := math.MinInt
		for _, x := range terms {
			if x.Sign() != 0 {
				e = max(e, x.MantExp(nil))
			}
		}
		if e == math.MinInt {
			continue
		}
		grid := new(big.Float).SetMantExp(big.NewFloat(1), e-24)
		sum := new(big.Float).SetPrec(4096)
		for _, x := range terms {
			q := new(big.Float).SetPrec(4096).Quo(x, grid)
			qi, _ := q.Int(nil) // truncates toward zero
			sum.Add(sum, new(big.Float).SetPrec(4096).Mul(new(big.Float).SetInt(qi), grid))
		}
		acc = f32(big.ToZero).Set(sum)
	}
	return acc
}

// products returns the exact products a[i]·b[i] and their exact sum.
func products(a, b []float64) ([]*big.Float, *big.Float) {
	p := make([]*big.Float, len(a))
	exact := new(big.Float).SetPrec(4096)
	for i := range a {
		p[i] = new(big.Float).SetPrec(4096).Mul(big.NewFloat(a[i]), big.NewFloat(b[i]))
		exact.Add(exact, p[i])
	}
	return p, exact
}

// ulp is the spacing of dt's values at |x| (its subnormal spacing below the normal range).
func ulp(dt ir.DType, x float64) float64 {
	n, s := minNormal(dt)
	x = math.Abs(x)
	if x < n {
		return s
	}
	_, e := math.Frexp(x)
	return math.Ldexp(2*unitRoundoff(dt), e-1)
}

// halfCases are operand vectors of length k in dt: random ones, and adversarial ones — sums of
// one sign (every partial sum grows, so every addition rounds), large terms that cancel to a
// small result, and exact sums just past a rounding boundary of dt by less than f32 resolves.
func halfCases(r *rand.Rand, dt ir.DType, k int) map[string][2][]float64 {
	round := func(x float64) float64 { return tensor.RoundFloat(dt, x) }
	gen := func(f func(i int) (float64, float64)) [2][]float64 {
		a, b := make([]float64, k), make([]float64, k)
		for i := range k {
			x, y := f(i)
			a[i], b[i] = round(x), round(y)
		}
		return [2][]float64{a, b}
	}
	cases := map[string][2][]float64{
		"random":   gen(func(int) (float64, float64) { return 2*r.Float64() - 1, 2*r.Float64() - 1 }),
		"one sign": gen(func(int) (float64, float64) { return 0.5 + r.Float64(), 0.5 + r.Float64() }),
		"cancelling": gen(func(i int) (float64, float64) {
			if i%2 == 1 {
				return -100 * (1 + float64(i-1)/float64(k)), 1
			}
			return 100 * (1 + float64(i)/float64(k)), 1 + 0x1p-7*r.Float64()
		}),
	}
	// 1 + half a unit of dt at 1 + a term f32 drops beside 1: the exact sum rounds up, an f32
	// accumulator's to the tie and then down to even.
	half := unitRoundoff(dt)
	tiny := map[ir.DType]float64{ir.BF16: 0x1p-30, ir.F16: 0x1p-24}[dt]
	boundary := gen(func(i int) (float64, float64) { return 0, 0 })
	copy(boundary[0], []float64{1, half, tiny})
	copy(boundary[1], []float64{1, 1, 1})
	if k >= 3 {
		cases["just past a tie"] = boundary
	}
	return cases
}

// An f16 or bf16 contraction's bound holds against every accumulator a correct device may use
// and against the exact sum rounded once, for random and adversarial operands and K from 1 to
// 1024 (odd ones too); and it is tight: with exact operands it is at most one unit of the
// result's dtype plus twice the accumulation's worst case 4·K·u₃₂·Σ|a·b| (the rounded image of
// the sum's interval), one unit for the random cases up to K = 64, and zero where the exact sum
// is farther than that from a rounding boundary.
func TestHalfContractionBoundHolds(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, dt := range []ir.DType{ir.BF16, ir.F16} {
		for _, k := range []int{1, 3, 7, 64, 257, 1024} {
			for name, ops := range halfCases(r, dt, k) {
				t.Run(fmt.Sprintf("%s/K=%d/%s", dt, k, name), func(t *testing.T) {
					a, b := ops[0], ops[1]
					val, bound := halfDot(t, dt, a, b)
					p, exact := products(a, b)
					ex, _ := exact.Float64()
					if got := tensor.RoundFloat(dt, ex); !AgreeBound(got, val, bound) {
						t.Errorf("the exact sum rounded once: %g against the reference %g, bound %g", got, val, bound)
					}
					worst := 0.0
					for _, acc := range accumulators {
						s, _ := acc.sum(p).Float64()
						got := tensor.RoundFloat(dt, s)
						if !AgreeBound(got, val, bound) {
							t.Errorf("%s: %g against the reference %g exceeds the bound %g", acc.name, got, val, bound)
						}
						worst = max(worst, math.Abs(got-val))
					}
					var mags float64
					for i := range a {
						mags += math.Abs(a[i] * b[i])
					}
					delta := halfAccumulation * float64(k) * 0x1p-24 * mags
					if limit := ulp(dt, math.Abs(val)+delta) + 2*delta; bound > limit {
						t.Errorf("bound %g exceeds one unit plus twice the accumulation's worst case, %g", bound, limit)
					}
					if name == "random" && k <= 64 && bound > ulp(dt, val) {
						t.Errorf("bound %g exceeds one unit of %s at %g", bound, dt, val)
					}
					// A rounding boundary is at least a quarter unit (at a power of two) from val.
					if near := math.Abs(ex-val) + 2*delta; bound != 0 && near < ulp(dt, val)/4 {
						t.Errorf("bound %g, but the exact sum %g is %g from the result, far from a rounding boundary", bound, ex, near)
					}
					t.Logf("value %g, bound %g, largest difference of the accumulators %g", val, bound, worst)
				})
			}
		}
	}
}

// The f32 accumulation of f16 and bf16 operands does not round to dt at every step: a device
// result two units of dt off an exact-data contraction is wrong, while the earlier rule, which
// charged 8·u_dt·Σ|a·b| as if the sum were kept in dt, passed it (and several more units).
func TestHalfContractionRegression(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, dt := range []ir.DType{ir.BF16, ir.F16} {
		for _, k := range []int{7, 64, 257} {
			a, b := make([]float64, k), make([]float64, k)
			for i := range k {
				a[i], b[i] = tensor.RoundFloat(dt, 2*r.Float64()-1), tensor.RoundFloat(dt, 2*r.Float64()-1)
			}
			val, bound := halfDot(t, dt, a, b)
			// Two units past the result in the direction away from zero.
			got := val + 2*math.Copysign(ulp(dt, val), val)
			got = tensor.RoundFloat(dt, got)
			if AgreeBound(got, val, bound) {
				t.Errorf("%s K=%d: %g passes against %g with bound %g", dt, k, got, val, bound)
			}
		}
	}
}

// A cast between float types rounds once to nearest on every device: an exact operand casts
// exactly, and an inexact one moves within the rounded image of its interval, not by a relative
// allowance of the result's dtype.
func TestCastBound(t *testing.T) {
	tests := []struct {
		name string
		src  string
		x    []float64
		want []float64
	}{
		{"an exact operand casts exactly", "graph g { input %x : f32[3]  %0 = cast(%x) {to=bf16} : bf16[3]  output y = %0 }",
			[]float64{1.2345, -3e-40, 3e38}, []float64{0, 0, 0}},
		{"to f16, overflow included", "graph g { input %x : f32[2]  %0 = cast(%x) {to=f16} : f16[2]  output y = %0 }",
			[]float64{1e5, 0.1}, []float64{0, 0}},
		// 1 + 2⁻⁸ is a tie of bf16 and rounds to 1; add's bound 1e-5·|x| reaches past it.
		{"an inexact operand at a tie moves by one unit", "graph g { input %x : f32[1]  %0 = add(%x, %x) : f32[1]  %1 = cast(%0) {to=bf16} : bf16[1]  output y = %1 }",
			[]float64{0.5 + 0x1p-9}, []float64{0x1p-7}},
		{"an inexact operand far from a tie does not move", "graph g { input %x : f32[1]  %0 = add(%x, %x) : f32[1]  %1 = cast(%0) {to=bf16} : bf16[1]  output y = %1 }",
			[]float64{0.5 + 0x1p-11}, []float64{0}},
		{"widening passes the bound on", "graph g { input %x : f16[1]  %0 = add(%x, %x) : f16[1]  %1 = cast(%0) {to=f32} : f32[1]  output y = %1 }",
			[]float64{1}, []float64{2 * 2e-2}},
	}
	for _, tc := range tests {
		b := bounds(t, tc.src, false, map[string][]float64{"x": tc.x})
		for i, w := range tc.want {
			if got := b.At(i); math.Abs(got-w) > 1e-5*w {
				t.Errorf("%s: bound[%d] = %g, want %g", tc.name, i, got, w)
			}
		}
	}
}
