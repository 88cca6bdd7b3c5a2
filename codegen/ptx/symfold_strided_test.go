package ptx

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/gcomp/gcomp/ir"
)

// foldStridedSrc is a weight gradient whose operand is a transpose of [m, seq]: strided at the
// bound, its free dim steps seq elements, so the run's strides are not the bound's. right puts
// it on the right of the product.
func foldStridedSrc(d ir.DType, m, n, seq int, right bool) string {
	if right {
		return fmt.Sprintf("graph k {\n  input %%x : %[1]s[%[4]d,%[2]d]\n  input %%a : %[1]s[%[3]d,%[4]d]\n  %%0 = transpose(%%a) {perm=[1,0]} : %[1]s[%[4]d,%[3]d]\n"+
			"  %%1 = dot_general(%%x, %%0) {lhs_contract=[0], rhs_contract=[0]} : %[1]s[%[2]d,%[3]d]\n  output out = %%1\n}\n", d, n, m, seq)
	}
	return fmt.Sprintf("graph k {\n  input %%a : %[1]s[%[2]d,%[4]d]\n  input %%x : %[1]s[%[4]d,%[3]d]\n  %%0 = transpose(%%a) {perm=[1,0]} : %[1]s[%[4]d,%[2]d]\n"+
		"  %%1 = dot_general(%%0, %%x) {lhs_contract=[0], rhs_contract=[0]} : %[1]s[%[2]d,%[3]d]\n  output out = %%1\n}\n", d, m, n, seq)
}

// A fold whose operand is strided at the bound by a symbolic dim (a transpose of [m, seq]) reads
// it through its views at the run's strides (symFoldGeneric): built once at the bound, it takes
// seq as a parameter, compares no copy with the bound's K, assembles, and runs on the memchecked
// simulator at seq 1, a prime and the bound within tolerance of the reference and bit for bit
// the static kernel built for that seq, on the left (FFMA, f32) or the right (tensor cores, f16
// and bf16). The warp instructions of both are docs/perf.md's
// (go test -run TestSymbolicFoldStridedBySizes -v ./codegen/ptx).
func TestSymbolicFoldStridedBySizes(t *testing.T) {
	for _, c := range []struct {
		d           ir.DType
		m, n, bound int
		right       bool
	}{{ir.F32, 2, 8, 37, false}, {ir.F32, 6, 3, 37, true}, {ir.F16, 16, 16, 40, true}, {ir.BF16, 16, 16, 40, false}} {
		t.Run(fmt.Sprintf("%s right=%v", c.d, c.right), func(t *testing.T) {
			text, l := runFoldOnce(t, c.d, c.bound, 1, func(seq int) string { return foldStridedSrc(c.d, c.m, c.n, seq, c.right) })
			seqParam := false
			for _, a := range l.Params {
				seqParam = seqParam || a.Kind == ArgSize && a.Expr == "seq"
			}
			if !seqParam {
				t.Errorf("params %+v: want seq's", l.Params)
			}
			if re := regexp.MustCompile(fmt.Sprintf(`setp\.lt\.s32 %%p\d+, %%r\d+, %d;`, c.bound)); re.MatchString(text) {
				t.Error("a copy compares its k with the bound's K")
			}
		})
	}
}
