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
// ./codegen/ptx): a decoder's cache grown by its step's row cast to f16, and tanh over a concat
// of two f32 operands along the leading axis.
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
				gs := parse(t, "graph s {\n"+strings.NewReplacer("2*"+static, fmt.Sprint(2*past), static+"+1", fmt.Sprint(past+1)).Replace(c.src(static))+"}\n")
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
