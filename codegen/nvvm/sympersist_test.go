package nvvm

import (
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// persistChain is three products by [out, in] weights (lane-split stages) or, with in-major
// weights, per-element ones, each followed by act, over rows b of x; an elementwise tail
// (a loop stage of vector groups) ends it.
func persistChain(dt, act string, b, k, n int, laneSplit bool) string {
	contract, w, v := "lhs_contract=[1], rhs_contract=[1]", fmt.Sprintf("%s[%d,%d]", dt, n, k), fmt.Sprintf("%s[%d,%d]", dt, k, n)
	if !laneSplit {
		contract, w, v = "lhs_contract=[1], rhs_contract=[0]", fmt.Sprintf("%s[%d,%d]", dt, k, n), fmt.Sprintf("%s[%d,%d]", dt, n, k)
	}
	bk, bn := fmt.Sprintf("%s[%d,%d]", dt, b, k), fmt.Sprintf("%s[%d,%d]", dt, b, n)
	return fmt.Sprintf(`graph t {
  input %%x : %[1]s
  param %%w : %[2]s
  param %%v : %[3]s
  %%0 = dot_general(%%x, %%w) {%[5]s} : %[4]s
  %%1 = %[6]s(%%0) : %[4]s
  %%2 = dot_general(%%1, %%v) {%[5]s} : %[1]s
  %%3 = %[6]s(%%2) : %[1]s
  %%4 = dot_general(%%3, %%w) {%[5]s} : %[4]s
  %%5 = mul(%%4, %%4) : %[4]s
  %%6 = add(%%5, %%1) : %[4]s
  output y = %%6
  output h = %%1
}
`, bk, w, v, bn, contract, act)
}

// TestSymbolicPersistent: persistent kernels whose stages run at symbolic sizes (each stage
// Symbolic with the bound's rows, as the compiler marks a row stage) are the NVVM producer's own
// (Lacks names nothing): one size parameter per symbolic stage after the buffers (the stage's
// index and its units per row) and a one-block launch, codegen/ptx's; the module assembles for
// sm_80 and sm_90 without spills. On the memchecked, racechecked simulator at 0, 1, a prime and
// the bound's rows, with only the run's rows of x allocated, the run's rows of every output
// equal the reference at those rows (within tolerance: f32 products accumulate by fma in f32 in
// a tree) and codegen/ptx's symbolic entry's bit for bit where the ops are exact (an approximate
// activation: within tolerance), and rows past the run are never written.
func TestSymbolicPersistent(t *testing.T) {
	p := requireProducer(t)
	const bound = 13
	for _, tc := range []struct {
		name string
		src  func(b int) string
	}{
		{"lane-split f32, neg", func(b int) string { return persistChain("f32", "neg", b, 40, 20, true) }},
		{"lane-split f32 in rows, tanh", func(b int) string { return persistChain("f32", "tanh", b, 64, 64, true) }},
		{"lane-split K<32 bf16", func(b int) string { return persistChain("bf16", "neg", b, 12, 20, true) }},
		{"lane-split f16 odd sizes", func(b int) string { return persistChain("f16", "neg", b, 7, 3, true) }},
		{"per-element f32", func(b int) string { return persistChain("f32", "neg", b, 16, 24, false) }},
		{"per-element i32", func(b int) string { return persistChain("i32", "neg", b, 16, 8, false) }},
		{"lane-split f64", func(b int) string { return persistChain("f64", "neg", b, 40, 20, true) }},
		{"loop stages, vector groups", func(b int) string {
			return fmt.Sprintf(`graph t {
  input %%x : f32[%[1]d]
  %%0 = exp(%%x) : f32[%[1]d]
  %%1 = broadcast_in_dim(%%0) {dims=[0], shape=[%[1]d,8]} : f32[%[1]d,8]
  %%2 = tanh(%%1) : f32[%[1]d,8]
  %%3 = log(%%2) : f32[%[1]d,8]
  %%4 = broadcast_in_dim(%%3) {dims=[0,1], shape=[%[1]d,8,40]} : f32[%[1]d,8,40]
  %%5 = neg(%%4) : f32[%[1]d,8,40]
  output y = %%5
}
`, b)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parse := func(b int) *ir.Graph {
				g, err := ir.Parse("t.gir", []byte(tc.src(b)))
				if err != nil {
					t.Fatal(err)
				}
				return g
			}
			g := parse(bound)
			res, err := passes.Run(g, passes.Options{VerifyEach: true})
			if err != nil {
				t.Fatal(err)
			}
			kn := res.Kernels.Kernels[0]
			if kn.Kind != passes.Persistent {
				t.Fatalf("want the first kernel persistent:\n%s", res.Kernels.String())
			}
			k := kernelOf(kn, kn.Name)
			k.Symbolic, k.Rows = true, bound
			for i := range k.Stages {
				k.Stages[i].Symbolic, k.Stages[i].Rows = true, bound
			}
			text, l, ptxText, pl := bothEntries(t, p, k, plan.Target{SM: 80})
			if l.Work != nil {
				t.Errorf("work %+v: a persistent kernel's launch is one block", *l.Work)
			}
			sizes := 0
			for _, a := range l.Params {
				if a.Kind == plan.ArgSize {
					sizes++
				}
			}
			if sizes != len(k.Stages) {
				t.Errorf("%d size parameters for %d symbolic stages: %+v", sizes, len(k.Stages), l.Params)
			}
			static := kernelOf(kn, kn.Name)
			if st, _, err := p.Module([]plan.Kernel{static}, plan.Target{SM: 80}); err != nil || st == text {
				t.Errorf("the symbolic kernel is the static one (%v)", err)
			}
			assemble(t, text, []plan.Kernel{k})
			in := inputsFor(k.Graph, 3)
			for _, r := range []int{0, 1, 7, bound} {
				gr := parse(r)
				part := map[string]*tensor.Tensor{}
				for name, x := range in {
					part[name] = x
				}
				part["x"] = firstRows(t, in["x"], bound, r)
				x, err := tensor.FromBytes(gr.Inputs()[0].Type, part["x"].Bytes())
				if err != nil {
					t.Fatal(err)
				}
				params := map[string]*tensor.Tensor{}
				for _, v := range gr.Params() {
					params[v.Name] = in[v.Name]
				}
				want, err := ref.Run(gr, map[string]*tensor.Tensor{"x": x}, params)
				if err != nil {
					t.Fatal(err)
				}
				got := persistRun(t, text, k, l, part, bound, r)
				emitted := persistRun(t, ptxText, k, pl, part, bound, r)
				exact := exactKernel(g)
				for _, o := range k.Graph.Outputs {
					what := fmt.Sprintf("%s at %d of %d rows", o.Name, r, bound)
					w := firstRows(t, want[o.Name], max(r, 1), r)
					compare(t, what+" (reference)", got[o.Name], w, false, precision(g, o.Value), false, contractionLen(g))
					compare(t, what+" (codegen/ptx)", got[o.Name], emitted[o.Name], exact, precision(g, o.Value), false, contractionLen(g))
				}
			}
		})
	}
}

// persistRun runs persistent kernel k (text, launch l) at r of its rows rows (runRows), each
// stage's size argument r times its scale; every output carries the rows.
func persistRun(t *testing.T, text string, k plan.Kernel, l plan.Launch, in map[string]*tensor.Tensor, rows, r int) map[string]*tensor.Tensor {
	t.Helper()
	return runRows(t, text, k, l, in, rows, r, func(a plan.Arg) int { return r * a.Scale }, func(string) bool { return true })
}
