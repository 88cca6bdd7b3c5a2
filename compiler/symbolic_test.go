package compiler_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// symbolicGraphs are elementwise graphs with dims: one build each must run at any size in range.
var symbolicGraphs = []struct{ name, gir string }{
	{"neg", "graph s {\n  dims { batch in [1,16] }\n  input %x : f32[batch,2]\n  %0 = neg(%x) : f32[batch,2]\n  output y = %0\n}\n"},
	{"two inputs, two outputs", "graph s {\n  dims { n in [2,37] }\n  input %x : f32[n,5]\n  input %y : f32[n,5]\n" +
		"  %0 = mul(%x, %y) : f32[n,5]\n  %1 = exp(%0) : f32[n,5]\n  %2 = sub(%1, %x) : f32[n,5]\n  output a = %2\n  output b = %0\n}\n"},
	{"f16 vectors and a cast", "graph s {\n  dims { seq in [1,100] }\n  input %x : f16[seq,3]\n  %0 = tanh(%x) : f16[seq,3]\n" +
		"  %1 = cast(%0) {to=f32} : f32[seq,3]\n  output y = %1\n}\n"},
	{"two dims, a scalar constant", "graph s {\n  dims { b in [1,3], t in [1,33] }\n  input %x : f32[b,t,4]\n  %c = constant() {dtype=f32, shape=[], value=[0.5]} : f32[]\n" +
		"  %0 = broadcast_in_dim(%c) {shape=[3,33,4], dims=[]} : f32[b,t,4]\n  %1 = mul(%x, %0) : f32[b,t,4]\n  output y = %1\n}\n"},
	{"i32", "graph s {\n  dims { n in [0,50] }\n  input %x : i32[n]\n  input %y : i32[n]\n  %0 = max(%x, %y) : i32[n]\n  output y = %0\n}\n"},
}

// sizesToRun are the sizes each dim takes in turn: its bounds, 1 and a prime, where in range.
func sizesToRun(d ir.Dim) []int {
	var out []int
	for _, n := range []int{d.Lo, d.Hi, 1, 13, 31} {
		if n >= d.Lo && n <= d.Hi {
			out = append(out, n)
		}
	}
	return out
}

// One build of each graph runs at every size to run on the memchecked simulator, equal to the
// reference interpreter at those sizes bit for bit.
func TestSymbolicRuns(t *testing.T) {
	for _, tc := range symbolicGraphs {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ir.Parse("s.gir", []byte(tc.gir))
			if err != nil {
				t.Fatal(err)
			}
			checkSymbolic(t, g)
		})
	}
}

func checkSymbolic(t *testing.T, g *ir.Graph) {
	t.Helper()
	p := load(t, g)
	plan := p.Plan()
	if plan.Version != 4 || len(plan.Dims) != len(g.Dims) {
		t.Fatalf("plan version %d, dims %v", plan.Version, plan.Dims)
	}
	bound := map[string]int{}
	for _, k := range plan.Kernels {
		bound[k.Name] = k.Grid[0]
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for run := 0; run < 5; run++ {
		env := map[string]int{}
		for _, d := range g.Dims {
			s := sizesToRun(d)
			env[d.Name] = s[(run+len(d.Name))%len(s)]
		}
		inputs := map[string]*tensor.Tensor{}
		for _, v := range g.Inputs() {
			shape := make([]int, len(v.Type.Sym))
			for i, e := range v.Type.Sym {
				n, err := e.Eval(toEnv(env))
				if err != nil {
					t.Fatal(err)
				}
				shape[i] = int(n)
			}
			x := tensor.New(ir.T(v.Type.DType, shape...))
			vals := make([]float64, x.Type.Shape.NumElements())
			for i := range vals {
				vals[i] = float64(rng.IntN(200)-100) / 16
			}
			inputs[v.Name] = tensor.FromFloats(x.Type, vals)
		}
		want, err := ref.Run(g, inputs, nil)
		if err != nil {
			t.Fatalf("sizes %v: reference: %v", env, err)
		}
		got, err := p.Run(inputs)
		if err != nil {
			t.Fatalf("sizes %v: %v", env, err)
		}
		// The static build of the graph at these sizes runs the same per-element code.
		static := runStatic(t, g, toEnv(env), inputs)
		compareOutputs(t, env, want, got.Outputs, 1)
		for name, o := range got.Outputs {
			if string(o.Bytes()) != string(static[name].Bytes()) {
				t.Errorf("sizes %v: output %s differs from the static build's", env, name)
			}
		}
		for _, k := range got.Kernels {
			if k.Grid[0] < 1 || k.Grid[0] > bound[k.Name] {
				t.Errorf("sizes %v: kernel %s grid %v, at the bound %d", env, k.Name, k.Grid, bound[k.Name])
			}
		}
	}
}

// runStatic compiles g instantiated at env and runs it on inputs.
func runStatic(t *testing.T, g *ir.Graph, env map[string]int64, inputs map[string]*tensor.Tensor) map[string]*tensor.Tensor {
	t.Helper()
	sg, err := ops.Instantiate(g, env)
	if err != nil {
		t.Fatal(err)
	}
	out, err := load(t, sg).Run(inputs)
	if err != nil {
		t.Fatalf("static build at %v: %v", env, err)
	}
	return out.Outputs
}

// load compiles g (no params) and loads it on a memchecked simulator.
func load(t *testing.T, g *ir.Graph) *executor.Program {
	t.Helper()
	res, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := executor.Load(simdev.New(simdev.Options{}), res.Artifact)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if err := p.SetParams(map[string]*tensor.Tensor{}); err != nil {
		t.Fatal(err)
	}
	return p
}

func toEnv(m map[string]int) map[string]int64 {
	env := map[string]int64{}
	for k, v := range m {
		env[k] = int64(v)
	}
	return env
}

// Random elementwise chains over inputs with dims: one build, runs at several sizes.
func TestSymbolicRandomElementwise(t *testing.T) {
	unary := []string{"neg", "abs", "exp", "tanh", "relu", "sqrt"}
	binary := []string{"add", "sub", "mul", "max", "min"}
	rng := rand.New(rand.NewPCG(27, 1))
	for seed := range 8 {
		var sb strings.Builder
		lo, hi := 1+rng.IntN(3), 5+rng.IntN(60)
		inner := 1 + rng.IntN(9)
		typ := fmt.Sprintf("f32[n,%d]", inner)
		fmt.Fprintf(&sb, "graph r%d {\n  dims { n in [%d,%d] }\n  input %%a : %s\n  input %%b : %s\n", seed, lo, hi, typ, typ)
		vals := []string{"%a", "%b"}
		for i := range 2 + rng.IntN(6) {
			if rng.IntN(2) == 0 {
				fmt.Fprintf(&sb, "  %%%d = %s(%s) : %s\n", i, unary[rng.IntN(len(unary))], vals[rng.IntN(len(vals))], typ)
			} else {
				fmt.Fprintf(&sb, "  %%%d = %s(%s, %s) : %s\n", i, binary[rng.IntN(len(binary))], vals[rng.IntN(len(vals))], vals[rng.IntN(len(vals))], typ)
			}
			vals = append(vals, fmt.Sprintf("%%%d", i))
		}
		fmt.Fprintf(&sb, "  output y = %s\n}\n", vals[len(vals)-1])
		checkGenerated(t, fmt.Sprint(seed), sb.String(), checkSymbolic)
	}
}

// Sizes out of range, or disagreeing between inputs, are one error naming the input, the dim
// and the range; the program runs again afterwards.
func TestSymbolicBadSizes(t *testing.T) {
	g, err := ir.Parse("s.gir", []byte(symbolicGraphs[1].gir))
	if err != nil {
		t.Fatal(err)
	}
	p := load(t, g)
	f := func(n, k int) *tensor.Tensor { return tensor.New(ir.T(ir.F32, n, k)) }
	for _, tc := range []struct {
		x, y *tensor.Tensor
		want string
	}{
		{f(38, 5), f(38, 5), "input x: dim 0 (n) is 38, outside n's range [2,37]"},
		{f(1, 5), f(1, 5), "input x: dim 0 (n) is 1, outside n's range [2,37]"},
		{f(4, 5), f(5, 5), "inputs disagree on n: input x's dim 0 is 4, input y's dim 0 is 5"},
		{f(4, 6), f(4, 6), "input x: dim 1 is 6, want 5"},
		{tensor.New(ir.T(ir.F16, 4, 5)), f(4, 5), "input x is f16[4,5], the model wants f32[4,5]"},
	} {
		_, err := p.Run(map[string]*tensor.Tensor{"x": tc.x, "y": tc.y})
		if err == nil || err.Error() != tc.want {
			t.Errorf("Run(x %s, y %s) = %v, want %q", tc.x.Type, tc.y.Type, err, tc.want)
		}
	}
	if _, err := p.Run(map[string]*tensor.Tensor{"x": f(3, 5), "y": f(3, 5)}); err != nil {
		t.Errorf("a good run after the bad ones: %v", err)
	}
	// Prefetched inputs and memory images would fix the sizes at the bound: refused.
	if _, err := p.Stage(map[string]*tensor.Tensor{"x": f(3, 5), "y": f(3, 5)}); err == nil || !strings.Contains(err.Error(), "the model has symbolic dims") {
		t.Errorf("Stage = %v", err)
	}
	img := executor.Image{Type: ir.T(ir.F32, 3, 5), Data: make([]byte, 60)}
	if _, err := p.RunImages(context.Background(), map[string]executor.Image{"x": img, "y": img}, nil); err == nil || !strings.Contains(err.Error(), "the model has symbolic dims") {
		t.Errorf("RunImages = %v", err)
	}
}
