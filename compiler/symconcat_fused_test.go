package compiler_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
)

// concatFusedCases are concats along a symbolic dim past of [2, 3, 5, 4] at axis (past in [0, 37])
// fused with computation: each case's body, given the dtype and the sizes at the axis (at).
var concatFusedCases = []struct {
	name string
	body func(dt string, at func(string) string) string
}{
	{"tanh_after", func(dt string, at func(string) string) string {
		return fmt.Sprintf("  input %%a : %[1]s[%[2]s]\n  input %%b : %[1]s[%[3]s]\n"+
			"  %%0 = concat(%%a, %%b) {axis=AXIS} : %[1]s[%[4]s]\n  %%1 = tanh(%%0) : %[1]s[%[4]s]\n  output y = %%1\n",
			dt, at("past"), at("1"), at("past+1"))
	}},
	{"three_scaled", func(dt string, at func(string) string) string {
		return fmt.Sprintf("  input %%a : %[1]s[%[2]s]\n  input %%b : %[1]s[%[3]s]\n  input %%c : %[1]s[%[4]s]\n"+
			"  %%0 = concat(%%a, %%b, %%c) {axis=AXIS} : %[1]s[%[5]s]\n  %%1 = constant() {shape=[], dtype=%[1]s, value=[0.75]} : %[1]s[]\n"+
			"  %%2 = broadcast_in_dim(%%1) {dims=[], shape=[%[6]s]} : %[1]s[%[5]s]\n  %%3 = mul(%%0, %%2) : %[1]s[%[5]s]\n  output y = %%3\n",
			dt, at("2"), at("past"), at("3"), at("past+5"), at("42"))
	}},
	{"neg_before", func(dt string, at func(string) string) string {
		return fmt.Sprintf("  input %%a : %[1]s[%[2]s]\n  input %%b : %[1]s[%[3]s]\n  %%0 = neg(%%b) : %[1]s[%[3]s]\n"+
			"  %%1 = exp(%%a) : %[1]s[%[2]s]\n  %%2 = concat(%%1, %%0) {axis=AXIS} : %[1]s[%[4]s]\n  output y = %%2\n",
			dt, at("past"), at("1"), at("past+1"))
	}},
	{"cast_before", func(dt string, at func(string) string) string {
		return fmt.Sprintf("  input %%a : %[1]s[%[2]s]\n  input %%b : f32[%[3]s]\n  %%0 = cast(%%b) {to=%[1]s} : %[1]s[%[3]s]\n"+
			"  %%1 = concat(%%0, %%a) {axis=AXIS} : %[1]s[%[4]s]\n  output y = %%1\n",
			dt, at("past"), at("2"), at("past+2"))
	}},
	{"around_and_read_at_the_output", func(dt string, at func(string) string) string {
		return fmt.Sprintf("  input %%a : %[1]s[%[2]s]\n  input %%b : %[1]s[%[3]s]\n  input %%s : %[1]s[%[4]s]\n"+
			"  %%0 = abs(%%b) : %[1]s[%[3]s]\n  %%1 = concat(%%a, %%0, %%a) {axis=AXIS} : %[1]s[%[4]s]\n"+
			"  %%2 = mul(%%1, %%s) : %[1]s[%[4]s]\n  %%3 = sub(%%2, %%1) : %[1]s[%[4]s]\n  output y = %%3\n  output present = %%1\n",
			dt, at("past"), at("1"), at("2*past+1"))
	}},
	// Literal tensors: their sizes are their own, read at their strides at every run.
	{"literal_operand", func(dt string, at func(string) string) string {
		return fmt.Sprintf("  input %%a : %[1]s[%[2]s]\n  %%0 = constant() {shape=[%[3]s], dtype=%[1]s, value=[%[4]s]} : %[1]s[%[3]s]\n"+
			"  %%1 = concat(%%0, %%a) {axis=AXIS} : %[1]s[%[5]s]\n  output y = %%1\n",
			dt, at("past"), at("2"), literal(at("2")), at("past+2"))
	}},
	{"literal_under_tanh", func(dt string, at func(string) string) string {
		return fmt.Sprintf("  input %%a : %[1]s[%[2]s]\n  input %%b : %[1]s[%[3]s]\n  %%0 = constant() {shape=[%[3]s], dtype=%[1]s, value=[%[4]s]} : %[1]s[%[3]s]\n"+
			"  %%1 = concat(%%a, %%0, %%b) {axis=AXIS} : %[1]s[%[5]s]\n  %%2 = tanh(%%1) : %[1]s[%[5]s]\n  output y = %%2\n",
			dt, at("past"), at("1"), literal(at("1")), at("past+2"))
	}},
}

// literal is the values of a literal tensor of the sizes in dims (comma-separated): distinct,
// signed, some not integers.
func literal(dims string) string {
	n := 1
	for _, d := range strings.Split(dims, ",") {
		var k int
		fmt.Sscan(d, &k)
		n *= k
	}
	vals := make([]string, n)
	for i := range vals {
		vals[i] = fmt.Sprint(float64(i%11)*0.375 - 1.5)
	}
	return strings.Join(vals, ",")
}

// A concat along a symbolic dim fused with computation (codegen/ptx's symconcat_fused.go): built
// once, run on the memchecked simulator at past 0, 1, 13, 31 and the bound 37 against the
// reference, and bit for bit the static build's at those sizes, in f32, f16 and bf16, at the
// leading, a middle and the last axis: elementwise ops after the concat (a scale by a broadcast
// constant, three operands), before it (on the operands, a cast), both, an input read at the
// output's sizes, the concat an output too, and a literal tensor as an operand (the concat
// alone, or under tanh).
func TestSymbolicConcatFused(t *testing.T) {
	dims := []string{"2", "3", "5", "4"}
	for _, dt := range []ir.DType{ir.F32, ir.F16, ir.BF16} {
		for _, axis := range []int{0, 2, 3} {
			for ci, tc := range concatFusedCases {
				if dt != ir.F32 && (ci+axis)%2 == 1 {
					continue // the half types take half the table
				}
				t.Run(fmt.Sprintf("%s_axis%d_%s", dt, axis, tc.name), func(t *testing.T) {
					at := func(s string) string {
						d := append([]string(nil), dims...)
						d[axis] = s
						return strings.Join(d, ",")
					}
					body := strings.ReplaceAll(tc.body(dt.String(), at), "AXIS", fmt.Sprint(axis))
					src := "graph s {\n  dims { past in [0,37] }\n" + body + "}\n"
					g, err := ir.Parse("s.gir", []byte(src))
					if err != nil {
						t.Fatalf("%v\n%s", err, src)
					}
					res, err := compiler.Compile(g, compiler.Options{})
					if err != nil {
						t.Fatal(err)
					}
					if text := string(res.Artifact.PTX); !strings.Contains(text, "operand 1 of the concat") {
						t.Fatal("the concat is not codegen/ptx's fused concat")
					}
					checkRows(t, g)
					checkStaticBits(t, g)
				})
			}
		}
	}
}

// Kernels the compiler refused while a concat along the rows under an op, or of a literal tensor,
// was: a concat along the rows under neg, a stacked output ([2, batch, 4], the concat of two
// layers) used again, and the rows of a concat of a literal tensor summed (the concat a kernel
// of its own), all run at every batch against the reference and bit for bit the static build's.
func TestSymbolicConcatFusedRows(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"neg", "  input %x : f32[batch,3]\n  %0 = concat(%x, %x) {axis=0} : f32[2*batch,3]\n  %1 = neg(%0) : f32[2*batch,3]\n  output y = %1\n"},
		{"stacked output used again", "  input %x : f32[batch,4]\n  %0 = reshape(%x) {shape=[1,16,4]} : f32[1,batch,4]\n" +
			"  %1 = concat(%0, %0) {axis=0} : f32[2,batch,4]\n  %2 = neg(%1) : f32[2,batch,4]\n  output y = %1\n  output z = %2\n"},
		{"rows of a literal tensor summed", "  input %x : f32[batch,2]\n  %c = constant() {shape=[1,2], dtype=f32, value=[1,2]} : f32[1,2]\n" +
			"  %0 = concat(%x, %c) {axis=0} : f32[batch+1,2]\n  %1 = reduce_sum(%0) {axes=[1]} : f32[batch+1]\n  output y = %1\n"},
		{"a literal tensor's rows under exp, f16", "  input %x : f16[batch,4]\n  %c = constant() {shape=[3,4], dtype=f16, value=[1,-2,0.5,3,-0.25,4,2,-1,0.125,-3,1.5,2.5]} : f16[3,4]\n" +
			"  %0 = concat(%c, %x) {axis=0} : f16[batch+3,4]\n  %1 = exp(%0) : f16[batch+3,4]\n  output y = %1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ir.Parse("s.gir", []byte("graph s {\n  dims { batch in [1,16] }\n"+tc.body+"}\n"))
			if err != nil {
				t.Fatal(err)
			}
			checkRows(t, g)
			checkStaticBits(t, g)
		})
	}
}

// A decoder's step as ONNX exports it with past_key_values: the step's key arrives [2, 1, 4, 8]
// in f32, is transposed to [2, 4, 1, 8], rotated (RoPE: k·cos + rotate_half(k)·sin, rotate_half
// a concat of its halves along the static last axis), cast to the cache's type and concatenated
// to past_k along past in [0, 40]: one kernel, run at past 0, 1, 13, 31 and the bound against
// the reference and bit for bit the static build's, in f32, f16 and bf16.
func TestSymbolicConcatFusedRoPE(t *testing.T) {
	for _, dt := range []ir.DType{ir.F32, ir.F16, ir.BF16} {
		t.Run(dt.String(), func(t *testing.T) {
			src := fmt.Sprintf(`graph rope {
  dims { past in [0,40] }
  input %%pk : %[1]s[2,4,past,8]
  input %%k : f32[2,1,4,8]
  input %%cos : f32[8]
  input %%sin : f32[8]
  %%0 = transpose(%%k) {perm=[0,2,1,3]} : f32[2,4,1,8]
  %%1 = slice(%%0) {start=[0,0,0,4], limit=[2,4,1,8]} : f32[2,4,1,4]
  %%2 = neg(%%1) : f32[2,4,1,4]
  %%3 = slice(%%0) {start=[0,0,0,0], limit=[2,4,1,4]} : f32[2,4,1,4]
  %%4 = concat(%%2, %%3) {axis=3} : f32[2,4,1,8]
  %%5 = broadcast_in_dim(%%cos) {dims=[3], shape=[2,4,1,8]} : f32[2,4,1,8]
  %%6 = broadcast_in_dim(%%sin) {dims=[3], shape=[2,4,1,8]} : f32[2,4,1,8]
  %%7 = mul(%%0, %%5) : f32[2,4,1,8]
  %%8 = mul(%%4, %%6) : f32[2,4,1,8]
  %%9 = add(%%7, %%8) : f32[2,4,1,8]
  %%10 = cast(%%9) {to=%[1]s} : %[1]s[2,4,1,8]
  %%11 = concat(%%pk, %%10) {axis=2} : %[1]s[2,4,past+1,8]
  output present_k = %%11
}
`, dt)
			g, err := ir.Parse("rope.gir", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			res, err := compiler.Compile(g, compiler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if ks := res.Artifact.Plan.Kernels; len(ks) != 1 || !strings.Contains(string(res.Artifact.PTX), "operand 1 of the concat") {
				t.Fatalf("%d kernels; want the rotation and both concats in one fused concat", len(ks))
			}
			checkRows(t, g)
			checkStaticBits(t, g)
		})
	}
}

// With --backend nvvm a concat along a symbolic dim fused with computation is codegen/nvvm's own
// (its symconcat_fused.go), not borrowed, and runs as the ptx build does: a decoder's f16 cache
// grown by its cast step with tanh after, and in f32 at a middle axis each of
// concatFusedCases' (computation before and after, three operands, the concat an output too).
func TestSymbolicConcatFusedNVVM(t *testing.T) {
	lib := libnvvm.Require(t)
	type named struct{ name, src string }
	srcs := []named{{"f16 cast before, tanh after", "graph s {\n  dims { past in [0,23] }\n  input %a : f16[2,4,past,8]\n  input %b : f32[2,4,1,8]\n" +
		"  %0 = cast(%b) {to=f16} : f16[2,4,1,8]\n  %1 = concat(%a, %0) {axis=2} : f16[2,4,past+1,8]\n  %2 = tanh(%1) : f16[2,4,past+1,8]\n  output y = %2\n}\n"}}
	for _, tc := range concatFusedCases {
		at := func(s string) string { return "2,3," + s + ",4" }
		srcs = append(srcs, named{"f32 " + tc.name, "graph s {\n  dims { past in [0,37] }\n" + strings.ReplaceAll(tc.body("f32", at), "AXIS", "2") + "}\n"})
	}
	for _, tc := range srcs {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ir.Parse("s.gir", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			checkConcatNVVM(t, g, lib.Path) // symconcat_test.go
		})
	}
}
