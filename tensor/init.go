package tensor

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"

	"github.com/gcomp/gcomp/ir"
)

// Initializers a parameter can declare in its attributes, as the DSL writes them:
//
//	init="uniform", low=L, high=H   U(L, H), PyTorch's default for Linear and Conv2d weights and biases
//	init="normal", mean=M, std=S    N(M, S²)
//	init="zeros" | "ones"
//	init="constant", value=V
//
// Every parameter draws from its own generator, seeded by (seed, name), so adding a layer does not
// change the initial values of the others.
const (
	InitUniform  = "uniform"
	InitNormal   = "normal"
	InitZeros    = "zeros"
	InitOnes     = "ones"
	InitConstant = "constant"
)

// RNG returns the generator for the named tensor under seed.
func RNG(seed uint64, name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// Initialize returns the initial value of parameter p under seed.
func Initialize(p *ir.Value, seed uint64) (*Tensor, error) {
	x := New(p.Type)
	rng := RNG(seed, p.Name)
	a := p.Attrs
	kind := a.String("init", InitZeros)
	fill := func(f func() float64) {
		for i := 0; i < x.Len(); i++ {
			if x.F != nil {
				x.F[i] = RoundFloat(p.Type.DType, f())
			} else {
				x.I[i] = WrapInt(p.Type.DType, int64(f()))
			}
		}
	}
	switch kind {
	case InitUniform:
		lo, hi := a.Float("low", -1), a.Float("high", 1)
		if !(lo <= hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
			return nil, fmt.Errorf("parameter %s: uniform init needs finite low <= high, have low=%v, high=%v", p.Name, lo, hi)
		}
		fill(func() float64 { return lo + (hi-lo)*rng.Float64() })
	case InitNormal:
		mean, std := a.Float("mean", 0), a.Float("std", 1)
		if math.IsNaN(mean) || math.IsInf(mean, 0) || !(std >= 0) || math.IsInf(std, 0) {
			return nil, fmt.Errorf("parameter %s: normal init needs a finite mean and a finite std >= 0, have mean=%v, std=%v", p.Name, mean, std)
		}
		fill(func() float64 { return mean + std*rng.NormFloat64() })
	case InitZeros:
	case InitOnes:
		fill(func() float64 { return 1 })
	case InitConstant:
		v := a.Float("value", 0)
		fill(func() float64 { return v })
	default:
		return nil, fmt.Errorf("parameter %s: unknown initializer %q (want uniform, normal, zeros, ones or constant)", p.Name, kind)
	}
	return x, nil
}

// RandomInput returns seeded random data for input v: standard normal values for floats, uniform
// integers in the input's declared range=[low,high) (default [0,10)) for integers, 0/1 for bool.
func RandomInput(v *ir.Value, seed uint64) *Tensor {
	x := New(v.Type)
	rng := RNG(seed, v.Name)
	lo, hi := int64(0), int64(10)
	if r := v.Attrs.Ints("range"); len(r) == 2 {
		lo, hi = int64(r[0]), int64(r[1]) // the verifier checked lo < hi within the dtype
	}
	if v.Type.DType == ir.Bool {
		lo, hi = 0, 2
	}
	// hi-lo can exceed MaxInt64 (i64 range=[-2^62, 2^62]); as a uint64 it is exact.
	n := uint64(hi) - uint64(lo)
	for i := 0; i < x.Len(); i++ {
		if x.F != nil {
			x.F[i] = RoundFloat(v.Type.DType, rng.NormFloat64())
		} else {
			x.I[i] = WrapInt(v.Type.DType, int64(uint64(lo)+rng.Uint64N(n)))
		}
	}
	return x
}

// SeededValues returns a value for every input of g (RandomInput) and every parameter (its
// initializer), all from seed: what `gcomp run` and `gcomp check` use when none are given.
func SeededValues(g *ir.Graph, seed uint64) (inputs, params map[string]*Tensor, err error) {
	inputs, params = map[string]*Tensor{}, map[string]*Tensor{}
	for _, v := range g.Inputs() {
		inputs[v.Name] = RandomInput(v, seed)
	}
	for _, p := range g.Params() {
		if params[p.Name], err = Initialize(p, seed); err != nil {
			return nil, nil, err
		}
	}
	return inputs, params, nil
}
