package nvvm

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// TestSymbolicLayers: row loop kernels reading and writing layers of stacked buffers at offsets
// of the run's rows (Kernel.Sizes their layers'; plan.LayerSized) are the NVVM producer's own
// (Lacks names nothing), with codegen/ptx's parameters (each nonzero offset an ArgSize whose
// Expr is the offset, before the size), launch and work; they assemble for sm_80 and sm_90
// without spills, and on the memchecked simulator at 0, 1, a prime and the bound's rows, the
// stacked buffers only their run's layers long, they equal the reference and codegen/ptx's
// entry bit for bit, and write no element past the run's.
func TestSymbolicLayers(t *testing.T) {
	p := requireProducer(t)
	const bound = 8
	batch := sym.Sym("batch")
	for _, tc := range []struct {
		name    string
		src     func(b int) string
		stacked []string // the inputs whose sizes Kernel.Sizes holds, [layers, batch, h], as every concat's
		offsets int      // the offsets' parameters
	}{
		{"layer 1 of 2, f32", func(b int) string {
			return fmt.Sprintf("graph k {\n  input %%h : f32[2,%[1]d,16]\n  %%0 = slice(%%h) {limit=[2,%[1]d,16], start=[1,0,0]} : f32[1,%[1]d,16]\n"+
				"  %%1 = neg(%%0) : f32[1,%[1]d,16]\n  output y = %%1\n}\n", b)
		}, []string{"h"}, 1},
		{"layers stacked into an output, f16", func(b int) string {
			return fmt.Sprintf("graph k {\n  input %%x : f16[1,%[1]d,8]\n  %%0 = neg(%%x) : f16[1,%[1]d,8]\n  %%1 = mul(%%x, %%x) : f16[1,%[1]d,8]\n"+
				"  %%2 = concat(%%0, %%1) {axis=0} : f16[2,%[1]d,8]\n  output hn = %%2\n}\n", b)
		}, nil, 1},
		{"both layers of a stacked input into a stacked output, f32", func(b int) string {
			return fmt.Sprintf("graph k {\n  input %%h : f32[2,%[1]d,4]\n  %%0 = slice(%%h) {limit=[2,%[1]d,4], start=[1,0,0]} : f32[1,%[1]d,4]\n"+
				"  %%1 = slice(%%h) {limit=[1,%[1]d,4], start=[0,0,0]} : f32[1,%[1]d,4]\n  %%2 = add(%%0, %%1) : f32[1,%[1]d,4]\n  %%3 = sub(%%0, %%1) : f32[1,%[1]d,4]\n"+
				"  %%4 = concat(%%3, %%2) {axis=0} : f32[2,%[1]d,4]\n  output o = %%4\n}\n", b)
		}, []string{"h"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parse := func(b int) *ir.Graph {
				g, err := ir.Parse("k.gir", []byte(tc.src(b)))
				if err != nil {
					t.Fatal(err)
				}
				return g
			}
			g := parse(bound)
			k := plan.Kernel{Name: "k0", Graph: g, Symbolic: true, Rows: bound, Sizes: map[*ir.Value][]sym.Expr{}}
			for _, v := range g.Values {
				if v.Op == ir.OpInput && slices.Contains(tc.stacked, v.Name) || v.Op == "concat" {
					k.Sizes[v] = []sym.Expr{sym.Const(int64(v.Type.Shape[0])), batch, sym.Const(int64(v.Type.Shape[2]))}
				}
			}
			if !plan.LayerSized(k) {
				t.Fatalf("sizes %v: not a kernel of layers", k.Sizes)
			}
			text, l, ptxText, pl := bothSymbolic(t, p, k, plan.Target{SM: 80})
			offsets := 0
			for _, a := range l.Params[:len(l.Params)-1] {
				if a.Kind == plan.ArgSize && a.Expr != "" {
					offsets++
				}
			}
			if last := l.Params[len(l.Params)-1]; offsets != tc.offsets || last.Kind != plan.ArgSize || last.Expr != "" {
				t.Errorf("params %+v: want %d offsets, then the size", l.Params, tc.offsets)
			}
			assemble(t, text, []plan.Kernel{k})
			in := inputsFor(g, 5)
			for _, r := range []int{0, 1, 5, bound} {
				gr := parse(r)
				part, inputs := runInputs(t, gr, in, bound, r)
				want, err := ref.Run(gr, inputs, nil)
				if err != nil {
					t.Fatal(err)
				}
				size := func(w *plan.SymWork) func(plan.Arg) int {
					return func(a plan.Arg) int {
						if a.Expr == "" {
							return r * w.Scale
						}
						e, err := sym.Parse(a.Expr)
						if err != nil {
							t.Fatal(err)
						}
						n, err := e.Eval(map[string]int64{"batch": int64(r)})
						if err != nil {
							t.Fatal(err)
						}
						return int(n)
					}
				}
				rows := func(string) bool { return true }
				got := runRows(t, text, k, l, part, bound, r, size(l.Work), rows)
				emitted := runRows(t, ptxText, k, pl, part, bound, r, size(pl.Work), rows)
				for _, o := range g.Outputs {
					what := fmt.Sprintf("%s at %d of %d rows", o.Name, r, bound)
					w := firstRows(t, want[o.Name], max(r, 1), r)
					compare(t, what+" (reference)", got[o.Name], w, true, precision(g, o.Value), false, 0)
					compare(t, what+" (codegen/ptx)", got[o.Name], emitted[o.Name], true, precision(g, o.Value), false, 0)
				}
			}
		})
	}
}

// TestSymbolicPersistentLayers: a persistent kernel whose first stage reads layer 1 of a stacked
// state [2, batch, 16] (the stage's Sizes the state's) is the NVVM producer's own, with
// codegen/ptx's parameters (the layer's offset before the stage's size, then the other stages'
// sizes) and one-block launch; it assembles without spills, and on the memchecked, racechecked
// simulator at 0, 1, a prime and the bound, the state only its run's layers long, it equals the
// reference within tolerance and codegen/ptx's entry bit for bit.
func TestSymbolicPersistentLayers(t *testing.T) {
	p := requireProducer(t)
	const bound = 13
	parse := func(b int) *ir.Graph {
		g, err := ir.Parse("t.gir", fmt.Appendf(nil, `graph t {
  input %%x : f32[%[1]d,16]
  input %%h0 : f32[2,%[1]d,16]
  param %%w : f32[16,16]
  %%0 = slice(%%h0) {limit=[2,%[1]d,16], start=[1,0,0]} : f32[1,%[1]d,16]
  %%1 = reshape(%%0) {shape=[%[1]d,16]} : f32[%[1]d,16]
  %%2 = dot_general(%%1, %%w) {lhs_contract=[1], rhs_contract=[1]} : f32[%[1]d,16]
  %%3 = add(%%2, %%x) : f32[%[1]d,16]
  %%4 = dot_general(%%3, %%w) {lhs_contract=[1], rhs_contract=[1]} : f32[%[1]d,16]
  %%5 = neg(%%4) : f32[%[1]d,16]
  %%6 = dot_general(%%5, %%w) {lhs_contract=[1], rhs_contract=[1]} : f32[%[1]d,16]
  output y = %%6
}
`, b))
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
	layered := 0
	for i := range k.Stages {
		st := &k.Stages[i]
		st.Symbolic, st.Rows = true, bound
		for _, v := range st.Graph.Inputs() {
			if v.Name == "h0" {
				st.Sizes = map[*ir.Value][]sym.Expr{v: {sym.Const(2), sym.Sym("batch"), sym.Const(16)}}
				layered++
			}
		}
	}
	if layered != 1 {
		t.Fatalf("%d stages read the stacked state, want 1", layered)
	}
	text, l, ptxText, pl := bothEntries(t, p, k, plan.Target{SM: 80})
	offsets := 0
	for _, a := range l.Params {
		if a.Kind == plan.ArgSize && a.Expr != "" {
			offsets++
			if a.Expr != "16*batch" {
				t.Errorf("offset %q, want 16*batch", a.Expr)
			}
		}
	}
	if offsets != 1 {
		t.Errorf("params %+v: want one layer offset", l.Params)
	}
	assemble(t, text, []plan.Kernel{k})
	in := inputsFor(k.Graph, 3)
	for _, r := range []int{0, 1, 7, bound} {
		gr := parse(r)
		part, inputs := runInputs(t, gr, in, bound, r)
		params := map[string]*tensor.Tensor{"w": in["w"]}
		part["w"] = in["w"]
		want, err := ref.Run(gr, inputs, params)
		if err != nil {
			t.Fatal(err)
		}
		size := func(a plan.Arg) int {
			if a.Expr == "" {
				return r * a.Scale
			}
			return 16 * r
		}
		rows := func(string) bool { return true }
		got := runRows(t, text, k, l, part, bound, r, size, rows)
		emitted := runRows(t, ptxText, k, pl, part, bound, r, size, rows)
		o := k.Graph.Outputs[0]
		what := fmt.Sprintf("%s at %d of %d rows", o.Name, r, bound)
		compare(t, what+" (reference)", got[o.Name], firstRows(t, want[o.Name], max(r, 1), r), false, precision(g, o.Value), false, contractionLen(g))
		compare(t, what+" (codegen/ptx)", got[o.Name], emitted[o.Name], true, precision(g, o.Value), false, contractionLen(g))
	}
}

// runInputs is the inputs of gr (a graph at r of bound rows) at the run: the first r of in's rows
// (every input's rows lead, or follow static dims whose layers lie one after the other), as the
// buffers the kernel reads (part) and as gr's inputs for the reference.
func runInputs(t *testing.T, gr *ir.Graph, in map[string]*tensor.Tensor, bound, r int) (part, inputs map[string]*tensor.Tensor) {
	t.Helper()
	part, inputs = map[string]*tensor.Tensor{}, map[string]*tensor.Tensor{}
	for _, v := range gr.Inputs() {
		part[v.Name] = firstRows(t, in[v.Name], bound, r)
		x, err := tensor.FromBytes(v.Type, part[v.Name].Bytes())
		if err != nil {
			t.Fatal(err)
		}
		inputs[v.Name] = x
	}
	return part, inputs
}
