package passes_test

import (
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
)

// A concat along a symbolic dim is a kernel of its own beside a reduction or a product
// (fuse_symconcat.go), whichever the fuser visits first; the same graph at static sizes fuses it
// as before, and a concat along a symbolic dim with elementwise ops only stays fused.
func TestFuseSymbolicConcat(t *testing.T) {
	for _, tc := range []struct {
		name, body, symbolic, static string
	}{
		{"row sum of the concat", "  input %a : f32[past,8]\n  input %b : f32[1,8]\n  %0 = concat(%a, %b) {axis=0} : f32[past+1,8]\n" +
			"  %1 = reduce_sum(%0) {axes=[1]} : f32[past+1]\n  output y = %1\n",
			"k0_concat:loop k1_sum:row", "k0_sum:row"},
		{"sum over the concat axis", "  input %a : f32[past,8]\n  input %b : f32[1,8]\n  %0 = concat(%a, %b) {axis=0} : f32[past+1,8]\n" +
			"  %1 = reduce_sum(%0) {axes=[0]} : f32[8]\n  output y = %1\n",
			"k0_concat:loop k1_sum:row", "k0_sum:row"},
		{"a reduction joins the concat's kernel", "  input %z : f32[past+1,8]\n  input %a : f32[past,8]\n  input %b : f32[1,8]\n" +
			"  %0 = reduce_sum(%z) {axes=[1]} : f32[past+1]\n  %1 = broadcast_in_dim(%0) {dims=[0], shape=[38,8]} : f32[past+1,8]\n" +
			"  %2 = concat(%a, %b) {axis=0} : f32[past+1,8]\n  %3 = add(%2, %1) : f32[past+1,8]\n  output y = %3\n",
			"k0_sum:row k1_concat_add:loop", "k0_sum:row"},
		{"a product's epilogue", "  input %x : f32[past+1,8]\n  input %w : f32[8,4]\n  input %a : f32[past,4]\n  input %b : f32[1,4]\n" +
			"  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[past+1,4]\n  %1 = concat(%a, %b) {axis=0} : f32[past+1,4]\n" +
			"  %2 = add(%0, %1) : f32[past+1,4]\n  output y = %2\n",
			"k0_matmul:contraction k1_concat_add:loop", "k0_matmul_concat_add:contraction"},
		{"elementwise only", "  input %a : f32[past,8]\n  input %b : f32[1,8]\n  %0 = concat(%a, %b) {axis=0} : f32[past+1,8]\n" +
			"  %1 = tanh(%0) : f32[past+1,8]\n  output y = %1\n",
			"k0_concat_tanh:loop", "k0_concat_tanh:loop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ir.Parse("s.gir", []byte("graph s {\n  dims { past in [0,37] }\n"+tc.body+"}\n"))
			if err != nil {
				t.Fatal(err)
			}
			sg, err := ops.Instantiate(g, map[string]int64{"past": 13})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				g    *ir.Graph
				want string
			}{{g, tc.symbolic}, {sg, tc.static}} {
				res, err := passes.Run(c.g, passes.Options{VerifyEach: len(c.g.Dims) == 0}) // CheckKernels takes static buffers
				if err != nil {
					t.Fatal(err)
				}
				if got := labels(res.Kernels); got != c.want {
					t.Errorf("dims %v: kernels %s, want %s", c.g.Dims, got, c.want)
				}
			}
		})
	}
}
