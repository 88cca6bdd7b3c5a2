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

// foldBatchSrc is a fold of the rows batched over h: per head j, a's rows (through a transpose
// of [h, seq, m] for f32, a buffer [seq, h, m] for f16) contracted over seq with b[seq, j, n].
func foldBatchSrc(d ir.DType, h, seq int) string {
	if d != ir.F32 {
		m, n := 16, 16
		return fmt.Sprintf("graph k {\n  input %%a : %[1]s[%[3]d,%[2]d,%[4]d]\n  input %%b : %[1]s[%[3]d,%[2]d,%[5]d]\n"+
			"  %%0 = dot_general(%%a, %%b) {lhs_batch=[1], rhs_batch=[1], lhs_contract=[0], rhs_contract=[0]} : %[1]s[%[2]d,%[4]d,%[5]d]\n  output out = %%0\n}\n", d, h, seq, m, n)
	}
	return fmt.Sprintf("graph k {\n  input %%a : f32[%[1]d,%[2]d,%[3]d]\n  input %%b : f32[%[2]d,%[1]d,%[4]d]\n  %%0 = transpose(%%a) {perm=[1,0,2]} : f32[%[2]d,%[1]d,%[3]d]\n"+
		"  %%1 = dot_general(%%0, %%b) {lhs_batch=[1], rhs_batch=[1], lhs_contract=[0], rhs_contract=[0]} : f32[%[1]d,%[3]d,%[4]d]\n  output out = %%1\n}\n", h, seq, 3, 5)
}

// TestSymbolicFoldBatchRuns: the fold batched over a symbolic h (plan.FoldsSymbolicBatch),
// built once at the bound (h 4; seq 37 for f32 on FFMA, 40 for f16 on tensor cores), runs on the
// memchecked simulator at (h, seq) = (1, 1), (3, 13) and the bound on grid.z = h, its inputs
// contiguous at the run's sizes at the start of bound-sized buffers: the result's bytes past the
// run's h untouched, the run's bit for bit the static kernel built for those sizes and within
// tolerance of the reference. The warp instructions of both are docs/perf.md's
// (go test -run TestSymbolicFoldBatchRuns -v ./codegen/ptx).
func TestSymbolicFoldBatchRuns(t *testing.T) {
	for _, c := range []struct {
		d          ir.DType
		hMax, sMax int
	}{{ir.F32, 4, 37}, {ir.F16, 4, 40}} {
		t.Run(c.d.String(), func(t *testing.T) {
			g := parse(t, foldBatchSrc(c.d, c.hMax, c.sMax))
			sizes := symtest.SizesOver(g, c.sMax, "seq", nil)
			for _, e := range sizes {
				for i := range e {
					if x, ok := e[i].IsConst(); ok && x == int64(c.hMax) {
						e[i] = sym.Sym("h")
					}
				}
			}
			text, ls, err := Module([]Kernel{{Name: "k0", Graph: g, Symbolic: true, Rows: c.hMax, Sizes: sizes}}, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			assemble(t, text)
			l := ls[0]
			if l.Work == nil || l.Work.Axis != 2 || l.Grid[2] != c.hMax {
				t.Fatalf("grid %v, work %+v: want grid.z over the batch", l.Grid, l.Work)
			}
			if strings.Contains(text, "mma.sync") != (c.d != ir.F32) {
				t.Errorf("mma.sync in the kernel: %v, want %v", c.d == ir.F32, c.d != ir.F32)
			}
			for _, r := range [][2]int{{1, 1}, {3, 13}, {c.hMax, c.sMax}} {
				h, seq := r[0], r[1]
				what := fmt.Sprintf("h %d, seq %d", h, seq)
				gs := parse(t, foldBatchSrc(c.d, h, seq))
				in, _, err := tensor.SeededValues(gs, uint64(h*seq))
				if err != nil {
					t.Fatal(err)
				}
				grid := l.Grid
				grid[2] = h
				full, st := runSym(t, text, l, g, g.Outputs[0].Value.Type.Bytes(), map[string]int{"seq": seq, "h": h, "": h}, grid, in)
				n := gs.Outputs[0].Value.Type.Bytes()
				for i, x := range full[n:] {
					if x != symUntouched {
						t.Fatalf("%s: output byte %d past the run's %d written", what, n+i, n)
					}
				}
				run := checkStaticAndRef(t, what, full[:n], gs, in, Target{SM: 80}, c.d, seq, true)
				t.Logf("%s: %d warp instructions built once, %d static (%.3f×)", what, st.WarpInsts, run.stats.WarpInsts, float64(st.WarpInsts)/float64(run.stats.WarpInsts))
			}
		})
	}
}
