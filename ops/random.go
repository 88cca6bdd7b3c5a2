package ops

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/tensor"
)

// The counter-based random numbers: Philox4x32-10 (Salmon et al., "Parallel random numbers: as
// easy as 1, 2, 3", SC 2011; the generator of cuRAND and of PyTorch's CUDA generator). Every
// element is a pure function of (key, stream, position), so the reference interpreter, the
// simulator and a GPU produce the same bits in any order and with any number of threads.

func init() {
	register(&Op{Name: "philox_uniform", Arity: 1, Class: Other, Infer: inferPhilox, Eval: evalPhilox,
		Attrs: []AttrSpec{{"shape", AttrInts, false}, {"stream", AttrInt, true}},
		Doc: "philox_uniform(key) {shape, stream}: f32[shape] uniform in [0, 1) from Philox4x32-10. key is an i64 scalar " +
			"(its two's-complement bits: low word k0, high word k1); stream (default 0, at least 0) is a second, static key. " +
			"Element i (row-major; over symbolic dims, at the run's sizes) is word i mod 4 of Philox4x32-10 with key (k0, k1) applied to the counter " +
			"(⌊i/4⌋ mod 2³², ⌊i/2³⁴⌋, stream mod 2³², ⌊stream/2³²⌋); a word w becomes (w >> 8)·2⁻²⁴, exact in f32, so 0 " +
			"can occur and 1 cannot. The same (key, stream) gives the same numbers everywhere; a different key or stream an " +
			"independent sequence. Not differentiable."})
}

func inferPhilox(args []ir.Type, a ir.Attrs) (ir.Type, error) {
	if !args[0].Equal(ir.T(ir.I64)) {
		return ir.Type{}, errf("the key must be an i64 scalar, have %s", args[0])
	}
	if a.Int("stream", 0) < 0 {
		return ir.Type{}, errf("stream %d is negative", a.Int("stream", 0))
	}
	t := ir.Type{DType: ir.F32, Shape: ir.Shape(a.Ints("shape")).Clone()}
	return t, checkShape(t.Shape)
}

// symPhilox gives philox_uniform the sizes declared for its result (a dropout mask over a symbolic
// batch, or batch and seq): element i is a function of its row-major index i at the run's sizes
// alone (Instantiate rewrites the shape attribute to them), so the numbers do not depend on the
// bound (the shape attribute, which InferSym checks the sizes' bounds against).
func symPhilox(_ []ir.Type, a ir.Attrs, want []sym.Expr, _ sym.Ranges) ([]sym.Expr, error) {
	if want != nil {
		return want, nil
	}
	out := make([]sym.Expr, len(a.Ints("shape")))
	for i, n := range a.Ints("shape") {
		out[i] = sym.Const(int64(n))
	}
	return out, nil
}

func evalPhilox(args []*tensor.Tensor, a ir.Attrs, out ir.Type) (*tensor.Tensor, error) {
	key := uint64(args[0].I[0])
	stream := uint64(a.Int("stream", 0))
	r := tensor.New(out)
	var words [4]uint32
	for i := range r.F {
		if i%4 == 0 || i == 0 {
			b := uint64(i / 4)
			words = Philox4x32([4]uint32{uint32(b), uint32(b >> 32), uint32(stream), uint32(stream >> 32)},
				[2]uint32{uint32(key), uint32(key >> 32)})
		}
		r.F[i] = float64(words[i%4]>>8) * 0x1p-24
	}
	return r, nil
}

// Philox constants: the multipliers and the Weyl sequence's key increments.
const (
	PhiloxM0, PhiloxM1 = 0xD2511F53, 0xCD9E8D57
	PhiloxW0, PhiloxW1 = 0x9E3779B9, 0xBB67AE85
)

// Philox4x32 is Philox4x32-10: ten rounds of two 32×32→64-bit multiplications and xors, the
// key bumped by the Weyl constants between rounds.
func Philox4x32(c [4]uint32, k [2]uint32) [4]uint32 {
	for r := range 10 {
		if r > 0 {
			k[0] += PhiloxW0
			k[1] += PhiloxW1
		}
		p0 := uint64(PhiloxM0) * uint64(c[0])
		p1 := uint64(PhiloxM1) * uint64(c[2])
		c = [4]uint32{uint32(p1>>32) ^ c[1] ^ k[0], uint32(p1), uint32(p0>>32) ^ c[3] ^ k[1], uint32(p0)}
	}
	return c
}
