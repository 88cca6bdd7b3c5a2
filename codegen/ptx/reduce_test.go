package ptx

import (
	"fmt"
	"math"
	"regexp"
	"testing"
)

var reduceCases = []struct{ name, src string }{
	{"sum_rows", `graph g {
  input %x : f32[M,N]
  %0 = reduce_sum(%x) {axes=[1]} : f32[M]
  output y = %0
}`},
	{"max_rows_keepdims", `graph g {
  input %x : f32[M,N]
  %0 = reduce_max(%x) {axes=[1], keepdims=true} : f32[M,1]
  output y = %0
}`},
	{"sum_all", `graph g {
  input %x : f32[M,N]
  %0 = reduce_sum(%x) {axes=[0,1]} : f32[]
  output y = %0
}`},
	{"mean_of_squares", `graph g {
  input %x : f32[M,N]
  %0 = mul(%x, %x) : f32[M,N]
  %1 = reduce_sum(%0) {axes=[1]} : f32[M]
  %2 = constant() {dtype=f32, shape=[M], value=[0.25]} : f32[M]
  %3 = mul(%1, %2) : f32[M]
  output y = %3
}`},
	{"softmax", `graph g {
  input %x : f32[M,N]
  %0 = reduce_max(%x) {axes=[1]} : f32[M]
  %1 = broadcast_in_dim(%0) {dims=[0], shape=[M,N]} : f32[M,N]
  %2 = sub(%x, %1) : f32[M,N]
  %3 = exp(%2) : f32[M,N]
  %4 = reduce_sum(%3) {axes=[1]} : f32[M]
  %5 = broadcast_in_dim(%4) {dims=[0], shape=[M,N]} : f32[M,N]
  %6 = div(%3, %5) : f32[M,N]
  output y = %6
}`},
	{"layernorm", `graph g {
  input %x : f32[M,N]
  param %gamma : f32[N]
  param %beta : f32[N]
  %0 = reduce_sum(%x) {axes=[1], keepdims=true} : f32[M,1]
  %1 = constant() {dtype=f32, shape=[M,1], value=[RECIP]} : f32[M,1]
  %2 = mul(%0, %1) : f32[M,1]
  %3 = broadcast_in_dim(%2) {dims=[0,1], shape=[M,N]} : f32[M,N]
  %4 = sub(%x, %3) : f32[M,N]
  %5 = mul(%4, %4) : f32[M,N]
  %6 = reduce_sum(%5) {axes=[1], keepdims=true} : f32[M,1]
  %7 = mul(%6, %1) : f32[M,1]
  %8 = constant() {dtype=f32, shape=[M,1], value=[1e-5]} : f32[M,1]
  %9 = add(%7, %8) : f32[M,1]
  %10 = rsqrt(%9) : f32[M,1]
  %11 = broadcast_in_dim(%10) {dims=[0,1], shape=[M,N]} : f32[M,N]
  %12 = mul(%4, %11) : f32[M,N]
  %13 = broadcast_in_dim(%gamma) {dims=[1], shape=[M,N]} : f32[M,N]
  %14 = broadcast_in_dim(%beta) {dims=[1], shape=[M,N]} : f32[M,N]
  %15 = mul(%12, %13) : f32[M,N]
  %16 = add(%15, %14) : f32[M,N]
  output y = %16
}`},
	{"int_min_rows", `graph g {
  input %x : i8[M,N]
  %0 = reduce_min(%x) {axes=[1]} : i8[M]
  %1 = reduce_sum(%x) {axes=[1]} : i8[M]
  output lo = %0
  output s = %1
}`},
	{"sum_cols", `graph g {
  input %x : f32[M,N]
  input %y : f32[M,N]
  %0 = mul(%x, %y) : f32[M,N]
  %1 = reduce_sum(%0) {axes=[0]} : f32[N]
  param %s : f32[N]
  %2 = add(%1, %s) : f32[N]
  output y = %2
}`},
	{"max_middle_keepdims", `graph g {
  input %x : bf16[2,M,N]
  %0 = reduce_max(%x) {axes=[1], keepdims=true} : bf16[2,1,N]
  %1 = reduce_min(%x) {axes=[1], keepdims=true} : bf16[2,1,N]
  %2 = sub(%0, %1) : bf16[2,1,N]
  output range = %2
  output hi = %0
}`},
	{"f16_prod", `graph g {
  input %x : f16[M,N]
  %0 = reduce_prod(%x) {axes=[1]} : f16[M]
  output y = %0
}`},
}

var reduceShapes = [][2]int{{1, 1}, {3, 5}, {7, 32}, {5, 300}, {200, 33}, {2, 3000}, {37, 1000}}

func TestReductions(t *testing.T) {
	for _, c := range reduceCases {
		for _, s := range reduceShapes {
			m, n := s[0], s[1]
			t.Run(fmt.Sprintf("%s_%dx%d", c.name, m, n), func(t *testing.T) {
				src := instantiate(replaceAll(c.src, "RECIP", fmt.Sprint(1/float64(n))), m, n)
				g := parse(t, src)
				scale := 3.0
				if c.name == "f16_prod" {
					scale = 1.2
				}
				checkKernel(t, Kernel{Name: "k_" + c.name, Graph: g}, inputsFor(g, uint64(m+n), scale), false)
			})
		}
	}
}

// A large full reduction spreads over blocks and finishes in the last one: an integer ticket,
// no float atomics.
func TestSplitReductionAsm(t *testing.T) {
	g := parse(t, instantiate(reduceCases[2].src, 37, 1000))
	text, l, err := Generate(Kernel{Name: "k_sum_all", Graph: g}, Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	if l.Grid[0] < 2 || l.Params[len(l.Params)-1].Kind != ArgScratch {
		t.Errorf("launch %+v: want several blocks and a scratch buffer", l)
	}
	if !regexp.MustCompile(`atom\.global\.add\.u32`).MatchString(text) || regexp.MustCompile(`atom\.[a-z.]*f(32|64)`).MatchString(text) {
		t.Error("want an integer ticket and no float atomics")
	}
}

// Softmax's max and sum fold in one pass; rows with −inf, +inf and NaN give what the reference
// gives.
func TestOnlineSoftmax(t *testing.T) {
	g := parse(t, instantiate(reduceCases[4].src, 6, 70))
	k := Kernel{Name: "k_softmax", Graph: g}
	text, _, err := Generate(k, Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`// online softmax`).MatchString(text) {
		t.Error("softmax is not folded online")
	}
	in := inputsFor(g, 11, 30)
	x := in["x"].F
	inf := math.Inf(1)
	x[0], x[1] = -inf, -inf // leading −inf in row 0
	for i := 70; i < 140; i++ {
		x[i] = -inf // row 1 all −inf: NaN
	}
	x[150] = inf   // row 2: +inf gives NaN
	x[220] = nan() // row 3: NaN
	x[290] = 88    // row 4: large values stay finite
	x[291] = 87.5
	checkKernel(t, k, in, false)
}

// Column reductions fused the ways the pass pipeline forms them (found by the compiler's random
// graphs): the result spread back over the reduced axis (a column softmax), the reduced
// operand's producer as an output beside the result, keepdims results broadcast back, integer
// columns. Each thread holds its column's result and walks its rows once more for the
// full-shape outputs.
func TestColumnFusions(t *testing.T) {
	cases := []struct{ name, src string }{
		{"softmax_cols", `graph g {
  input %x : f32[37,70]
  %0 = reduce_max(%x) {axes=[0]} : f32[70]
  %1 = broadcast_in_dim(%0) {dims=[1], shape=[37,70]} : f32[37,70]
  %2 = sub(%x, %1) : f32[37,70]
  %3 = exp(%2) : f32[37,70]
  output y = %3
}`},
		{"producer_and_sum", `graph g {
  input %x : f32[4,40,33]
  %0 = exp(%x) : f32[4,40,33]
  %1 = tanh(%0) : f32[4,40,33]
  %2 = reduce_sum(%1) {axes=[1]} : f32[4,33]
  %3 = exp(%2) : f32[4,33]
  output t = %1
  output s = %3
}`},
		{"keepdims_center", `graph g {
  input %x : f32[9,5,1,34]
  %0 = reduce_sum(%x) {axes=[0], keepdims=true} : f32[1,5,1,34]
  %1 = broadcast_in_dim(%0) {dims=[0,1,2,3], shape=[9,5,1,34]} : f32[9,5,1,34]
  %2 = sub(%x, %1) : f32[9,5,1,34]
  output y = %2
}`},
		{"i32_back", `graph g {
  input %x : i32[3,3,40]
  %0 = reduce_sum(%x) {axes=[0]} : i32[3,40]
  %1 = broadcast_in_dim(%0) {dims=[1,2], shape=[3,3,40]} : i32[3,3,40]
  output a = %1
  output b = %0
}`},
		{"reshape_out", `graph g {
  input %img : f32[2,2,4,4]
  %0 = reshape(%img) {shape=[4,4,2,2]} : f32[4,4,2,2]
  %1 = reduce_max(%0) {axes=[2], keepdims=true} : f32[4,4,1,2]
  output r = %0
  output m = %1
}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := parse(t, c.src)
			checkKernel(t, Kernel{Name: "k_" + c.name, Graph: g}, inputsFor(g, 8, 2), false)
		})
	}
}

// Reductions over axes that are not adjacent run in the row template with index arithmetic over
// the kept and reduced axes: sums, maxima and keepdims, a softmax-like use of the result spread
// back over the reduced axes, f16 and i32, a kept axis of size 1, and enough rows for many blocks.
func TestScatteredReductions(t *testing.T) {
	cases := []struct{ name, src string }{
		{"sum_0_2", `graph g {
  input %x : f32[4,5,6]
  %0 = reduce_sum(%x) {axes=[0,2]} : f32[5]
  output y = %0
}`},
		{"max_0_2_keepdims", `graph g {
  input %x : f32[4,5,6]
  %0 = reduce_max(%x) {axes=[0,2], keepdims=true} : f32[1,5,1]
  output y = %0
}`},
		{"normalize_1_3", `graph g {
  input %x : f32[3,7,33,9]
  %0 = exp(%x) : f32[3,7,33,9]
  %1 = reduce_sum(%0) {axes=[1,3]} : f32[3,33]
  %2 = broadcast_in_dim(%1) {dims=[0,2], shape=[3,7,33,9]} : f32[3,7,33,9]
  %3 = div(%0, %2) : f32[3,7,33,9]
  output y = %3
  output s = %1
}`},
		{"f16_sum_0_2", `graph g {
  input %x : f16[6,1,300]
  %0 = reduce_sum(%x) {axes=[0,2]} : f16[1]
  output y = %0
}`},
		{"i32_many_rows", `graph g {
  input %x : i32[5,700,3]
  %0 = reduce_sum(%x) {axes=[0,2]} : i32[700]
  output y = %0
}`},
		{"min_0_2_4", `graph g {
  input %x : f32[2,3,4,5,6]
  %0 = reduce_min(%x) {axes=[0,2,4]} : f32[3,5]
  output y = %0
}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := parse(t, c.src)
			checkKernel(t, Kernel{Name: "k_" + c.name, Graph: g}, inputsFor(g, 9, 2), false)
		})
	}
}
