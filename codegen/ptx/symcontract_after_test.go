package ptx

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/internal/symtest"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/tensor"
)

// afterSrc is contractSrc's xty or scores with a static batch of 2 before the symbolic one of nb
// elements: [2, nb, seq, 16]ᵀ·[2, nb, seq, 24] → [2, nb, 16, 24], or [2, nb, 12, seq]·[2, nb, seq, 16].
func afterSrc(kind string, d ir.DType, nb, seq int) string {
	t := d.String()
	if kind == "xty" {
		return fmt.Sprintf("graph k {\n  input %%x : %[1]s[2,%[2]d,%[3]d,16]\n  input %%y : %[1]s[2,%[2]d,%[3]d,24]\n  %%0 = dot_general(%%x, %%y) {lhs_batch=[0,1], lhs_contract=[2], rhs_batch=[0,1], rhs_contract=[2]} : %[1]s[2,%[2]d,16,24]\n  output out = %%0\n}\n", t, nb, seq)
	}
	return fmt.Sprintf("graph k {\n  input %%p : %[1]s[2,%[2]d,12,%[3]d]\n  input %%v : %[1]s[2,%[2]d,%[3]d,16]\n  %%0 = dot_general(%%p, %%v) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[2]} : %[1]s[2,%[2]d,12,16]\n  output out = %%0\n}\n", t, nb, seq)
}

// TestSymbolicContractBatchAfter: batched products whose symbolic batch dim b (at most 3) follows
// a static one, K seq, built once and run at (seq, b) = (1, 1), (13, 2), (the bound, 3): grid.z
// covers 2·b and is split at the run's b (symcontract_after.go), within tolerance of the reference
// and bit for bit the static kernel's. At b 1 and 3 the bound's split would address the same
// elements; b = 2 tells them apart. The warp instructions of both are docs/perf.md's
// (go test -run TestSymbolicContractBatchAfter -v ./codegen/ptx).
func TestSymbolicContractBatchAfter(t *testing.T) {
	for _, c := range []struct {
		kind  string
		d     ir.DType
		bound int
	}{{"xty", ir.F32, 37}, {"scores", ir.F32, 37}, {"xty", ir.F16, 40}, {"scores", ir.BF16, 40}} {
		t.Run(fmt.Sprintf("%s/%s", c.kind, c.d), func(t *testing.T) {
			tgt := Target{SM: 80}
			g := parse(t, afterSrc(c.kind, c.d, 3, c.bound))
			sizes := symtest.SizesOver(g, c.bound, "seq", nil)
			for _, s := range sizes {
				s[1] = sym.Sym("b")
			}
			text, ls, err := Module([]Kernel{{Name: "k0", Graph: g, Symbolic: true, Rows: 6, Sizes: sizes}}, tgt)
			if err != nil {
				t.Fatal(err)
			}
			assemble(t, text)
			if mma := strings.Contains(text, "mma.sync"); mma != (c.d != ir.F32) {
				t.Errorf("tensor cores %v for %s", mma, c.d)
			}
			l := ls[0]
			if l.Work == nil || l.Work.Axis != 2 {
				t.Fatalf("work %+v, want grid.z to follow the batch", l.Work)
			}
			for _, r := range [][2]int{{1, 1}, {13, 2}, {c.bound, 3}} {
				seq, nb := r[0], r[1]
				gs := parse(t, afterSrc(c.kind, c.d, nb, seq))
				in, _, err := tensor.SeededValues(gs, uint64(seq))
				if err != nil {
					t.Fatal(err)
				}
				grid := l.Grid
				grid[2] = 2 * nb
				got, st := runSym(t, text, l, g, gs.Outputs[0].Value.Type.Bytes(), map[string]int{"seq": seq, "b": nb, "": 2 * nb}, grid, in)
				run := checkStaticAndRef(t, fmt.Sprintf("seq %d batch 2×%d", seq, nb), got, gs, in, tgt, contractPrec(c.d, false), seq, true)
				t.Logf("seq %d of %d, batch 2×%d: %d warp instructions built once, %d static (%.3f×)", seq, c.bound, nb, st.WarpInsts, run.stats.WarpInsts, float64(st.WarpInsts)/float64(run.stats.WarpInsts))
			}
		})
	}
}
