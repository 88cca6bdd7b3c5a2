package nvvm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// Strided symbolic kernels (plan.Kernel.Sizes over one dim, seq): copies moving seq and GEMMs
// reading their left operand through views of a buffer whose seq does not lead. One build per
// kernel takes codegen/ptx's parameters (the dim's value, then the size), launch and work,
// assembles for sm_80 and sm_90 without spills, and runs on the memchecked, racechecked
// simulator at the bound, 1, primes and 0 with its inputs laid out contiguously at the run's
// seq (a read past them is out of bounds): equal to the reference at that seq (copies exactly)
// and to codegen/ptx's entry bit for bit; the output past the run's elements is never written.
func TestSymbolicStrideTemplates(t *testing.T) {
	p := requireProducer(t)
	for _, tc := range []struct {
		name, src string // src has SEQ for seq
		bound     int
		tf32      bool
	}{
		{"copy moving seq before a static dim", `graph k {
  input %x : f32[2,SEQ,4]
  %0 = transpose(%x) {perm=[1,0,2]} : f32[SEQ,2,4]
  output y = %0
}`, 23, false},
		{"f16 copy splitting the last dim and moving seq", `graph k {
  input %x : f16[3,SEQ,6]
  %0 = reshape(%x) {shape=[3,SEQ,2,3]} : f16[3,SEQ,2,3]
  %1 = transpose(%0) {perm=[1,2,0,3]} : f16[SEQ,2,3,3]
  output y = %1
}`, 9, false},
		{"i32 copy of a strided slice, heads merged", `graph k {
  input %x : i32[2,SEQ,8]
  %0 = slice(%x) {start=[0,0,1], limit=[2,SEQ,8], stride=[1,1,2]} : i32[2,SEQ,4]
  %1 = transpose(%0) {perm=[1,0,2]} : i32[SEQ,2,4]
  %2 = reshape(%1) {shape=[SEQ,8]} : i32[SEQ,8]
  output y = %2
}`, 13, false},
		{"FFMA GEMM over merged heads with a bias", `graph k {
  input %x : f32[2,2,SEQ,8]
  input %w : f32[16,24]
  input %b : f32[24]
  %0 = transpose(%x) {perm=[0,2,1,3]} : f32[2,SEQ,2,8]
  %1 = reshape(%0) {shape=[2,SEQ,16]} : f32[2,SEQ,16]
  %2 = dot_general(%1, %w) {lhs_contract=[2], rhs_contract=[0]} : f32[2,SEQ,24]
  %3 = broadcast_in_dim(%b) {shape=[2,SEQ,24], dims=[2]} : f32[2,SEQ,24]
  %4 = add(%2, %3) : f32[2,SEQ,24]
  output y = %4
}`, 37, false},
		{"f16 tensor-core GEMM over merged heads", `graph k {
  input %x : f16[2,2,SEQ,16]
  input %w : f16[24,32]
  %0 = transpose(%x) {perm=[0,2,1,3]} : f16[2,SEQ,2,16]
  %1 = reshape(%0) {shape=[2,SEQ,32]} : f16[2,SEQ,32]
  %2 = dot_general(%1, %w) {lhs_contract=[2], rhs_contract=[1]} : f16[2,SEQ,24]
  output y = %2
}`, 40, false},
		{"tf32 GEMM over a transposed operand", `graph k {
  input %x : f32[2,16,SEQ]
  input %w : f32[32,16]
  %0 = transpose(%x) {perm=[0,2,1]} : f32[2,SEQ,16]
  %1 = dot_general(%0, %w) {lhs_contract=[2], rhs_contract=[1]} : f32[2,SEQ,32]
  output y = %1
}`, 19, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := func(seq int) *ir.Graph {
				g, err := ir.Parse("k.gir", []byte(strings.ReplaceAll(tc.src, "SEQ", fmt.Sprint(seq))))
				if err != nil {
					t.Fatal(err)
				}
				return g
			}
			g := at(tc.bound)
			k := plan.Kernel{Name: "k0", Graph: g, Symbolic: true, Rows: tc.bound, Sizes: seqSizes(g, at(tc.bound-1), tc.bound)}
			target := plan.Target{SM: 80, TF32: tc.tf32}
			text, l, ptxText, pl := bothSymbolic(t, p, k, target)
			if n := len(l.Params); n < 2 || l.Params[n-2] != (plan.Arg{Kind: plan.ArgSize, Expr: "seq"}) || l.Params[n-1] != (plan.Arg{Kind: plan.ArgSize}) {
				t.Fatalf("params %v: want seq's value, then the size, last", l.Params)
			}
			if strings.Contains(text, "codegen/ptx") {
				t.Error("the module carries codegen/ptx's entry")
			}
			assemble(t, text, []plan.Kernel{k})
			exact := !tiled(k)
			for i, r := range []int{tc.bound, 1, 2, 3, 7, 13, 0} {
				if r > tc.bound || i > 0 && r == tc.bound {
					continue
				}
				gr := at(max(r, 1))
				in := inputsFor(gr, uint64(r)+5)
				if r == 0 {
					// No rows: the inputs that follow seq are empty.
					for i, v := range gr.Inputs() {
						if !v.Type.Shape.Equal(at(2).Inputs()[i].Type.Shape) {
							in[v.Name] = tensor.New(ir.T(v.Type.DType, 0))
						}
					}
				}
				got, st := symRun(t, text, k, l, in, nil, tc.bound, r)
				emitted, pst := symRun(t, ptxText, k, pl, in, nil, tc.bound, r)
				if r == tc.bound {
					// docs/perf.md's table.
					t.Logf("warp instructions at seq %d: nvvm %d, ptx %d", r, st.WarpInsts, pst.WarpInsts)
				}
				var want map[string]*tensor.Tensor
				if r > 0 {
					var err error
					if want, err = ref.Run(gr, in, nil); err != nil {
						t.Fatal(err)
					}
				}
				for _, o := range g.Outputs {
					what := fmt.Sprintf("%s at seq %d of %d", o.Name, r, tc.bound)
					compare(t, what+" (codegen/ptx)", got[o.Name], emitted[o.Name], true, o.Value.Type.DType, tc.tf32, 0)
					if r > 0 {
						compare(t, what+" (reference)", got[o.Name], want[o.Name], exact, precision(g, o.Value), tc.tf32, contractionLen(g))
					}
				}
			}
		})
	}
}

// seqSizes is the Sizes of g (at seq = bound) as expressions over seq, each size affine in it:
// its slope is its difference from the same value's in prev (at seq = bound-1).
func seqSizes(g, prev *ir.Graph, bound int) map[*ir.Value][]sym.Expr {
	sizes := map[*ir.Value][]sym.Expr{}
	for i, v := range g.Values {
		s := make([]sym.Expr, v.Type.Shape.Rank())
		for d, n := range v.Type.Shape {
			a := int64(n - prev.Values[i].Type.Shape[d])
			s[d] = sym.Add(sym.Scale(sym.Sym("seq"), a), sym.Const(int64(n)-a*int64(bound)))
		}
		sizes[v] = s
	}
	return sizes
}

// bothSymbolic builds symbolic kernel k with the NVVM producer (whose own it must be: Lacks names
// nothing) and with codegen/ptx (bothEntries), and stops the test unless both take the same
// parameters, launch and work, the work of a kernel sized at run time.
func bothSymbolic(t *testing.T, p *Producer, k plan.Kernel, target plan.Target) (text string, l plan.Launch, ptxText string, pl plan.Launch) {
	t.Helper()
	text, l, ptxText, pl = bothEntries(t, p, k, target)
	if t.Failed() || l.Work == nil {
		t.Fatalf("launch work %+v, codegen/ptx's %+v", l.Work, pl.Work)
	}
	return text, l, ptxText, pl
}
