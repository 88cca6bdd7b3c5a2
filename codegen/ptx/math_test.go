package ptx

import (
	"math"
	"math/big"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// ulpBound is the largest error, in units in the last place of the correctly rounded result,
// each approximate op may have in the simulator (whose ex2.approx is exact; docs/codegen.md adds
// the hardware's own ex2.approx error to exp's bound). The numbers are those docs/codegen.md
// states.
var ulpBound = map[ir.DType]map[string]float64{
	ir.F32: {"exp": 1, "log": 1, "sigmoid": 1, "tanh": 1, "erf": 1, "sin": 1, "cos": 1, "rsqrt": 0},
	ir.F64: {"exp": 2, "log": 2, "sigmoid": 3, "tanh": 3, "erf": 64, "sin": 2, "cos": 2, "rsqrt": 0},
	// f16 and bf16 round an f32 or f64 result once more: at most 1 ulp of their own.
	ir.F16:  {"exp": 1, "log": 1, "sigmoid": 1, "tanh": 1, "erf": 1, "sin": 1, "cos": 1, "rsqrt": 1},
	ir.BF16: {"exp": 1, "log": 1, "sigmoid": 1, "tanh": 1, "erf": 1, "sin": 1, "cos": 1, "rsqrt": 1},
}

// mathInputs spans the whole range: ±0, subnormals, small, moderate and large magnitudes in
// geometric steps, the overflow and underflow edges of exp, and the series/fraction switch of erf.
func mathInputs(d ir.DType) []float64 {
	xs := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 1, -1, 2.5, -2.5, 88.72, -87.33,
		-103.9, 709.7, -745, 6, 20, 0.5 * math.Ln2, 1e-7, 1 - 0x1p-24, 1 + 0x1p-23,
		0.625, -0.625, 0.625 - 0x1p-25, 9.99, 10.01, // tanh's f32 switches
		erfSplit, -erfSplit, erfSplit - 0x1p-25, 3.92, 4, 4.01} // erf's
	for x := 1e-44; x < 1e6; x *= 1.0137 {
		xs = append(xs, x, -x)
	}
	for i := range xs {
		xs[i] = tensor.RoundFloat(d, xs[i])
	}
	return xs
}

func ulpsOff(d ir.DType, got, want float64) float64 {
	if math.IsNaN(got) || math.IsNaN(want) {
		if math.IsNaN(got) == math.IsNaN(want) {
			return 0
		}
		return math.Inf(1)
	}
	if got == want {
		return 0
	}
	if math.IsInf(want, 0) || math.IsInf(got, 0) {
		return math.Inf(1)
	}
	var ulp float64
	if d == ir.F16 || d == ir.BF16 {
		// The spacing of the 16-bit type at |want|: 2^(e−10) (f16) or 2^(e−7) (bf16), e the
		// exponent, no smaller than the subnormals' spacing.
		mant, minExp := 10, -14
		if d == ir.BF16 {
			mant, minExp = 7, -126
		}
		_, e := math.Frexp(want)
		ulp = math.Ldexp(1, max(e-1, minExp)-mant)
	} else if d == ir.F32 {
		w := float32(want)
		ulp = float64(math.Nextafter32(float32(math.Abs(float64(w))), float32(math.Inf(1))) - float32(math.Abs(float64(w))))
		ulp = math.Max(ulp, 0x1p-149)
	} else {
		ulp = math.Nextafter(math.Abs(want), math.Inf(1)) - math.Abs(want)
	}
	return math.Abs(got-want) / ulp
}

func TestMathAccuracy(t *testing.T) {
	for _, d := range []ir.DType{ir.F32, ir.F64, ir.F16, ir.BF16} {
		for _, op := range []string{"exp", "log", "sigmoid", "tanh", "erf", "sin", "cos", "rsqrt"} {
			t.Run(op+"_"+d.String(), func(t *testing.T) {
				xs := mathInputs(d)
				g := ir.NewGraph(op)
				x := g.Input("x", ir.T(d, len(xs)), nil)
				g.SetOutput("y", g.Add(op, x.Type, nil, x))
				in := map[string]*tensor.Tensor{"x": tensor.FromFloats(x.Type, xs)}
				res := runKernel(t, Kernel{Name: "k_" + op, Graph: g}, in)
				want, err := ref.Run(g, in, nil)
				if err != nil {
					t.Fatal(err)
				}
				worst, at := 0.0, 0.0
				for i, xi := range xs {
					if (op == "sin" || op == "cos") && math.Abs(xi) >= sinCosLimit {
						continue
					}
					if op == "exp" && d == ir.F64 && xi > 708.39 && xi < 709.79 {
						continue // Go's amd64 math.Exp, the reference, overflows to +Inf from 708.4 on
					}
					if u := ulpsOff(d, res.out["y"].F[i], want["y"].F[i]); u > worst {
						worst, at = u, xi
					}
				}
				if worst > ulpBound[d][op] {
					t.Errorf("%s %s: %.2f ulp at x=%v (got %v, want %v), bound %v", op, d, worst, at,
						res.out["y"].F[indexOf(xs, at)], want["y"].F[indexOf(xs, at)], ulpBound[d][op])
				}
				t.Logf("%s %s: max error %.3f ulp over %d inputs", op, d, worst, len(xs))
			})
		}
	}
}

func indexOf(xs []float64, x float64) int {
	for i, v := range xs {
		if v == x || (v != v && x != x) {
			return i
		}
	}
	return 0
}

// pow over a grid of bases (both signs, subnormal to huge) and exponents (integers, halves,
// fractions, large): f32 within 1 ulp, f64 within 2^-40 relative (the error of log grows with
// |y·log x|, up to 709).
func TestPowAccuracy(t *testing.T) {
	var xs, ys []float64
	for x := 1e-40; x < 1e30; x *= 1.37 {
		for _, y := range []float64{-3, -2.5, -1, -0.5, 0.5, 1.5, 2, 3, 7, 0.3333, -12.25, 100} {
			xs, ys = append(xs, x, -x), append(ys, y, y)
		}
	}
	for _, d := range []ir.DType{ir.F32, ir.F64} {
		t.Run(d.String(), func(t *testing.T) {
			g := ir.NewGraph("pow")
			x := g.Input("x", ir.T(d, len(xs)), nil)
			y := g.Input("y", ir.T(d, len(xs)), nil)
			g.SetOutput("z", g.Add("pow", x.Type, nil, x, y))
			rx, ry := make([]float64, len(xs)), make([]float64, len(xs))
			for i := range xs {
				rx[i], ry[i] = tensor.RoundFloat(d, xs[i]), tensor.RoundFloat(d, ys[i])
			}
			in := map[string]*tensor.Tensor{"x": tensor.FromFloats(x.Type, rx), "y": tensor.FromFloats(y.Type, ry)}
			res := runKernel(t, Kernel{Name: "k_pow", Graph: g}, in)
			want, err := ref.Run(g, in, nil)
			if err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for i := range rx {
				got, w := res.out["z"].F[i], want["z"].F[i]
				var e float64
				if d == ir.F32 {
					e = ulpsOff(d, got, w)
				} else if got != w {
					e = math.Abs(got-w) / math.Abs(w)
					if math.IsNaN(e) || math.IsInf(w, 0) || w == 0 {
						e = math.Inf(1)
						if math.IsNaN(got) && math.IsNaN(w) {
							e = 0
						}
					}
				}
				if e > worst {
					worst = e
				}
			}
			bound := map[ir.DType]float64{ir.F32: 1, ir.F64: 0x1p-40}[d]
			if worst > bound {
				t.Errorf("pow %s: worst error %g (bound %g)", d, worst, bound)
			}
			t.Logf("pow %s: worst error %g over %d pairs", d, worst, len(rx))
		})
	}
}

// The 2/π words of the Payne–Hanek reduction, against 2/π computed to 300 bits with Machin's
// formula π = 16·atan(1/5) − 4·atan(1/239).
func TestTwoOverPi(t *testing.T) {
	const prec = 300
	atanInv := func(n int64) *big.Float { // atan(1/n) = Σ (−1)^k / ((2k+1)·n^(2k+1))
		sum := new(big.Float).SetPrec(prec)
		x := new(big.Float).SetPrec(prec).Quo(big.NewFloat(1).SetPrec(prec), new(big.Float).SetPrec(prec).SetInt64(n))
		n2 := new(big.Float).SetPrec(prec).SetInt64(n * n)
		for k := int64(0); k < 200; k++ {
			term := new(big.Float).SetPrec(prec).Quo(x, new(big.Float).SetPrec(prec).SetInt64(2*k+1))
			if k%2 == 0 {
				sum.Add(sum, term)
			} else {
				sum.Sub(sum, term)
			}
			x.Quo(x, n2)
		}
		return sum
	}
	pi := new(big.Float).SetPrec(prec).Sub(
		new(big.Float).SetPrec(prec).Mul(big.NewFloat(16), atanInv(5)),
		new(big.Float).SetPrec(prec).Mul(big.NewFloat(4), atanInv(239)))
	v := new(big.Float).SetPrec(prec).Quo(big.NewFloat(2).SetPrec(prec), pi)
	v.Mul(v, new(big.Float).SetPrec(prec).SetMantExp(big.NewFloat(1), 192))
	w, _ := v.Int(nil)
	for i := 5; i >= 0; i-- {
		word := new(big.Int).And(w, big.NewInt(0xFFFFFFFF)).Uint64()
		if uint32(word) != twoOverPi[i] {
			t.Errorf("word %d: have %08X, 2/π gives %08X", i, twoOverPi[i], word)
		}
		w.Rsh(w, 32)
	}
}

// f32 sin and cos are exact-reduced for every finite argument, up to 3.4e38.
func TestSinCosLarge(t *testing.T) {
	var xs []float64
	for x := 1e6; x < 3.4e38; x *= 1.9 {
		xs = append(xs, float64(float32(x)), -float64(float32(x)))
	}
	xs = append(xs, float64(math.MaxFloat32), 16777216, 1.6e6, 1647099, 0x1p20*math.Pi/2)
	for _, op := range []string{"sin", "cos"} {
		g := ir.NewGraph(op)
		x := g.Input("x", ir.T(ir.F32, len(xs)), nil)
		g.SetOutput("y", g.Add(op, x.Type, nil, x))
		for i := range xs {
			xs[i] = float64(float32(xs[i]))
		}
		in := map[string]*tensor.Tensor{"x": tensor.FromFloats(x.Type, xs)}
		res := runKernel(t, Kernel{Name: "k_" + op, Graph: g}, in)
		want, err := ref.Run(g, in, nil)
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for i := range xs {
			if u := ulpsOff(ir.F32, res.out["y"].F[i], want["y"].F[i]); u > worst {
				worst = u
			}
			if u := ulpsOff(ir.F32, res.out["y"].F[i], want["y"].F[i]); u > 1 {
				t.Errorf("%s(%v) = %v, want %v", op, xs[i], res.out["y"].F[i], want["y"].F[i])
			}
		}
		t.Logf("%s f32 large arguments: worst %.2f ulp over %d", op, worst, len(xs))
	}
}
