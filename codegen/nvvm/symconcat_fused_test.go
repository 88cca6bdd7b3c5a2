package nvvm

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// TestSymbolicConcatFused: concats along a symbolic dim fused with computation
// (symconcat_fused.go) are the NVVM producer's own (Lacks names nothing): codegen/ptx's
// parameters (the dims' values, then the first output's element count), launch and work. They
// assemble for sm_80 and sm_90 without spills, and on the memchecked, racechecked simulator at
// past 0, 1, a prime and the bound, every buffer laid out at the run's sizes, they equal
// codegen/ptx's entry bit for bit (but for libdevice's tanh and exp) and the reference within tolerance, writing nothing past the
// run's elements: a cast before (a decoder's f16 cache grown by its f32 step), tanh after over
// three operands, a scale by a broadcast per-column tensor with the concat an output too, a
// bf16 concat whose operands compute (exp, neg) and an output of other sizes beside (a second
// loop), and an iota selecting between two concats along a middle axis.
func TestSymbolicConcatFused(t *testing.T) {
	p := requireProducer(t)
	const bound = 23
	for _, tc := range []struct {
		name, src string
	}{
		{"f16 cache grown by a cast step", "graph k {\n  input %a : f16[2,4,{{past}},8]\n  input %b : f32[2,4,1,8]\n  %0 = cast(%b) {to=f16} : f16[2,4,1,8]\n" +
			"  %1 = concat(%a, %0) {axis=2} : f16[2,4,{{past+1}},8]\n  output y = %1\n}\n"},
		{"f32 tanh after three operands", "graph k {\n  input %a : f32[{{past}},32]\n  input %b : f32[1,32]\n  input %c : f32[{{past}},32]\n" +
			"  %0 = concat(%a, %b, %c) {axis=0} : f32[{{2*past+1}},32]\n  %1 = tanh(%0) : f32[{{2*past+1}},32]\n  output y = %1\n}\n"},
		{"f32 scaled by a broadcast, the concat an output too", "graph k {\n  input %a : f32[3,{{past}},4]\n  input %b : f32[3,2,4]\n  input %s : f32[4]\n" +
			"  %0 = concat(%b, %a) {axis=1} : f32[3,{{past+2}},4]\n  %1 = broadcast_in_dim(%s) {dims=[2], shape=[3,{{past+2}},4]} : f32[3,{{past+2}},4]\n" +
			"  %2 = mul(%0, %1) : f32[3,{{past+2}},4]\n  output y = %2\n  output present = %0\n}\n"},
		{"bf16 operands computed, an output of other sizes", "graph k {\n  input %a : bf16[{{past}},6]\n  input %b : bf16[1,6]\n  %0 = exp(%a) : bf16[{{past}},6]\n" +
			"  %1 = neg(%b) : bf16[1,6]\n  %2 = concat(%0, %1) {axis=0} : bf16[{{past+1}},6]\n  output y = %2\n  output e = %0\n}\n"},
		{"i32 iota selecting between two concats", "graph k {\n  input %a : i32[2,{{past}},3]\n  input %b : i32[2,1,3]\n  input %c : i32[2,{{past}},3]\n" +
			"  %0 = concat(%a, %b) {axis=1} : i32[2,{{past+1}},3]\n  %1 = concat(%b, %c) {axis=1} : i32[2,{{past+1}},3]\n" +
			"  %2 = iota() {dim=2, dtype=i32, shape=[2,{{past+1}},3]} : i32[2,{{past+1}},3]\n  %3 = constant() {shape=[], dtype=i32, value=[1]} : i32[]\n" +
			"  %4 = broadcast_in_dim(%3) {dims=[], shape=[2,{{past+1}},3]} : i32[2,{{past+1}},3]\n  %5 = lt(%2, %4) : bool[2,{{past+1}},3]\n" +
			"  %6 = select(%5, %0, %1) : i32[2,{{past+1}},3]\n  output y = %6\n}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, sizes := dimsGraph(t, tc.src, map[string]int64{"past": bound})
			k := plan.Kernel{Name: "k0_concat_fused", Graph: g, Symbolic: true, Sizes: sizes}
			if plan.ConcatCopy(g) || plan.SymbolicConcat(g) != "" {
				t.Fatalf("not a fused concat: %q", plan.SymbolicConcat(g))
			}
			target := plan.Target{SM: 80}
			text, l, ptxText, pl := bothSymbolic(t, p, k, target)
			var exprs []string
			for _, a := range l.Params {
				if a.Kind == plan.ArgSize {
					exprs = append(exprs, a.Expr)
				}
			}
			if fmt.Sprint(exprs) != "[past ]" {
				t.Errorf("size parameters %q: want past, then the element count", exprs)
			}
			assemble(t, text, []plan.Kernel{k})
			// tanh and exp are libdevice's here, PTX's approximations there: the reference's
			// tolerance only.
			approx := slices.ContainsFunc(g.Values, func(v *ir.Value) bool { return v.Op == "tanh" || v.Op == "exp" })
			for _, r := range []int64{0, 1, 7, bound} {
				env := map[string]int64{"past": r}
				gr, _ := dimsGraph(t, tc.src, env)
				in := inputsFor(gr, uint64(r)+5)
				want, err := ref.Run(gr, in, nil)
				if err != nil {
					t.Fatal(err)
				}
				n := gr.Outputs[0].Value.Type.Shape.NumElements()
				got, st := runDims(t, text, k, l, gr, in, env, n)
				emitted, pst := runDims(t, ptxText, k, pl, gr, in, env, n)
				if r == bound {
					// docs/perf.md's table.
					t.Logf("warp instructions at past %d: nvvm %d, ptx %d", r, st.WarpInsts, pst.WarpInsts)
				}
				for _, o := range gr.Outputs {
					if !approx && !bytes.Equal(got[o.Name], emitted[o.Name]) {
						t.Errorf("%s at past %d: differs from codegen/ptx's", o.Name, r)
					}
					x, err := tensor.FromBytes(o.Value.Type, got[o.Name])
					if err != nil {
						t.Fatal(err)
					}
					compare(t, fmt.Sprintf("%s at past %d (reference)", o.Name, r), x, want[o.Name], !o.Value.Type.DType.IsFloat(), o.Value.Type.DType, false, 1)
				}
			}
		})
	}
}
