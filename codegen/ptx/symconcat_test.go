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
// dim and the element count as its size parameters, and branches to one load per operand; a
// concat under computation in its kernel is refused naming why (the compiler's test,
// TestSymbolicConcat, runs it against the reference).
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
	k := concatKernel(t, "graph s {\n  dims { past in [0,31] }\n  input %a : f32[past,8]\n  input %b : f32[1,8]\n"+
		"  %0 = concat(%a, %b) {axis=0} : f32[past+1,8]\n  %1 = neg(%0) : f32[past+1,8]\n  output y = %1\n}\n")
	if _, _, err := symConcatKernel(k, new([]string)); err == nil || !strings.Contains(err.Error(), "its output y is neg, not a concat") {
		t.Errorf("a concat under neg: %v", err)
	}
}
