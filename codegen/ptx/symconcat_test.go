package ptx

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// concatKernel parses src (a graph with dims) into a symbolic kernel at its bound whose Sizes are
// its values' symbolic sizes, as the compiler hands them.
func concatKernel(t *testing.T, src string) Kernel {
	t.Helper()
	g, err := ir.Parse("s.gir", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[*ir.Value][]sym.Expr{}
	for _, v := range g.Values {
		if v.Type.Sym != nil {
			sizes[v] = v.Type.Sym
		}
		v.Type.Sym = nil
	}
	g.Dims = nil
	return Kernel{Name: "k0_concat", Graph: g, Symbolic: true, Sizes: sizes}
}

// The concat copy (symconcat.go) assembles for sm_80 and sm_90 in each element size, takes each
// dim and the element count as its size parameters, and branches to one load per operand (the
// compiler's test, TestSymbolicConcat, runs it against the reference).
func TestSymbolicConcatKernel(t *testing.T) {
	for _, dt := range []ir.DType{ir.F32, ir.F16, ir.I64, ir.Bool} {
		t.Run(dt.String(), func(t *testing.T) {
			src := fmt.Sprintf("graph s {\n  dims { past in [0,31] }\n  input %%a : %[1]s[2,past,8]\n  input %%b : %[1]s[2,8,1]\n"+
				"  %%0 = transpose(%%b) {perm=[0,2,1]} : %[1]s[2,1,8]\n  input %%c : %[1]s[2,past,8]\n"+
				"  %%1 = concat(%%a, %%0, %%c) {axis=1} : %[1]s[2,2*past+1,8]\n  output y = %%1\n}\n", dt)
			k := concatKernel(t, src)
			text, l, err := Generate(k, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			var exprs []string
			for _, p := range l.Params {
				if p.Kind == ArgSize {
					exprs = append(exprs, p.Expr)
				}
			}
			if fmt.Sprint(exprs) != "[past ]" || l.Work == nil || strings.Count(text, "ld.global") != 3 {
				t.Errorf("size parameters %q, work %v, %d loads; want past and the element count, 3 loads", exprs, l.Work, strings.Count(text, "ld.global"))
			}
			assemble(t, "//\n.version 7.8\n.target sm_80\n.address_size 64\n\n"+text)
		})
	}
}

// A concat along a symbolic dim fused with computation (symconcat_fused.go) assembles for sm_80
// and sm_90 in each float type and bool, a cast and an op before the concat, ops after it and an
// input read at the output's sizes: one load per operand of the concat, its branches joined in
// one register, and the input beside it loaded once, after them; a reduction or a product in the
// kernel is refused naming it (a literal tensor runs: TestSymbolicConcatFusedCost).
func TestSymbolicConcatFusedKernel(t *testing.T) {
	for _, tc := range []struct{ dt, before, after string }{
		{"f32", "neg", "tanh"}, {"f16", "exp", "abs"}, {"bf16", "abs", "neg"}, {"bool", "not", "not"},
	} {
		t.Run(tc.dt, func(t *testing.T) {
			src := fmt.Sprintf("graph s {\n  dims { past in [0,31] }\n  input %%a : %[1]s[2,past,8]\n  input %%b : f32[2,1,8]\n"+
				"  %%0 = cast(%%b) {to=%[1]s} : %[1]s[2,1,8]\n  %%1 = %[2]s(%%0) : %[1]s[2,1,8]\n  input %%s : %[1]s[2,past+1,8]\n"+
				"  %%2 = concat(%%a, %%1) {axis=1} : %[1]s[2,past+1,8]\n  %%3 = %[3]s(%%2) : %[1]s[2,past+1,8]\n"+
				"  %%4 = %[4]s(%%3, %%s) : %[1]s[2,past+1,8]\n  output y = %%4\n}\n", tc.dt, tc.before, tc.after, map[bool]string{true: "or", false: "mul"}[tc.dt == "bool"])
			k := concatKernel(t, src)
			text, l, err := Generate(k, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(text, "ld.global"); n != 3 || l.Work == nil || !strings.Contains(text, "operand 1 of the concat") {
				t.Errorf("%d loads, work %v; want 3 loads (a, b and s) in the fused concat", n, l.Work)
			}
			if i, j := strings.Index(text, "concat_done"), strings.LastIndex(text, "ld.global"); i > j {
				t.Error("the input beside the concat is loaded before the concat's branches")
			}
			for _, sm := range []string{"sm_80", "sm_90"} {
				assembleArch(t, "//\n.version 7.8\n.target "+sm+"\n.address_size 64\n\n"+text, sm)
			}
		})
	}
	for _, tc := range []struct{ name, body, want string }{
		{"a reduction over the concat axis", "  %1 = reduce_sum(%0) {axes=[0]} : f32[8]\n", "it computes reduce_sum"},
		{"a product", "  %1 = dot_general(%0, %0) {lhs_contract=[1], rhs_contract=[1]} : f32[past+1,past+1]\n", "it computes dot_general"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, out := tc.body, "%1"
			k := concatKernel(t, "graph s {\n  dims { past in [0,31] }\n  input %a : f32[past,8]\n  input %b : f32[1,8]\n"+
				"  %0 = concat(%a, %b) {axis=0} : f32[past+1,8]\n"+body+"  output y = "+out+"\n}\n")
			if _, _, err := symConcatKernel(k, new([]string)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}
