package tolerance

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// bounds parses src, binds the inputs named in vals (f32 unless the graph says otherwise) and
// returns output y's reference values and bounds.
func bounds(t *testing.T, src string, tf32 bool, vals map[string][]float64) Bound {
	t.Helper()
	g, err := ir.Parse("test.gir", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string]*tensor.Tensor{}
	for _, v := range g.Inputs() {
		inputs[v.Name] = tensor.FromFloats(v.Type, vals[v.Name])
	}
	b, err := Bounds(g, inputs, nil, tf32)
	if err != nil {
		t.Fatal(err)
	}
	return b["y"]
}

// Graphs of the cases below: a difference of exps, an exp times an input, a matrix-vector
// product.
const (
	expSub = "graph g { input %x : f32[2]  input %z : f32[2]  %0 = exp(%x) : f32[2]  %1 = exp(%z) : f32[2]  %2 = sub(%0, %1) : f32[2]  output y = %2 }"
	expMul = "graph g { input %x : f32[2]  input %z : f32[2]  %0 = exp(%x) : f32[2]  %1 = mul(%0, %z) : f32[2]  output y = %1 }"
	matVec = "graph g { input %a : f32[2,2]  input %b : f32[2]  %0 = dot_general(%a, %b) {lhs_contract=[1], rhs_contract=[0]} : f32[2]  output y = %0 }"
)

// The comparison follows the magnitudes of the terms that cancelled, not the cancelled result:
// a result within the old rule's reach (rel·RMS of the output) fails where its terms are small,
// and a cancelled result off by the rounding of large terms passes.
func TestBoundsFollowTerms(t *testing.T) {
	old := func(got, want []float64, i int, tf32 bool) bool {
		rel, _ := Tolerance(ir.F32, tf32, 0)
		return Agree(got[i], want[i], rel, OutputFloor(rel, want))
	}
	tests := []struct {
		name string
		src  string
		tf32 bool
		in   map[string][]float64
		i    int     // the element judged
		got  float64 // a kernel's result for it
		ok   bool    // under the bound
		old  bool    // under the old rule
	}{
		{
			// exp(5) − exp(5) is 0 in the reference; one ulp of exp(5) ≈ 148 is the error of a
			// correct kernel whose two exps round differently (seed 5016's shape).
			name: "cancelled large terms pass",
			src:  expSub,
			in:   map[string][]float64{"x": {5, 0.25}, "z": {5, 0.5}},
			i:    0, got: 1.52587890625e-05, ok: true, old: false,
		},
		{
			name: "cancelled large terms: 1000 ulp fails",
			src:  expSub,
			in:   map[string][]float64{"x": {5, 0.25}, "z": {5, 0.5}},
			i:    0, got: 1000 * 1.52587890625e-05, ok: false, old: false,
		},
		{
			// A small element beside a large one: the old floor (1e-5·RMS ≈ 7e-3) accepts an
			// error of 5e-3 on a result of 1e-3 computed from small terms; the bound does not.
			name: "small terms: a wrong result within the old floor fails",
			src:  expMul,
			in:   map[string][]float64{"x": {0, 0}, "z": {1000, 0.001}},
			i:    1, got: 0.006, ok: false, old: true,
		},
		{
			name: "small terms: rounding passes",
			src:  expMul,
			in:   map[string][]float64{"x": {0, 0}, "z": {1000, 0.001}},
			i:    1, got: 0.001 * (1 + 3e-7), ok: true, old: true,
		},
		{
			// A TF32 contraction whose products cancel: 100·1 − 100·1 = 0, the operands' 10-bit
			// rounding errs by about 2⁻¹¹·200 ≈ 0.1 (seeds 3767, 12430, 13726, 15131).
			name: "tf32: cancelled large products pass",
			src:  matVec,
			tf32: true,
			in:   map[string][]float64{"a": {100.03, -100.01, 0.3, 0.01}, "b": {1, 1}},
			i:    0, got: 0.0625, ok: true, old: false,
		},
		{
			name: "tf32: the same error on small products fails",
			src:  matVec,
			tf32: true,
			in:   map[string][]float64{"a": {0.0103, -0.0101, 30, 1}, "b": {1, 1}},
			i:    0, got: 0.0002 + 0.0625, ok: false, old: true,
		},
		{
			name: "f32 FFMA: cancelled products within rel of their terms",
			src:  matVec,
			in:   map[string][]float64{"a": {100, -100, 3, 1}, "b": {1, 1}},
			i:    0, got: 5e-5, ok: true, old: false,
		},
		{
			name: "f32 FFMA: but not the TF32 error",
			src:  matVec,
			in:   map[string][]float64{"a": {100, -100, 3, 1}, "b": {1, 1}},
			i:    0, got: 0.0625, ok: false, old: false,
		},
		{
			// Exact ops on exact data: no error at all, and the sign of a zero is defined.
			name: "exact: max of inputs",
			src:  "graph g { input %x : f32[2]  input %z : f32[2]  %0 = max(%x, %z) : f32[2]  output y = %0 }",
			in:   map[string][]float64{"x": {1, 2}, "z": {3, 0}},
			i:    1, got: 2.0000002, ok: false, old: true,
		},
		{
			name: "exact: the sign of tanh(-0)",
			src:  "graph g { input %x : f32[2]  %0 = tanh(%x) : f32[2]  output y = %0 }",
			in:   map[string][]float64{"x": {math.Copysign(0, -1), 1}},
			i:    0, got: 0, ok: false, old: false,
		},
		{
			// x/x near 0 with an inexact x: the division amplifies the error.
			name: "division by an inexact small value",
			src:  "graph g { input %x : f32[2]  input %z : f32[2]  %0 = sub(%x, %z) : f32[2]  %1 = exp(%0) : f32[2]  %2 = sub(%1, %z) : f32[2]  %3 = div(%x, %2) : f32[2]  output y = %3 }",
			in:   map[string][]float64{"x": {1, 1}, "z": {1, 0.5}},
			i:    0, got: 1.0001e5, ok: true, old: false,
		},
	}
	for _, tc := range tests {
		b := bounds(t, tc.src, tc.tf32, tc.in)
		want := make([]float64, b.Val.Len())
		for i := range want {
			want[i] = b.Val.At(i)
		}
		got := append([]float64(nil), want...)
		got[tc.i] = tc.got
		if ok := AgreeBound(got[tc.i], want[tc.i], b.At(tc.i)); ok != tc.ok {
			t.Errorf("%s: %g against %g with bound %g: %v, want %v", tc.name, tc.got, want[tc.i], b.At(tc.i), ok, tc.ok)
		}
		if ok := old(got, want, tc.i, tc.tf32); ok != tc.old {
			t.Errorf("%s: the old rule says %v, want %v", tc.name, ok, tc.old)
		}
	}
}

// The bound of each kind of op, against its definition.
func TestBoundRules(t *testing.T) {
	rel32, _ := Tolerance(ir.F32, false, 0)
	rel16, _ := Tolerance(ir.F16, false, 0)
	const u32 = 0x1p-24
	tests := []struct {
		name string
		src  string
		tf32 bool
		in   map[string][]float64
		want []float64
	}{
		{"data is exact", "graph g { input %x : f32[2]  output y = %x }", false,
			map[string][]float64{"x": {1, 2}}, []float64{0, 0}},
		{"movement is exact", "graph g { input %x : f32[2]  %0 = pad(%x) {low=[1], high=[0], value=7.0} : f32[3]  %1 = reshape(%0) {shape=[3,1]} : f32[3,1]  output y = %1 }", false,
			map[string][]float64{"x": {1, 2}}, []float64{0, 0, 0}},
		{"a rounded op: rel·|result|", "graph g { input %x : f32[2]  %0 = add(%x, %x) : f32[2]  output y = %0 }", false,
			map[string][]float64{"x": {1, -3}}, []float64{2 * rel32, 6 * rel32}},
		{"a sum: rel·|result| + 8u·Σ|terms|", "graph g { input %x : f32[3]  %0 = reduce_sum(%x) {axes=[0]} : f32[]  output y = %0 }", false,
			map[string][]float64{"x": {4, -4, 1}}, []float64{rel32 + 8*u32*9}},
		{"a contraction: rel·|result| + 8u·Σ|a·b|", "graph g { input %a : f32[2]  input %b : f32[2]  %0 = dot_general(%a, %b) {lhs_contract=[0], rhs_contract=[0]} : f32[]  output y = %0 }", false,
			map[string][]float64{"a": {2, 3}, "b": {5, -4}}, []float64{2*rel32 + 8*u32*22}},
		{"tf32 contraction: and 2·2⁻¹¹·Σ|a·b| for the operands' rounding", "graph g { input %a : f32[2]  input %b : f32[2]  %0 = dot_general(%a, %b) {lhs_contract=[0], rhs_contract=[0]} : f32[]  output y = %0 }", true,
			map[string][]float64{"a": {2, 3}, "b": {5, -4}}, []float64{2*rel32 + (8*u32+2*0x1p-11)*22}},
		{"a sum's bound moves through a sum", "graph g { input %x : f32[2]  %0 = add(%x, %x) : f32[2]  %1 = reduce_sum(%0) {axes=[0]} : f32[]  output y = %1 }", false,
			map[string][]float64{"x": {1, -1}}, []float64{2*rel32 + 2*rel32 + 8*u32*4}},
		{"a maximum moves by its elements' largest bound", "graph g { input %x : f32[2]  %0 = add(%x, %x) : f32[2]  %1 = reduce_max(%0) {axes=[0]} : f32[]  output y = %1 }", false,
			map[string][]float64{"x": {1, -4}}, []float64{8 * rel32}},
		{"a minimum moves by its elements' largest bound too", "graph g { input %x : f32[2]  %0 = add(%x, %x) : f32[2]  %1 = reduce_min(%0) {axes=[0]} : f32[]  output y = %1 }", false,
			map[string][]float64{"x": {1, -4}}, []float64{8 * rel32}},
		// Regression (random graph seed 18353): the same infinity on both sides of a perturbation
		// made ∞ − ∞ = NaN, which reduce_min's bound turned into 0, holding the finite minimum to
		// bit equality.
		{"an infinity beside finite elements", "graph g { input %x : f64[2]  input %z : f64[2]  %0 = add(%x, %x) : f64[2]  %1 = relu(%z) : f64[2]  %2 = div(%0, %1) : f64[2]  %3 = reduce_min(%2) {axes=[0]} : f64[]  output y = %3 }", false,
			map[string][]float64{"x": {1, 1}, "z": {0, 4}}, []float64{1e-12}},
		{"an f16 result cast to f64 keeps f16's rounding", "graph g { input %x : f16[1]  %0 = add(%x, %x) : f16[1]  %1 = cast(%0) {to=f64} : f64[1]  output y = %1 }", false,
			map[string][]float64{"x": {1}}, []float64{2*rel16 + 2e-12}},
		{"a compare that may flip picks the other side", "graph g { input %x : f32[1]  input %z : f32[1]  %0 = add(%x, %z) : f32[1]  %1 = lt(%0, %z) : bool[1]  %2 = select(%1, %x, %z) : f32[1]  output y = %2 }", false,
			map[string][]float64{"x": {0}, "z": {3}}, []float64{3}},
		{"a product: Π(|a|(1+rel)) − Π|a|", "graph g { input %x : f32[2]  %0 = reduce_prod(%x) {axes=[0]} : f32[]  output y = %0 }", false,
			map[string][]float64{"x": {2, -3}}, []float64{6 * ((1+rel32)*(1+rel32) - 1)}},
		// An index from a float that cannot move (its bound does not reach the next integer)
		// still carries the gathered rows' own bounds.
		{"an index that cannot move", "graph g { input %x : f32[3]  input %i : f32[1]  %0 = add(%x, %x) : f32[3]  %1 = add(%i, %i) : f32[1]  %2 = cast(%1) {to=i32} : i32[1]  %3 = gather(%0, %2) : f32[1]  output y = %3 }", false,
			map[string][]float64{"x": {1, 2, 3}, "i": {0.25}}, []float64{2 * rel32}},
		{"an index that may move: not determined", "graph g { input %x : f32[3]  input %i : f32[1]  %0 = add(%i, %i) : f32[1]  %1 = cast(%0) {to=i32} : i32[1]  %2 = gather(%x, %1) : f32[1]  output y = %2 }", false,
			map[string][]float64{"x": {1, 2, 3}, "i": {0.5}}, []float64{math.Inf(1)}},
		// update_slice moves elements: the cache keeps its bounds where the update does not land.
		{"an update carries each row's own bound", "graph g { input %c : f32[1,3]  input %u : f32[1,1]  input %p : i64[1]  %0 = add(%u, %u) : f32[1,1]  %1 = update_slice(%c, %0, %p) {axis=1} : f32[1,3]  output y = %1 }", false,
			map[string][]float64{"c": {1, 2, 3}, "u": {4}, "p": {1}}, []float64{0, 8 * rel32, 0}},
		{"an update at a position that may move: not determined", "graph g { input %c : f32[1,3]  input %u : f32[1,1]  input %i : f32[1]  %0 = add(%i, %i) : f32[1]  %1 = cast(%0) {to=i32} : i32[1]  %2 = update_slice(%c, %u, %1) {axis=1} : f32[1,3]  output y = %2 }", false,
			map[string][]float64{"c": {1, 2, 3}, "u": {4}, "i": {0.5}}, []float64{math.Inf(1), math.Inf(1), math.Inf(1)}},
	}
	for _, tc := range tests {
		b := bounds(t, tc.src, tc.tf32, tc.in)
		for i, w := range tc.want {
			got := b.At(i)
			if math.IsInf(w, 0) && got != w || !(math.Abs(got-w) <= 1e-3*math.Abs(w)) && got != w {
				t.Errorf("%s: bound[%d] = %g, want %g", tc.name, i, got, w)
			}
		}
	}
}

// The bound holds for what correct kernels compute: f32 dot products summed in ascending order in
// f32 (FFMA), and with TF32 operands, against the reference's f64 sum rounded once, for random
// operands with mixed signs and contractions up to 16384.
func TestBoundHoldsForAccumulation(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	tf32 := func(x float32) float32 { // round to nearest, ties away, to a 10-bit mantissa
		b := math.Float32bits(x)
		return math.Float32frombits((b + 0x1000) &^ 0x1fff)
	}
	for _, k := range []int{1, 7, 64, 1024, 4096, 16384} {
		for _, useTF32 := range []bool{false, true} {
			g := ir.NewGraph("g")
			a := g.Input("a", ir.T(ir.F32, k), nil)
			bv := g.Input("b", ir.T(ir.F32, k), nil)
			g.SetOutput("y", g.Add("dot_general", ir.T(ir.F32), ir.Attrs{"lhs_contract": []int{0}, "rhs_contract": []int{0}}, a, bv))
			for trial := range 5 {
				as, bs := make([]float64, k), make([]float64, k)
				var acc float32
				for i := range k {
					as[i], bs[i] = float64(float32(2*r.Float64()-1)), float64(float32(2*r.Float64()-1))
					x, y := float32(as[i]), float32(bs[i])
					if useTF32 {
						x, y = tf32(x), tf32(y)
					}
					acc = float32(float64(acc) + float64(x)*float64(y)) // one FFMA rounding
				}
				out, err := Bounds(g, map[string]*tensor.Tensor{"a": tensor.FromFloats(a.Type, as), "b": tensor.FromFloats(bv.Type, bs)}, nil, useTF32)
				if err != nil {
					t.Fatal(err)
				}
				y := out["y"]
				if !AgreeBound(float64(acc), y.Val.At(0), y.At(0)) {
					t.Errorf("k=%d tf32=%v trial %d: %g vs %g exceeds the bound %g", k, useTF32, trial, acc, y.Val.At(0), y.At(0))
				}
			}
		}
	}
}

func TestAgreeBound(t *testing.T) {
	nan, inf, neg0 := math.NaN(), math.Inf(1), math.Copysign(0, -1)
	tests := []struct {
		got, want, bound float64
		ok               bool
	}{
		{1, 1, 0, true},
		{1.5, 1, 0.5, true},
		{1.5, 1, 0.49, false},
		{nan, nan, 0, true},
		{nan, 1, 1, false},
		{1, nan, 1, false},
		{nan, 1, inf, true}, // not determined
		{neg0, 0, 0, false},
		{neg0, neg0, 0, true},
		{neg0, 0, 1e-9, true}, // an inexact zero has no defined sign
		{inf, inf, 1, true},
		{3e38, inf, 1e30, false},
		{-inf, inf, 1, false},
	}
	for _, tc := range tests {
		if ok := AgreeBound(tc.got, tc.want, tc.bound); ok != tc.ok {
			t.Errorf("AgreeBound(%g, %g, %g) = %v, want %v", tc.got, tc.want, tc.bound, ok, tc.ok)
		}
	}
}
