package passes

import (
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/tensor"
)

// parse reads a graph body given without the "graph t {" wrapper.
func parse(t *testing.T, body string) *ir.Graph {
	t.Helper()
	g, err := ir.Parse("test.gir", []byte("graph t {\n"+body+"\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := ops.Verify(g); err != nil {
		t.Fatal(err)
	}
	return g
}

func TestCanonicalization(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pass   func(*ir.Graph) *ir.Graph
		before string
		after  string // "": unchanged
	}{
		{"dce keeps inputs and params", deadCode, `
  input %x : f32[4]
  param %w : f32[4]
  %0 = exp(%x) : f32[4]
  %1 = neg(%x) : f32[4]
  output y = %1`, `
  input %x : f32[4]
  param %w : f32[4]
  %0 = neg(%x) : f32[4]
  output y = %0`},
		{"cse merges equal values and keeps the first", commonSubexpressions, `
  input %x : f32[4]
  %0 = exp(%x) : f32[4]
  %1 = exp(%x) : f32[4]
  %2 = add(%0, %1) : f32[4]
  %3 = add(%1, %0) : f32[4]
  output y = %2
  output z = %3`, `
  input %x : f32[4]
  %0 = exp(%x) : f32[4]
  %1 = add(%0, %0) : f32[4]
  output y = %1
  output z = %1`},
		{"cse tells -0 from +0", commonSubexpressions, `
  %0 = constant() {dtype=f32, shape=[], value=[0.0]} : f32[]
  %1 = constant() {dtype=f32, shape=[], value=[-0.0]} : f32[]
  %2 = add(%0, %1) : f32[]
  output y = %2`, `
  %0 = constant() {dtype=f32, shape=[], value=[0.0]} : f32[]
  %1 = constant() {dtype=f32, shape=[], value=[-0.0]} : f32[]
  %2 = add(%0, %1) : f32[]
  output y = %2`},
		{"fold small values", foldConstants, `
  %0 = constant() {dtype=f32, shape=[2], value=[1.0, 2.0]} : f32[2]
  %1 = exp(%0) : f32[2]
  output y = %1`, `
  %0 = constant() {dtype=f32, shape=[2], value=[1.0,2.0]} : f32[2]
  %1 = constant() {dtype=f32, shape=[2], value=[2.7182817459106445,7.389056205749512]} : f32[2]
  output y = %1`},
		{"fold splats of any size on one element", foldConstants, `
  %0 = constant() {dtype=f32, shape=[1000,1000], value=[2.0]} : f32[1000,1000]
  %1 = mul(%0, %0) : f32[1000,1000]
  %2 = reshape(%1) {shape=[1000000]} : f32[1000000]
  output y = %2`, `
  %0 = constant() {dtype=f32, shape=[1000,1000], value=[2.0]} : f32[1000,1000]
  %1 = constant() {dtype=f32, shape=[1000,1000], value=[4.0]} : f32[1000,1000]
  %2 = constant() {dtype=f32, shape=[1000000], value=[4.0]} : f32[1000000]
  output y = %2`},
		{"fold leaves large non-splat results", foldConstants, `
  %0 = iota() {dim=0, dtype=f32, shape=[2000]} : f32[2000]
  %1 = constant() {dtype=f32, shape=[2000], value=[1.0]} : f32[2000]
  %2 = add(%0, %1) : f32[2000]
  output y = %2`, `
  %0 = iota() {dim=0, dtype=f32, shape=[2000]} : f32[2000]
  %1 = constant() {dtype=f32, shape=[2000], value=[1.0]} : f32[2000]
  %2 = add(%0, %1) : f32[2000]
  output y = %2`},
		{"fold makes an iota of one element along its dim a zero splat", foldConstants, `
  input %p : i64[3,1]
  %0 = iota() {dim=1, dtype=i64, shape=[3,1]} : i64[3,1]
  %1 = iota() {dim=0, dtype=i64, shape=[3,1]} : i64[3,1]
  %2 = add(%p, %0) : i64[3,1]
  %3 = add(%2, %1) : i64[3,1]
  output y = %3`, `
  input %p : i64[3,1]
  %0 = constant() {dtype=i64, shape=[3,1], value=[0.0]} : i64[3,1]
  %1 = iota() {dim=0, dtype=i64, shape=[3,1]} : i64[3,1]
  %2 = add(%p, %0) : i64[3,1]
  %3 = add(%2, %1) : i64[3,1]
  output y = %3`},
		{"fold leaves a table broadcast to symbolic sizes", foldConstants, `
  dims { batch in [1,4] }
  %0 = constant() {dtype=f32, shape=[2], value=[1.0,2.0]} : f32[2]
  %1 = broadcast_in_dim(%0) {shape=[4,2], dims=[1]} : f32[batch,2]
  %2 = exp(%1) : f32[batch,2]
  output y = %2`, ""},
		{"x*1, x/1, x-0, x+(-0) and -(-x) are x", simplify, `
  input %x : f32[4]
  %0 = constant() {dtype=f32, shape=[4], value=[1.0]} : f32[4]
  %1 = constant() {dtype=f32, shape=[4], value=[0.0]} : f32[4]
  %2 = constant() {dtype=f32, shape=[4], value=[-0.0]} : f32[4]
  %3 = mul(%0, %x) : f32[4]
  %4 = div(%3, %0) : f32[4]
  %5 = sub(%4, %1) : f32[4]
  %6 = add(%5, %2) : f32[4]
  %7 = neg(%6) : f32[4]
  %8 = neg(%7) : f32[4]
  output y = %8`, `
  input %x : f32[4]
  %0 = constant() {dtype=f32, shape=[4], value=[1.0]} : f32[4]
  %1 = constant() {dtype=f32, shape=[4], value=[0.0]} : f32[4]
  %2 = constant() {dtype=f32, shape=[4], value=[-0.0]} : f32[4]
  %3 = neg(%x) : f32[4]
  output y = %x`},
		{"float x+0 and x*0 stay (-0 and NaN)", simplify, `
  input %x : f32[4]
  %0 = constant() {dtype=f32, shape=[4], value=[0.0]} : f32[4]
  %1 = add(%x, %0) : f32[4]
  %2 = mul(%1, %0) : f32[4]
  output y = %2`, `
  input %x : f32[4]
  %0 = constant() {dtype=f32, shape=[4], value=[0.0]} : f32[4]
  %1 = add(%x, %0) : f32[4]
  %2 = mul(%1, %0) : f32[4]
  output y = %2`},
		{"integer x+0 is x and x*0 is 0", simplify, `
  input %x : i32[4]
  %0 = constant() {dtype=i32, shape=[4], value=[0.0]} : i32[4]
  %1 = add(%x, %0) : i32[4]
  %2 = mul(%1, %0) : i32[4]
  output y = %2`, `
  input %x : i32[4]
  %0 = constant() {dtype=i32, shape=[4], value=[0.0]} : i32[4]
  output y = %0`},
		{"transpose of transpose composes", simplify, `
  input %x : f32[2,3,4]
  %0 = transpose(%x) {perm=[1,2,0]} : f32[3,4,2]
  %1 = transpose(%0) {perm=[1,0,2]} : f32[4,3,2]
  %2 = transpose(%1) {perm=[2,1,0]} : f32[2,3,4]
  output y = %1
  output z = %2`, `
  input %x : f32[2,3,4]
  %0 = transpose(%x) {perm=[1,2,0]} : f32[3,4,2]
  %1 = transpose(%x) {perm=[2,1,0]} : f32[4,3,2]
  output y = %1
  output z = %x`},
		{"reshape of reshape, broadcast of broadcast, broadcast of a splat", simplify, `
  input %x : f32[6]
  input %b : f32[3]
  %0 = reshape(%x) {shape=[2,3]} : f32[2,3]
  %1 = reshape(%0) {shape=[3,2]} : f32[3,2]
  %2 = reshape(%1) {shape=[6]} : f32[6]
  %3 = broadcast_in_dim(%b) {dims=[1], shape=[2,3]} : f32[2,3]
  %4 = broadcast_in_dim(%3) {dims=[1,2], shape=[4,2,3]} : f32[4,2,3]
  %5 = constant() {dtype=f32, shape=[], value=[3.0]} : f32[]
  %6 = broadcast_in_dim(%5) {dims=[], shape=[2,3]} : f32[2,3]
  output y = %1
  output z = %2
  output w = %4
  output c = %6`, `
  input %x : f32[6]
  input %b : f32[3]
  %0 = reshape(%x) {shape=[2,3]} : f32[2,3]
  %1 = reshape(%x) {shape=[3,2]} : f32[3,2]
  %2 = broadcast_in_dim(%b) {dims=[1], shape=[2,3]} : f32[2,3]
  %3 = broadcast_in_dim(%b) {dims=[2], shape=[4,2,3]} : f32[4,2,3]
  %4 = constant() {dtype=f32, shape=[], value=[3.0]} : f32[]
  %5 = constant() {dtype=f32, shape=[2,3], value=[3.0]} : f32[2,3]
  output y = %1
  output z = %x
  output w = %3
  output c = %5`},
		{"lossless cast chains collapse, lossy ones stay", simplify, `
  input %h : f16[4]
  input %f : f32[4]
  %0 = cast(%h) {to=f32} : f32[4]
  %1 = cast(%0) {to=f64} : f64[4]
  %2 = cast(%0) {to=f16} : f16[4]
  %3 = cast(%f) {to=f16} : f16[4]
  %4 = cast(%3) {to=f32} : f32[4]
  output a = %1
  output b = %2
  output c = %4`, `
  input %h : f16[4]
  input %f : f32[4]
  %0 = cast(%h) {to=f32} : f32[4]
  %1 = cast(%h) {to=f64} : f64[4]
  %2 = cast(%f) {to=f16} : f16[4]
  %3 = cast(%2) {to=f32} : f32[4]
  output a = %1
  output b = %h
  output c = %3`},
		{"cast chains that change the cast rule stay", simplify, `
  input %u : u8[4]
  input %i : i32[4]
  %0 = cast(%u) {to=bool} : bool[4]
  %1 = cast(%0) {to=i32} : i32[4]
  %2 = cast(%i) {to=f64} : f64[4]
  %3 = cast(%2) {to=i8} : i8[4]
  output a = %1
  output b = %3`, ""},
		{"wrapping chains and exact int→float→int chains collapse", simplify, `
  input %i : i32[4]
  %0 = cast(%i) {to=u8} : u8[4]
  %1 = cast(%0) {to=i8} : i8[4]
  %2 = cast(%i) {to=f64} : f64[4]
  %3 = cast(%2) {to=i64} : i64[4]
  output c = %1
  output d = %3`, `
  input %i : i32[4]
  %0 = cast(%i) {to=u8} : u8[4]
  %1 = cast(%i) {to=i8} : i8[4]
  %2 = cast(%i) {to=f64} : f64[4]
  %3 = cast(%i) {to=i64} : i64[4]
  output c = %1
  output d = %3`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.pass(parse(t, tc.before))
			if err := ops.Verify(got); err != nil {
				t.Fatalf("after the pass: %v\n%s", err, got)
			}
			if tc.after == "" {
				tc.after = tc.before
			}
			want := parse(t, tc.after).String()
			if got.String() != want {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// lossless: every value of the first dtype is exactly a value of the second.
func TestLosslessTable(t *testing.T) {
	for _, tc := range []struct {
		from, to ir.DType
		want     bool
	}{
		{ir.F16, ir.F32, true}, {ir.BF16, ir.F32, true}, {ir.F32, ir.F64, true}, {ir.F32, ir.F16, false},
		{ir.F16, ir.BF16, false}, {ir.I8, ir.F16, true}, {ir.U8, ir.BF16, true}, {ir.I32, ir.F32, false},
		{ir.I32, ir.F64, true}, {ir.I64, ir.F64, false}, {ir.U8, ir.I8, false}, {ir.I8, ir.U8, false},
		{ir.U8, ir.I32, true}, {ir.Bool, ir.I8, true}, {ir.I32, ir.Bool, false}, {ir.F32, ir.I32, false},
		// bool keeps only x != 0: nothing but bool itself fits in it.
		{ir.U8, ir.Bool, false}, {ir.I8, ir.Bool, false}, {ir.I64, ir.Bool, false}, {ir.F16, ir.Bool, false},
		{ir.Bool, ir.U8, true}, {ir.Bool, ir.BF16, true}, {ir.Bool, ir.Bool, true},
		{ir.I8, ir.I64, true}, {ir.I64, ir.I32, false}, {ir.U8, ir.U8, true}, {ir.BF16, ir.F16, false}, {ir.F64, ir.F32, false},
	} {
		if got := lossless(tc.from, tc.to); got != tc.want {
			t.Errorf("lossless(%s, %s) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}

// castChainExact: cast(cast(x, mid), to) collapses to cast(x, to) only where the two agree for
// every x. The rows named after a bug are the audit's reproducers (issue 4).
func TestCastChainTable(t *testing.T) {
	for _, tc := range []struct {
		name          string
		from, mid, to ir.DType
		want          bool
	}{
		{"castbug: u8→bool→i32 normalizes to 0 or 1", ir.U8, ir.Bool, ir.I32, false},
		{"castbug2: i32→f64→i8 saturates where i32→i8 wraps", ir.I32, ir.F64, ir.I8, false},
		{"u8→f16→i8 saturates 200 to 127, u8→i8 wraps it to -56", ir.U8, ir.F16, ir.I8, false},
		{"i8→f32→i32: every i8 fits", ir.I8, ir.F32, ir.I32, true},
		{"i32→f64→i32 is x", ir.I32, ir.F64, ir.I32, true},
		{"i32→f64→f16 rounds the same exact value", ir.I32, ir.F64, ir.F16, true},
		{"i32→f32→f64 rounds to f32 first", ir.I32, ir.F32, ir.F64, false},
		{"f16→f32→i8 saturates the same value", ir.F16, ir.F32, ir.I8, true},
		{"f16→f32→bool: NaN stays NaN, so true", ir.F16, ir.F32, ir.Bool, true},
		{"f32→i32→i8 saturates to i32 first", ir.F32, ir.I32, ir.I8, false},
		{"f32→bool→f32 normalizes", ir.F32, ir.Bool, ir.F32, false},
		{"x→bool→bool is x→bool", ir.F32, ir.Bool, ir.Bool, true},
		{"i64→i32→u8 wraps modulo 2^32 then 2^8", ir.I64, ir.I32, ir.U8, true},
		{"i32→u8→i8 wraps modulo 2^8 twice", ir.I32, ir.U8, ir.I8, true},
		{"i8→u8→i32 loses the sign", ir.I8, ir.U8, ir.I32, false},
		{"u8→i32→i8 wraps once", ir.U8, ir.I32, ir.I8, true},
		{"bool→bf16→i8 is 0 or 1", ir.Bool, ir.BF16, ir.I8, true},
		{"i64→f64→i64 rounds large values", ir.I64, ir.F64, ir.I64, false},
		{"f32→f16→f32 rounds", ir.F32, ir.F16, ir.F32, false},
		{"bf16→f32→f16 rounds the same value once", ir.BF16, ir.F32, ir.F16, true},
	} {
		if got := castChainExact(tc.from, tc.mid, tc.to); got != tc.want {
			t.Errorf("%s: castChainExact(%s, %s, %s) = %v, want %v", tc.name, tc.from, tc.mid, tc.to, got, tc.want)
		}
	}
}

// Every dtype triple that castChainExact accepts gives the same results through the reference
// semantics as the direct cast, on values chosen to hit every edge: NaN, ±inf, -0, fractions,
// the ends of each integer range, values that round, saturate or wrap.
func TestCastChainExactIsSound(t *testing.T) {
	dtypes := []ir.DType{ir.F64, ir.F32, ir.F16, ir.BF16, ir.I64, ir.I32, ir.I8, ir.U8, ir.Bool}
	floats := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 0.5, -1.5, 1, 2, 127, 128, -128,
		-129, 200, 255, 256, 300, -300, 2049, 65504, 65520, 1e5, 1<<24 + 1, 1 << 31, -1<<31 - 1, 3e9, 1<<53 + 2, 1e19, -1e19,
		1e300, 5.960464477539063e-08, 3.4e38}
	ints := []int64{0, 1, -1, 2, 127, 128, -128, -129, 200, 255, 256, -300, 1<<24 + 1, 1<<31 - 1, -1 << 31, 1 << 31,
		1<<53 + 1, 1<<62 + 1, math.MaxInt64, math.MinInt64}
	cast := func(x *tensor.Tensor, to ir.DType) *tensor.Tensor {
		v := &ir.Value{Op: "cast", Attrs: ir.Attrs{"to": to}, Type: ir.T(to, x.Len())}
		r, err := ops.Eval(v, []*tensor.Tensor{x})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	accepted := 0
	for _, from := range dtypes {
		x := tensor.New(ir.T(from, len(floats)+len(ints)))
		if from.IsFloat() {
			for i, f := range floats {
				x.F[i] = tensor.RoundFloat(from, f)
			}
			for i, n := range ints {
				x.F[len(floats)+i] = tensor.RoundFloat(from, float64(n))
			}
		} else {
			for i, n := range ints {
				x.I[i] = tensor.WrapInt(from, n)
			}
		}
		for _, mid := range dtypes {
			for _, to := range dtypes {
				if !castChainExact(from, mid, to) {
					continue
				}
				accepted++
				want, got := cast(x, to), cast(cast(x, mid), to)
				for i := range x.Len() {
					w, g := want.At(i), got.At(i)
					if math.Float64bits(w) != math.Float64bits(g) && !(math.IsNaN(w) && math.IsNaN(g)) {
						t.Errorf("%s→%s→%s of %v: %v, direct %v", from, mid, to, x.At(i), g, w)
					}
				}
			}
		}
	}
	if accepted < 200 {
		t.Errorf("only %d of 729 chains collapse", accepted)
	}
}

func TestCanonicalizeNoChange(t *testing.T) {
	src := `
  input %x : f32[2,3]
  %0 = transpose(%x) {perm=[1,0]} : f32[3,2]
  %1 = exp(%0) : f32[3,2]
  output y = %1`
	for _, pass := range []func(*ir.Graph) *ir.Graph{deadCode, commonSubexpressions, foldConstants, simplify} {
		g := pass(parse(t, src))
		if got, want := g.String(), parse(t, src).String(); got != want {
			t.Errorf("a graph with nothing to do changed:\n%s", strings.TrimSpace(got))
		}
	}
}
