package compiler_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/codegen/backend"
	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/paramcheck"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// twoDims is a graph over two dims.
const twoDims = "graph s {\n  dims { b in [1,3], t in [2,33] }\n  input %x : f32[b,t,4]\n" +
	"  %0 = exp(%x) : f32[b,t,4]\n  %1 = reduce_sum(%0) {axes=[2]} : f32[b,t]\n  output y = %1\n}\n"

// twoDimsSplits are three splits of twoDims' ranges: six variants.
var twoDimsSplits = map[string][]int{"b": {1}, "t": {16, 5}}

// specModels are graphs with dims built with specializations: the splits, and the ranges of the
// variants the plan must carry (the bound's own last).
var specModels = []struct {
	name   string
	build  func(*frontend.Builder)
	gir    string
	splits map[string][]int
	ranges []string
}{
	{name: "mlp, batch split at 4", build: func(b *frontend.Builder) { mlp(b, ir.F32, 1, 8, 64) },
		splits: map[string][]int{"batch": {4}}, ranges: []string{"batch in [1,4]", "batch in [5,8]"}},
	{name: "a bind-time kernel", build: func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, b.Dim("batch", 1, 8), 64)
		w := b.Param("w", ir.T(ir.F32, 64, 64), frontend.Uniform(-0.2, 0.2))
		b.Output("y", frontend.Linear(frontend.Linear(x, w.Tanh(), nil).Relu(), w.Tanh(), nil))
	}, splits: map[string][]int{"batch": {4}}, ranges: []string{"batch in [1,4]", "batch in [5,8]"}},
	{name: "a dim from 0", gir: "graph s {\n  dims { n in [0,50] }\n  input %x : i32[n]\n  input %y : i32[n]\n" +
		"  %0 = max(%x, %y) : i32[n]\n  output y = %0\n}\n",
		splits: map[string][]int{"n": {10}}, ranges: []string{"n in [0,10]", "n in [11,50]"}},
	{name: "two dims, three splits", gir: twoDims, splits: twoDimsSplits,
		ranges: []string{"b in [1,1], t in [2,5]", "b in [1,1], t in [6,16]", "b in [1,1], t in [17,33]",
			"b in [2,3], t in [2,5]", "b in [2,3], t in [6,16]", "b in [2,3], t in [17,33]"}},
}

// A build with specializations carries one program per range, and each run takes the one whose
// ranges hold its sizes: on the memchecked simulator, equal to the reference at each size, in
// increasing order and back down (so a run reads nothing another variant left in the arena).
func TestSpecializeRuns(t *testing.T) {
	for _, tc := range specModels {
		t.Run(tc.name, func(t *testing.T) {
			checkSpecialized(t, specGraph(t, tc.build, tc.gir), compiler.Options{Specialize: tc.splits}, tc.ranges)
		})
	}
}

// The variants of a build with the NVVM producer (libNVVM) go into its one module alike.
func TestSpecializeNVVM(t *testing.T) {
	lib := libnvvm.Require(t)
	nv, err := backend.New("nvvm", lib.Path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range specModels {
		t.Run(tc.name, func(t *testing.T) {
			checkSpecialized(t, specGraph(t, tc.build, tc.gir), compiler.Options{Specialize: tc.splits, Producer: nv}, tc.ranges)
		})
	}
}

// checkSpecialized builds g with opt's specializations, checks the plan's variants (ranges,
// entries in the module) and runs it at sizes up and down through the ranges.
func checkSpecialized(t *testing.T, g *ir.Graph, opt compiler.Options, ranges []string) {
	t.Helper()
	res, err := compiler.Compile(g, opt)
	if err != nil {
		t.Fatal(err)
	}
	plan := res.Artifact.Plan
	var got []string
	for _, rs := range plan.VariantRanges() {
		got = append(got, artifact.RangesString(rs))
	}
	if plan.Version != artifact.VariantsVersion || strings.Join(got, "; ") != strings.Join(ranges, "; ") {
		t.Fatalf("plan version %d, variants %q; want %d, %q", plan.Version, got, artifact.VariantsVersion, ranges)
	}
	// Every variant's entries are in the one module; those of the lowered bounds are new.
	for i, v := range plan.Variants {
		fresh := 0
		for _, k := range v.Kernels {
			if !bytes.Contains(res.Artifact.PTX, []byte(".entry "+k.Entry+"(")) {
				t.Errorf("variant %d: kernel %s runs entry %s, which the module lacks", i, k.Name, k.Entry)
			}
			if strings.HasPrefix(k.Entry, "v") {
				fresh++
			}
			// A static kernel (the weight's tanh, at bind time) is the same code in every
			// variant: one entry of the module.
			if k.BindTime && strings.HasPrefix(k.Entry, "v") {
				t.Errorf("variant %d: bind-time kernel %s has an entry of its own, %s", i, k.Name, k.Entry)
			}
		}
		if fresh == 0 {
			t.Errorf("variant %d runs only the bound's entries", i)
		}
	}
	var envs []map[string]int64
	for _, n := range []int64{1, 3, 4, 5, 8, 3, 1} {
		env := map[string]int64{}
		for _, d := range g.Dims {
			env[d.Name] = min(max(n, int64(d.Lo)), int64(d.Hi))
			switch d.Name {
			case "t":
				env[d.Name] = min(max(4*n+1, int64(d.Lo)), int64(d.Hi))
			case "n": // 0 to 42
				env[d.Name] = 6 * (n - 1)
			}
		}
		envs = append(envs, env)
	}
	seen, last := map[string]bool{}, ""
	p, err := executor.Load(simdev.New(simdev.Options{}), res.Artifact)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	params := boundParams(t, g)
	if err := p.SetParams(params); err != nil {
		t.Fatal(err)
	}
	for _, env := range envs {
		st, err := ops.Instantiate(g, env)
		if err != nil {
			t.Fatal(err)
		}
		inputs, _, err := tensor.SeededValues(st, uint64(env[g.Dims[0].Name]))
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Run(st, inputs, params)
		if err != nil {
			t.Fatalf("sizes %v: reference: %v", env, err)
		}
		r, err := p.Run(inputs)
		if err != nil {
			t.Fatalf("sizes %v: %v", env, err)
		}
		compareOutputs(t, env, want, r.Outputs, 64)
		variant := ranges[plan.ChooseVariant(env)]
		if p.Variant() != variant {
			t.Errorf("sizes %v ran variant %q, want %q", env, p.Variant(), variant)
		}
		// The bind-time kernels run again when the run switches variants: the arena held
		// the other variant's outputs.
		launches := 0
		for _, k := range p.Plan().Kernels {
			if !k.BindTime || variant != last {
				launches++
			}
		}
		if len(r.Kernels) != launches {
			t.Errorf("sizes %v: %d launches, want %d (the variant has %d kernels)", env, len(r.Kernels), launches, len(p.Plan().Kernels))
		}
		seen[variant], last = true, variant
	}
	if len(seen) < 2 {
		t.Errorf("the runs took only variants %v", seen)
	}

}

func specGraph(t *testing.T, build func(*frontend.Builder), gir string) *ir.Graph {
	t.Helper()
	var g *ir.Graph
	var err error
	if build != nil {
		g, err = frontend.Build("m", build)
	} else {
		g, err = ir.Parse("s.gir", []byte(gir))
	}
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// boundParams are seeded parameters of g (static: the same at any size).
func boundParams(t *testing.T, g *ir.Graph) map[string]*tensor.Tensor {
	t.Helper()
	env := map[string]int64{}
	for _, d := range g.Dims {
		env[d.Name] = int64(d.Hi)
	}
	bg, err := ops.Instantiate(g, env)
	if err != nil {
		t.Fatal(err)
	}
	_, params, err := tensor.SeededValues(bg, 7)
	if err != nil {
		t.Fatal(err)
	}
	paramcheck.NonZero(t, params)
	return params
}

// Two builds with the same specializations are byte-identical, module and plan.
func TestSpecializeDeterministic(t *testing.T) {
	g := specGraph(t, nil, twoDims)
	var ptx, plan []byte
	for i := range 2 {
		res, err := compiler.Compile(g, compiler.Options{Specialize: twoDimsSplits})
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && (!bytes.Equal(ptx, res.Artifact.PTX) || !bytes.Equal(plan, res.Artifact.Plan.JSON())) {
			t.Error("two builds differ")
		}
		ptx, plan = res.Artifact.PTX, res.Artifact.Plan.JSON()
	}
}

// A split of an unknown dim, a bound outside the range (or at its upper end, which leaves one
// side empty), and a static program are one error each.
func TestSpecializeBad(t *testing.T) {
	sym := twoDims
	static := "graph s {\n  input %x : f32[4]\n  %0 = neg(%x) : f32[4]\n  output y = %0\n}\n"
	for _, tc := range []struct {
		name, gir string
		splits    map[string][]int
		want      string
	}{
		{"unknown dim", sym, map[string][]int{"batch": {2}}, `graph s has no dim "batch" (its dims: b, t)`},
		{"below the range", sym, map[string][]int{"t": {1}}, "specialize t=1: the bound must lie in t's range [2,33]"},
		{"the upper end", sym, map[string][]int{"t": {33}}, "specialize t=33: the bound must lie in t's range [2,33] and below its upper end 33"},
		{"a piece up to 0", "graph s {\n  dims { n in [0,50] }\n  input %x : f32[n]\n  %0 = neg(%x) : f32[n]\n  output y = %0\n}\n",
			map[string][]int{"n": {0}}, "specialize n=0: the bound must be at least 1"},
		{"static", static, map[string][]int{"b": {1}}, "graph s has no dims to specialize"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := specGraph(t, nil, tc.gir)
			_, err := compiler.Compile(g, compiler.Options{Specialize: tc.splits})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// A plan without specializations is what it was: the same bytes with splits that make none (no
// split asked for) and without.
func TestSpecializeNone(t *testing.T) {
	g := specGraph(t, nil, twoDims)
	a, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := compiler.Compile(g, compiler.Options{Specialize: map[string][]int{}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Artifact.Plan.Version != artifact.Version || !bytes.Equal(a.Artifact.Plan.JSON(), b.Artifact.Plan.JSON()) || !bytes.Equal(a.Artifact.PTX, b.Artifact.PTX) {
		t.Errorf("no split: version %d; the builds differ", a.Artifact.Plan.Version)
	}
}

// --specialize auto keeps a split only where the cost model finds it pays: an elementwise graph
// runs the same kernels at half its bounds, so its plan is the plain build's.
func TestSpecializeAutoNone(t *testing.T) {
	g := specGraph(t, nil, twoDims)
	plain, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	auto, err := compiler.Compile(g, compiler.Options{SpecializeAuto: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(auto.Artifact.Plan.Variants) != 0 || !bytes.Equal(plain.Artifact.Plan.JSON(), auto.Artifact.Plan.JSON()) || !bytes.Equal(plain.Artifact.PTX, auto.Artifact.PTX) {
		t.Errorf("auto made %d variants of an elementwise graph", len(auto.Artifact.Plan.Variants))
	}
}
