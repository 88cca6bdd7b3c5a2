package ptx

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// TestSymbolicConcatFusedCost: the fused concat (symconcat_fused.go) built once at past 63 and
// run on the memchecked simulator at past 0, 1, 13 and 63, against the static loop kernel built
// at each past on the same inputs: bit for bit equal, within tolerance of the reference. The
// warp instructions of both are docs/perf.md's (go test -run TestSymbolicConcatFusedCost -v
// ./codegen/ptx): a decoder's cache grown by its step's row cast to f16, tanh over a concat
// of three f32 operands along the leading axis, and literal tensors (a concat's operand, plain
// or under tanh, or broadcast beside it), read at their own strides.
func TestSymbolicConcatFusedCost(t *testing.T) {
	for _, c := range []struct {
		name, dt string
		src      func(past string) string
	}{
		{"cast before, f16 cache [2,4,past,8]", "f16", func(p string) string {
			return fmt.Sprintf("  input %%a : f16[2,4,%[1]s,8]\n  input %%b : f32[2,4,1,8]\n  %%0 = cast(%%b) {to=f16} : f16[2,4,1,8]\n"+
				"  %%1 = concat(%%a, %%0) {axis=2} : f16[2,4,%[1]s+1,8]\n  output out = %%1\n", p)
		}},
		{"tanh after, f32 [past+past+1,32]", "f32", func(p string) string {
			return fmt.Sprintf("  input %%a : f32[%[1]s,32]\n  input %%b : f32[1,32]\n  input %%c : f32[%[1]s,32]\n"+
				"  %%0 = concat(%%a, %%b, %%c) {axis=0} : f32[2*%[1]s+1,32]\n  %%1 = tanh(%%0) : f32[2*%[1]s+1,32]\n  output out = %%1\n", p)
		}},
		// A literal tensor's sizes are its own: read at its strides at every run.
		{"a literal tensor after, f32 [past+2,4]", "f32", func(p string) string {
			return fmt.Sprintf("  input %%a : f32[%[1]s,4]\n  %%0 = constant() {shape=[2,4], dtype=f32, value=[1,-2,3.5,0.25,-7,8,0.125,-0.5]} : f32[2,4]\n"+
				"  %%1 = concat(%%a, %%0) {axis=0} : f32[%[1]s+2,4]\n  output out = %%1\n", p)
		}},
		{"a literal tensor before, tanh after, f16 [2,past+1,4]", "f16", func(p string) string {
			return fmt.Sprintf("  input %%a : f16[2,%[1]s,4]\n  %%0 = constant() {shape=[2,1,4], dtype=f16, value=[1,-2,3.5,0.25,-7,8,0.125,-0.5]} : f16[2,1,4]\n"+
				"  %%1 = concat(%%0, %%a) {axis=1} : f16[2,%[1]s+1,4]\n  %%2 = tanh(%%1) : f16[2,%[1]s+1,4]\n  output out = %%2\n", p)
		}},
		{"a literal tensor broadcast beside, f32 [past+1,8]", "f32", func(p string) string {
			return fmt.Sprintf("  input %%a : f32[%[1]s,8]\n  input %%b : f32[1,8]\n  %%0 = concat(%%a, %%b) {axis=0} : f32[%[1]s+1,8]\n"+
				"  %%1 = constant() {shape=[8], dtype=f32, value=[1,2,3,4,5,6,7,8]} : f32[8]\n  %%2 = broadcast_in_dim(%%1) {dims=[1], shape=[64,8]} : f32[%[1]s+1,8]\n"+
				"  %%3 = add(%%0, %%2) : f32[%[1]s+1,8]\n  output out = %%3\n", p)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := concatKernel(t, "graph s {\n  dims { past in [0,63] }\n"+c.src("past")+"}\n")
			k.Name = "k0"
			text, ls, err := Module([]Kernel{k}, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			assemble(t, text)
			for _, past := range []int{0, 1, 13, 63} {
				static := fmt.Sprint(past)
				gs := parse(t, "graph s {\n"+strings.NewReplacer("2*"+static, fmt.Sprint(2*past), static+"+1", fmt.Sprint(past+1), static+"+2", fmt.Sprint(past+2), "shape=[64,", fmt.Sprintf("shape=[%d,", past+1)).Replace(c.src(static))+"}\n")
				in, _, err := tensor.SeededValues(gs, uint64(past))
				if err != nil {
					t.Fatal(err)
				}
				n := gs.Outputs[0].Value.Type.Shape.NumElements()
				grid := [3]int{ls[0].Work.Grid(int64(n)), 1, 1}
				got, st := runSym(t, text, ls[0], k.Graph, gs.Outputs[0].Value.Type.Bytes(), map[string]int{"past": past, "": n}, grid, in)
				prec := map[string]ir.DType{"f16": ir.F16, "f32": ir.F32}[c.dt]
				run := checkStaticAndRef(t, fmt.Sprintf("past %d", past), got, gs, in, Target{SM: 80}, prec, 1, true)
				t.Logf("past %d of 63: %d warp instructions built once, %d static (%.3f×)", past, st.WarpInsts, run.stats.WarpInsts, float64(st.WarpInsts)/float64(run.stats.WarpInsts))
			}
		})
	}
}
