package compiler_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// Symbolic dims after static ones ([2, seq, d], [batch, heads, seq, d]): the rows are every dim
// up to the last symbolic one, and each kernel runs the first of them (symstride.go).
var strideModels = []struct{ name, gir string }{
	{"layer norm over [2, seq, 24]", `graph m {
  dims { seq in [1,13] }
  input %x : f32[2,seq,24]
  param %w : f32[24] {init="uniform", lo=0.5, hi=1.5}
  %0 = reduce_sum(%x) {axes=[2], keepdims=true} : f32[2,seq,1]
  %c = constant() {dtype=f32, shape=[], value=[24.0]} : f32[]
  %1 = broadcast_in_dim(%c) {dims=[], shape=[2,13,1]} : f32[2,seq,1]
  %2 = div(%0, %1) : f32[2,seq,1]
  %3 = broadcast_in_dim(%2) {dims=[0,1,2], shape=[2,13,24]} : f32[2,seq,24]
  %4 = sub(%x, %3) : f32[2,seq,24]
  %5 = mul(%4, %4) : f32[2,seq,24]
  %6 = reduce_sum(%5) {axes=[2], keepdims=true} : f32[2,seq,1]
  %7 = broadcast_in_dim(%6) {dims=[0,1,2], shape=[2,13,24]} : f32[2,seq,24]
  %8 = add(%5, %7) : f32[2,seq,24]
  %9 = broadcast_in_dim(%w) {dims=[2], shape=[2,13,24]} : f32[2,seq,24]
  %10 = mul(%8, %9) : f32[2,seq,24]
  output y = %10
  output m = %6
}
`},
	{"ONNX MatMul over [2, seq, 16] with bias and tanh (FFMA)", `graph m {
  dims { seq in [1,70] }
  input %x : f32[2,seq,16]
  param %w : f32[16,48] {init="uniform", lo=-1, hi=1}
  param %b : f32[48] {init="uniform", lo=-1, hi=1}
  %0 = broadcast_in_dim(%w) {dims=[1,2], shape=[2,16,48]} : f32[2,16,48]
  %1 = dot_general(%x, %0) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : f32[2,seq,48]
  %2 = broadcast_in_dim(%b) {dims=[2], shape=[2,70,48]} : f32[2,seq,48]
  %3 = add(%2, %1) : f32[2,seq,48]
  %4 = tanh(%3) : f32[2,seq,48]
  output y = %4
}
`},
	{"ONNX MatMul over [3, seq, 32] (tensor cores)", `graph m {
  dims { seq in [1,45] }
  input %x : f16[3,seq,32]
  param %w : f16[32,24] {init="uniform", lo=-1, hi=1}
  %0 = broadcast_in_dim(%w) {dims=[1,2], shape=[3,32,24]} : f16[3,32,24]
  %1 = dot_general(%x, %0) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : f16[3,seq,24]
  %2 = relu(%1) : f16[3,seq,24]
  output y = %2
}
`},
	{"slice of the static dim (a layer at seq·4 elements: symlayer.go)", `graph m {
  dims { seq in [1,9] }
  input %x : f32[2,seq,4]
  %0 = slice(%x) {start=[1,0,0], limit=[2,9,4], stride=[1,1,1]} : f32[1,seq,4]
  %1 = neg(%0) : f32[1,seq,4]
  output y = %1
}
`},
	{"a copy moving seq before the static dim", `graph m {
  dims { seq in [1,23] }
  input %x : f32[2,seq,4]
  %0 = transpose(%x) {perm=[1,0,2]} : f32[seq,2,4]
  output y = %0
}
`},
	{"a copy splitting and moving two symbolic dims (f16)", `graph m {
  dims { batch in [1,3], seq in [1,9] }
  input %x : f16[batch,seq,6]
  %0 = reshape(%x) {shape=[3,9,2,3]} : f16[batch,seq,2,3]
  %1 = transpose(%0) {perm=[1,2,0,3]} : f16[seq,2,batch,3]
  output y = %1
}
`},
	{"[batch, 3, seq, 8]: heads between two dims, softmax", `graph m {
  dims { batch in [1,3], seq in [1,11] }
  input %x : f32[batch,3,seq,8]
  param %b : f32[8] {init="uniform", lo=-1, hi=1}
  %0 = broadcast_in_dim(%b) {dims=[3], shape=[3,3,11,8]} : f32[batch,3,seq,8]
  %1 = add(%x, %0) : f32[batch,3,seq,8]
  %2 = reduce_max(%1) {axes=[3], keepdims=true} : f32[batch,3,seq,1]
  %3 = broadcast_in_dim(%2) {dims=[0,1,2,3], shape=[3,3,11,8]} : f32[batch,3,seq,8]
  %4 = sub(%1, %3) : f32[batch,3,seq,8]
  %5 = exp(%4) : f32[batch,3,seq,8]
  output y = %5
}
`},
}

func TestSymbolicStrideRows(t *testing.T) {
	for _, tc := range strideModels {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ir.Parse("m.gir", []byte(tc.gir))
			if err != nil {
				t.Fatal(err)
			}
			checkRows(t, g)
		})
	}
	t.Run("DSL layer norm and softmax over [2, seq, 24]", func(t *testing.T) {
		g, err := frontend.Build("m", func(b *frontend.Builder) {
			x := b.Input("x", ir.F32, 2, b.Dim("seq", 2, 11), 24)
			w := b.Param("w", ir.T(ir.F32, 24), frontend.Uniform(0.5, 1.5))
			bias := b.Param("b", ir.T(ir.F32, 24), frontend.Uniform(-1, 1))
			y := frontend.LayerNorm(x, []int{24}, w, bias, 1e-5)
			b.Output("sm", y.Softmax(-1))
		})
		if err != nil {
			t.Fatal(err)
		}
		checkRows(t, g)
	})
}

// A kernel that uses a static dim of the rows apart from the others is refused naming it.
func TestSymbolicStrideRefused(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"reduction over the static dim before seq", "  %0 = reduce_sum(%x) {axes=[0]} : f32[seq,4]\n  output y = %0\n",
			"input %x : f32[2,seq,4] has 2*seq rows, %0 = reduce_sum(%x) {axes=[0]} : f32[seq,4] has seq"},
		{"reduction over the static dim, kept", "  %0 = reduce_sum(%x) {axes=[0], keepdims=true} : f32[1,seq,4]\n  output y = %0\n",
			"input %x : f32[2,seq,4] has 2*seq rows, %0 = reduce_sum(%x) {axes=[0], keepdims=true} : f32[1,seq,4] has seq"},
		{"a bias along the static dim", "  param %b : f32[2,1,4] {init=\"ones\"}\n  %0 = broadcast_in_dim(%b) {dims=[0,1,2], shape=[2,9,4]} : f32[2,seq,4]\n  %1 = add(%x, %0) : f32[2,seq,4]\n  output y = %1\n",
			"broadcasts a static operand along a dim of its rows"},
		{"transpose swapping the static dim and seq", "  %0 = transpose(%x) {perm=[1,0,2]} : f32[seq,2,4]\n  %1 = neg(%0) : f32[seq,2,4]\n  output y = %1\n",
			"%0 = transpose(%x) {perm=[1,0,2]} : f32[seq,2,4] has seq"},
		{"slice of the static dim and of the last", "  %0 = slice(%x) {start=[1,0,0], limit=[2,9,2], stride=[1,1,1]} : f32[1,seq,2]\n  %1 = neg(%0) : f32[1,seq,2]\n  output y = %1\n",
			"f32[1,seq,2] has seq"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ir.Parse("s.gir", []byte("graph s {\n  dims { seq in [1,9] }\n  input %x : f32[2,seq,4]\n"+tc.body+"}\n"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = compiler.Compile(g, compiler.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "graph s has symbolic dims: ") {
				t.Errorf("Compile = %v, want %q", err, tc.want)
			}
		})
	}
}
