package compiler_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/tensor"
)

// foldGraphs fold their symbolic rows into static results the way a training step's gradients
// do: column reductions over the rows (bias gradients, a loss's batch sum) and products whose K
// is the rows (weight gradients Xᵀ·dY). static marks those whose static build at a run's sizes
// takes the same template, so the two agree bit for bit.
var foldGraphs = []struct {
	name, body string
	static     bool
}{
	{"bias gradient", "  dims { batch in [1,40] }\n  input %dy : f32[batch,37]\n" +
		"  %0 = reduce_sum(%dy) {axes=[0]} : f32[37]\n  output db = %0\n", true},
	{"batch sum of a loss", "  dims { batch in [1,40] }\n  input %l : f32[batch]\n" +
		"  %0 = reduce_sum(%l) {axes=[0]} : f32[]\n  output loss = %0\n", false},
	{"sum over every dim, kept", "  dims { batch in [0,16] }\n  input %x : f32[batch,3]\n" +
		"  %0 = reduce_sum(%x) {axes=[0,1], keepdims=true} : f32[1,1]\n  output s = %0\n", false},
	{"two dims folded", "  dims { b in [1,4], t in [1,9] }\n  input %x : f32[b,t,5]\n" +
		"  %0 = reduce_sum(%x) {axes=[0,1]} : f32[5]\n  %1 = mul(%x, %x) : f32[b,t,5]\n  %2 = reduce_max(%1) {axes=[0,1]} : f32[5]\n" +
		"  output s = %0\n  output m = %2\n", true},
	{"max over the batch spread back", "  dims { batch in [1,16] }\n  input %x : f32[batch,2]\n" +
		"  %0 = reduce_max(%x) {axes=[0]} : f32[2]\n  %1 = broadcast_in_dim(%0) {shape=[16,2], dims=[1]} : f32[batch,2]\n" +
		"  %2 = sub(%x, %1) : f32[batch,2]\n  output y = %2\n  output m = %0\n", true},
	// The DSL's mean over a symbolic dim: the count is a sum of ones, which the passes must not
	// fold at the bound.
	{"mean over the batch", "  dims { batch in [1,16] }\n  input %x : f32[batch,3]\n" +
		"  %c = constant() {dtype=f32, shape=[], value=[1]} : f32[]\n  %1 = broadcast_in_dim(%c) {shape=[16,3], dims=[]} : f32[batch,3]\n" +
		"  %2 = reduce_sum(%1) {axes=[0]} : f32[3]\n  %3 = reduce_sum(%x) {axes=[0]} : f32[3]\n  %4 = div(%3, %2) : f32[3]\n  output m = %4\n", true},
	{"weight gradient (FFMA)", "  dims { batch in [1,150] }\n  input %x : f32[batch,12]\n  input %dy : f32[batch,20]\n" +
		"  %0 = dot_general(%x, %dy) {lhs_contract=[0], rhs_contract=[0]} : f32[12,20]\n" +
		"  %c = constant() {dtype=f32, shape=[], value=[0.5]} : f32[]\n  %1 = broadcast_in_dim(%c) {shape=[12,20], dims=[]} : f32[12,20]\n" +
		"  %2 = mul(%0, %1) : f32[12,20]\n  output dw = %2\n", true},
	{"weight gradient of few rows (the GEMV refuses, FFMA)", "  dims { batch in [0,70] }\n  input %x : f32[batch,3]\n  input %dy : f32[batch,9]\n" +
		"  %0 = dot_general(%x, %dy) {lhs_contract=[0], rhs_contract=[0]} : f32[3,9]\n  output dw = %0\n", false},
	{"weight gradient (tensor cores)", "  dims { batch in [1,40] }\n  input %x : f16[batch,16]\n  input %dy : f16[batch,24]\n" +
		"  %0 = dot_general(%x, %dy) {lhs_contract=[0], rhs_contract=[0]} : f16[16,24]\n  output dw = %0\n", true},
	{"weight gradient over two dims", "  dims { b in [1,3], t in [1,7] }\n  input %x : f32[b,t,10]\n  input %dy : f32[b,t,11]\n" +
		"  %0 = dot_general(%x, %dy) {lhs_contract=[0,1], rhs_contract=[0,1]} : f32[10,11]\n  output dw = %0\n", true},
}

// One build of each graph runs on the memchecked simulator at the dims' bounds, 1 and primes
// (smaller sizes first, so a read of a row no run wrote fails), within tolerance of the reference
// interpreter; where the static build at those sizes takes the same template, equal to it bit for
// bit (the fold takes the run's rows in the static kernel's order).
func TestSymbolicFolds(t *testing.T) {
	for _, tc := range slices.Concat(foldGraphs, scatterFolds, convFolds, innerReductions) { // symfold_scatter_test.go, symconv_test.go, symrows_inner_test.go
		t.Run(tc.name, func(t *testing.T) {
			g, err := ir.Parse("s.gir", []byte("graph s {\n"+tc.body+"}\n"))
			if err != nil {
				t.Fatal(err)
			}
			checkRows(t, g)
			if tc.static {
				checkStaticBits(t, g)
			}
		})
	}
}

// checkStaticBits builds g once and compares its outputs at each run's sizes with the static
// build's at those sizes, bit for bit.
func checkStaticBits(t *testing.T, g *ir.Graph) {
	t.Helper()
	p := load(t, g)
	for i := range 5 {
		env := map[string]int64{}
		for _, d := range g.Dims {
			s := sizesToRun(d)
			slices.Sort(s)
			env[d.Name] = int64(s[(i+len(d.Name))%len(s)])
		}
		st, err := ops.Instantiate(g, env)
		if err != nil {
			t.Fatal(err)
		}
		inputs, _, err := tensor.SeededValues(st, uint64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Run(inputs)
		if err != nil {
			t.Fatalf("sizes %v: %v", env, err)
		}
		static := runStatic(t, g, env, inputs)
		for name, o := range got.Outputs {
			if string(o.Bytes()) != string(static[name].Bytes()) {
				t.Errorf("sizes %v: output %s differs from the static build's", env, name)
			}
		}
	}
}

// A fold the templates cannot take is refused naming the kernel and the value: a reduction over
// the first symbolic dim and a trailing axis with a symbolic one kept between (around static
// kept ones it folds: symfold_scatter_test.go), or over a symbolic dim that does not lead.
func TestSymbolicFoldsRefused(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"reduced axes around a kept symbolic one", "  dims { b in [1,4], t in [1,9] }\n  input %x : f32[b,t,5]\n" +
			"  %0 = reduce_sum(%x) {axes=[0,2]} : f32[t]\n  output y = %0\n",
			"input %x : f32[b,t,5] has b*t rows, %0 = reduce_sum(%x) {axes=[0,2]} : f32[t] has t"},
		{"the second symbolic dim only", "  dims { b in [1,4], t in [1,9] }\n  input %x : f32[b,t,5]\n" +
			"  %0 = reduce_sum(%x) {axes=[1]} : f32[b,5]\n  output y = %0\n",
			"input %x : f32[b,t,5] has b*t rows, %0 = reduce_sum(%x) {axes=[1]} : f32[b,5] has b"},
		{"a static operand's leading axis folded beside the rows", "  dims { batch in [1,8] }\n  input %x : f32[batch,3]\n  input %q : f32[8,3]\n" +
			"  %0 = reduce_sum(%q) {axes=[0]} : f32[3]\n  %1 = broadcast_in_dim(%0) {shape=[8,3], dims=[1]} : f32[batch,3]\n  %2 = mul(%x, %1) : f32[batch,3]\n  output y = %2\n",
			"%0 = reduce_sum(%q) {axes=[0]} : f32[3] folds the leading axis of a static operand in a kernel over symbolic rows"},
		{"a fold spread over a static operand's rows", "  dims { batch in [1,8] }\n  input %x : f32[batch,3]\n  param %p : f32[8,3] {init=\"ones\"}\n" +
			"  %0 = reduce_sum(%x) {axes=[0]} : f32[3]\n  %1 = broadcast_in_dim(%0) {shape=[8,3], dims=[1]} : f32[8,3]\n  %2 = add(%p, %1) : f32[8,3]\n  output y = %2\n",
			"output y f32[8,3] has static sizes the shape of a folded operand at the bound; a fold spreads its result back along the run's rows only"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkRefused(t, "graph s {\n"+tc.body+"}\n", tc.want) })
	}
}

// checkRefused compiles the graph s of src and wants one error with want in it.
func checkRefused(t *testing.T, src, want string) {
	t.Helper()
	g, err := ir.Parse("s.gir", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	_, err = compiler.Compile(g, compiler.Options{})
	if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "graph s has symbolic dims: ") {
		t.Errorf("Compile = %v, want %q", err, want)
	}
}
