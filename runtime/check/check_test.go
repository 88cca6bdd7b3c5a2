package check_test

import (
	"github.com/gcomp/gcomp/internal/paramcheck"
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/examples"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/tensor"
)

// Values returns seeded weights and inputs for g, as `gcomp check` makes them.
func values(t *testing.T, g *ir.Graph, seed uint64) (inputs, params map[string]*tensor.Tensor) {
	t.Helper()
	inputs, params, err := tensor.SeededValues(g, seed)
	if err != nil {
		t.Fatal(err)
	}
	paramcheck.NonZero(t, params)
	return inputs, params
}

// Every example compiles, runs on the simulator with all checks on, and matches the reference.
func TestExamples(t *testing.T) {
	for _, m := range examples.Tutorials {
		t.Run(m.Name, func(t *testing.T) {
			if m.Slow && testing.Short() {
				t.Skip("-short")
			}
			g, err := frontend.Build(m.Name, m.Model)
			if err != nil {
				t.Fatal(err)
			}
			// The examples' own initialization zeroes their biases (and batch norm's running
			// means): drawn nonzero, a kernel that drops one fails.
			paramcheck.Randomize(g, 0.1)
			res, err := compiler.Compile(g, compiler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			inputs, params := values(t, g, 1)
			rep, err := check.Run(res.Artifact, inputs, params)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range rep.Outputs {
				if !o.Pass() {
					t.Errorf("%s: %d elements outside tolerance (max abs %g, max rel %g); first %s", o.Name, o.Bad, o.MaxAbs, o.MaxRel, o.First)
				}
			}
			if len(rep.Kernels) != len(res.Artifact.Plan.Kernels) {
				t.Errorf("%d kernel runs, plan has %d kernels", len(rep.Kernels), len(res.Artifact.Plan.Kernels))
			}
		})
	}
}

const linGraph = `graph lin {
  input %x : f32[2,3]
  param %w : f32[3] {init="normal"}
  %0 = broadcast_in_dim(%w) {dims=[1], shape=[2,3]} : f32[2,3]
  %1 = mul(%x, %0) : f32[2,3]
  %2 = relu(%1) : f32[2,3]
  output y = %2
}
`

// A wrong kernel fails the comparison, and a kernel that stores out of bounds fails the run:
// the check can fail.
func TestCheckCatchesWrongKernels(t *testing.T) {
	g, err := ir.Parse("lin.gir", []byte(linGraph))
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	inputs, params := values(t, g, 2)
	art := res.Artifact
	mutate := func(old, new string) *artifact.Artifact {
		text := string(art.PTX)
		if !strings.Contains(text, old) {
			t.Fatalf("the module has no %q:\n%s", old, text)
		}
		return &artifact.Artifact{PTX: []byte(strings.Replace(text, old, new, 1)), Plan: art.Plan}
	}
	rep, err := check.Run(art, inputs, params)
	if err != nil || !rep.Pass() {
		t.Fatalf("the compiled module fails: %v %+v", err, rep)
	}
	rep, err = check.Run(mutate("mul.rn.f32", "add.rn.f32"), inputs, params)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pass() || rep.Outputs[0].Bad == 0 || !strings.HasPrefix(rep.Outputs[0].First, "y[") {
		t.Errorf("add instead of mul passed: %+v", rep.Outputs)
	}
	_, err = check.Run(mutate("st.global.f32 [%rd8]", "st.global.f32 [%rd8+4096]"), inputs, params)
	if err == nil || !strings.Contains(err.Error(), "memcheck") || !strings.Contains(err.Error(), "output y") {
		t.Errorf("out-of-bounds store: err = %v, want a memcheck error naming the output buffer", err)
	}
}

func TestCompare(t *testing.T) {
	f32 := ir.T(ir.F32, 4)
	tests := []struct {
		name      string
		got, want []float64
		tf32      bool
		bad       int
	}{
		{"equal", []float64{1, 2, 3, 4}, []float64{1, 2, 3, 4}, false, 0},
		{"within 1e-5", []float64{1 + 5e-6, 2, 3, 4}, []float64{1, 2, 3, 4}, false, 0},
		{"outside 1e-5", []float64{1 + 1e-4, 2, 3, 4}, []float64{1, 2, 3, 4}, false, 1},
		{"tf32 loosens", []float64{1 + 1e-3, 2, 3, 4}, []float64{1, 2, 3, 4}, true, 0},
		{"near zero judged by the tensor's scale", []float64{1e-6, 2, 3, 4}, []float64{0, 2, 3, 4}, false, 0},
		{"NaN never passes", []float64{math.NaN(), 2, 3, 4}, []float64{1, 2, 3, 4}, false, 1},
		{"inf never passes", []float64{math.Inf(1), 2, 3, 4}, []float64{1, 2, 3, 4}, true, 1},
		{"NaN against NaN agrees", []float64{math.NaN(), 2, 3, 4}, []float64{math.NaN(), 2, 3, 4}, false, 0},
		{"a number against NaN", []float64{0, 2, 3, 4}, []float64{math.NaN(), 2, 3, 4}, false, 1},
		{"-0 against +0", []float64{math.Copysign(0, -1), 2, 3, 4}, []float64{0, 2, 3, 4}, false, 1},
		{"+0 against -0", []float64{0, 2, 3, 4}, []float64{math.Copysign(0, -1), 2, 3, 4}, false, 1},
		{"-0 against -0", []float64{math.Copysign(0, -1), 2, 3, 4}, []float64{math.Copysign(0, -1), 2, 3, 4}, false, 0},
		{"a tiny negative against +0 is within the floor", []float64{-1e-9, 2, 3, 4}, []float64{0, 2, 3, 4}, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := check.Compare("y", tensor.FromFloats(f32, tc.got), tensor.FromFloats(f32, tc.want), tc.tf32)
			if o.Bad != tc.bad {
				t.Errorf("bad = %d, want %d (%+v)", o.Bad, tc.bad, o)
			}
		})
	}
	// The tolerance follows the precision the value was computed in: an f16 result in an f64
	// output passes at f16's tolerance, not at f64's.
	f64 := ir.T(ir.F64, 1)
	near := tensor.FromFloats(f64, []float64{1.001})
	one := tensor.FromFloats(f64, []float64{1})
	if o := check.Compare("y", near, one, false); o.Bad != 1 {
		t.Errorf("f64 at f64's tolerance: %+v", o)
	}
	if o := check.CompareIn("y", near, one, ir.F16, false); o.Bad != 0 || o.Rel != 2e-2 {
		t.Errorf("f64 computed in f16: %+v", o)
	}
	i32 := ir.T(ir.I32, 2)
	if o := check.Compare("n", tensor.FromFloats(i32, []float64{1, 2}), tensor.FromFloats(i32, []float64{1, 3}), false); o.Bad != 1 {
		t.Errorf("integers must match exactly: %+v", o)
	}
	// i64 values that one float64 holds for both still differ.
	g, w := tensor.New(ir.T(ir.I64, 1)), tensor.New(ir.T(ir.I64, 1))
	g.I[0], w.I[0] = math.MinInt64+1, math.MinInt64
	if o := check.Compare("n", g, w, false); o.Bad != 1 || o.First != "n[0] = -9223372036854775807, want -9223372036854775808" {
		t.Errorf("i64 beyond 2^53 must match exactly: %+v", o)
	}
	// Bounded integers beyond 2^53 still compare as integers where the bound is 0; a bound of 1 or
	// more (an integer from a float that may round either way) lets them differ by it.
	ib := tolerance.Bound{Val: w, Err: []float64{0}}
	if o := check.CompareBound("n", g, ib, ir.I64, false); o.Bad != 1 {
		t.Errorf("bounded i64 beyond 2^53 must match exactly: %+v", o)
	}
	ib.Err[0] = 1
	if o := check.CompareBound("n", g, ib, ir.I64, false); o.Bad != 0 {
		t.Errorf("an i64 within its bound of 1: %+v", o)
	}
}

// The first bad element is named as in Python, y[1,2] (a scalar by its name alone), and the table
// prints the absolute floor beside the relative tolerance, and the plan's kernel notes.
func TestReportWording(t *testing.T) {
	y := tensor.FromFloats(ir.T(ir.F32, 2, 3), []float64{1, 2, 3, 4, 5, 6})
	bad := tensor.FromFloats(ir.T(ir.F32, 2, 3), []float64{1, 2, 3, 4, 5, 7})
	o := check.Compare("y", bad, y, false)
	if o.First != "y[1,2] = 7, want 6" {
		t.Errorf("first = %q", o.First)
	}
	s := tensor.FromFloats(ir.T(ir.F32), []float64{2})
	if o := check.Compare("s", tensor.FromFloats(ir.T(ir.F32), []float64{3}), s, false); o.First != "s = 3, want 2" {
		t.Errorf("scalar first = %q", o.First)
	}
	// RMS of 1..6 is √(91/6).
	if want := 1e-5 * math.Sqrt(91.0/6); math.Abs(o.Abs-want) > 1e-18 {
		t.Errorf("floor %g, want 1e-5·RMS = %g", o.Abs, want)
	}
	rep := &check.Report{Outputs: []check.Output{o}, Notes: []string{"k0_conv: tf32 fallback to FFMA: conv2d"}}
	var b strings.Builder
	rep.WriteTable(&b)
	for _, want := range []string{"abs floor", "3.89e-05", "RMS(want)", "note: k0_conv: tf32 fallback to FFMA: conv2d"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, b.String())
		}
	}
}

// With the graph each output element has its own bound: the table prints the largest and says
// how many elements the arithmetic does not determine, and how many of those are outside the
// dtype's tolerance (a hint: they pass).
func TestReportWordingBounded(t *testing.T) {
	y := tensor.FromFloats(ir.T(ir.F32, 2, 3), []float64{1, 2, 3, 4, 5, 6})
	bad := tensor.FromFloats(ir.T(ir.F32, 2, 3), []float64{1, 2, 3, 4, 5, 7})
	var b strings.Builder
	bounds := tolerance.Bound{Val: y, Err: []float64{0, 0, 1e-4, 0, math.Inf(1), 0.5}}
	o := check.CompareBound("y", bad, bounds, ir.F32, false)
	if o.Bad != 1 || o.Abs != 0.5 || o.Free != 1 || o.Worst != 2 {
		t.Errorf("bounded: %+v", o)
	}
	ok := check.CompareBound("y", tensor.FromFloats(ir.T(ir.F32, 2, 3), []float64{1, 2, 3, 4, -50, 6.5}), bounds, ir.F32, false)
	b.Reset()
	(&check.Report{Outputs: []check.Output{ok}}).WriteTable(&b)
	near := check.CompareBound("y", tensor.FromFloats(ir.T(ir.F32, 2, 3), []float64{1, 2, 3, 4, 5.00001, 6.5}), bounds, ir.F32, false)
	var nb strings.Builder
	(&check.Report{Outputs: []check.Output{near}}).WriteTable(&nb)
	if near.FreeOff != 0 || !strings.Contains(nb.String(), "; all within f32's tolerance)") {
		t.Errorf("5.00001 against 5 is within f32's tolerance: FreeOff %d\n%s", near.FreeOff, nb.String())
	}
	if ok.FreeOff != 1 {
		t.Errorf("the undetermined element -50 (want 5) is outside f32's tolerance: FreeOff %d, want 1", ok.FreeOff)
	}
	for _, want := range []string{"max bound", "0.5", "its own error bound", "ok (1 elements not determined by the arithmetic; 1 of them outside f32's tolerance)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the bounded table lacks %q:\n%s", want, b.String())
		}
	}
}
