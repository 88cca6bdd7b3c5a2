package compiler_test

import (
	"fmt"
	"strings"
	"testing"

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
}

// A concat along a symbolic dim fused with computation (codegen/ptx's symconcat_fused.go): built
// once, run on the memchecked simulator at past 0, 1, 13, 31 and the bound 37 against the
// reference, and bit for bit the static build's at those sizes, in f32, f16 and bf16, at the
// leading, a middle and the last axis: elementwise ops after the concat (a scale by a broadcast
// constant, three operands), before it (on the operands, a cast), both, an input read at the
// output's sizes, and the concat an output too.
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
