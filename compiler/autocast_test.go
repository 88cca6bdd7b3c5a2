package compiler_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
)

// Under Options.AMP a convolution and a matmul run in the low dtype: the plan records the dtype,
// its source graph is the autocast graph (so the reference runs what the kernels compute), the
// caller's graph is left as it was, and the simulator matches the reference within the error
// bounds of the low dtype.
func TestCompileAMP(t *testing.T) {
	const src = `graph g {
  input %x : f32[2,3,6,6]
  param %k : f32[4,3,3,3] {init="normal"}
  param %w : f32[5,64] {init="normal"}
  %0 = conv2d(%x, %k) {stride=[1,1], padding=[0,0], dilation=[1,1], groups=1} : f32[2,4,4,4]
  %1 = relu(%0) : f32[2,4,4,4]
  %2 = reshape(%1) {shape=[2,64]} : f32[2,64]
  %3 = dot_general(%2, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[2,5]
  output y = %3
}
`
	for _, dt := range []ir.DType{ir.BF16, ir.F16} {
		t.Run(dt.String(), func(t *testing.T) {
			g, err := ir.Parse("g.gir", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			before := g.String()
			res, err := compiler.Compile(g, compiler.Options{AMP: dt})
			if err != nil {
				t.Fatal(err)
			}
			if g.String() != before {
				t.Error("Compile changed the caller's graph")
			}
			p := res.Artifact.Plan
			if p.AMP != dt.String() {
				t.Errorf("plan amp %q, want %q", p.AMP, dt)
			}
			if !strings.Contains(p.Graph, ": "+dt.String()+"[2,4,4,4]") || !strings.Contains(p.Graph, ": "+dt.String()+"[2,5]") {
				t.Errorf("the plan's source graph is not the autocast graph:\n%s", p.Graph)
			}
			for _, o := range simCheck(t, res, g).Outputs {
				if !o.Pass() || o.Prec != dt {
					t.Errorf("%s: precision %s, %d bad, first %s", o.Name, o.Prec, o.Bad, o.First)
				}
			}
		})
	}
	if _, err := compiler.Compile(&ir.Graph{Name: "g"}, compiler.Options{AMP: ir.F64}); err == nil || !strings.Contains(err.Error(), "want bf16 or f16") {
		t.Errorf("AMP f64: %v, want an error", err)
	}
}
