package ptx

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// columnInner are reductions keeping their leading symbolic rows (the batch, %[1]d) over a
// contiguous block of static axes followed by kept ones: the column template in the static
// build and, at symbolic sizes, in the symbolic one (symcolumn.go). tiles is the bound's column
// tiles per row: the size parameter's scale.
var columnInner = []struct {
	name, src string
	tiles     int
}{
	{"f32 upsampling backward, [batch,16,8,2,8] over axis 3", "graph k {\n  input %%dy : f32[%[1]d,16,8,2,8]\n" +
		"  %%0 = reduce_sum(%%dy) {axes=[3]} : f32[%[1]d,16,8,8]\n  output out = %%0\n}\n", 128},
	{"f16 middle axis, keepdims, spread back", "graph k {\n  input %%x : f16[%[1]d,5,3]\n" +
		"  %%0 = reduce_sum(%%x) {axes=[1], keepdims=true} : f16[%[1]d,1,3]\n" +
		"  %%1 = broadcast_in_dim(%%0) {shape=[%[1]d,5,3], dims=[0,1,2]} : f16[%[1]d,5,3]\n" +
		"  %%2 = sub(%%x, %%1) : f16[%[1]d,5,3]\n  output out = %%0\n  output y = %%2\n}\n", 1},
	{"bf16 inner axis, two column tiles (C = 40)", "graph k {\n  input %%x : bf16[%[1]d,7,40]\n" +
		"  %%0 = reduce_sum(%%x) {axes=[1]} : bf16[%[1]d,40]\n  output out = %%0\n}\n", 2},
	{"f32 max over middle axes [2, 3] of [batch,3,4,5,6]", "graph k {\n  input %%x : f32[%[1]d,3,4,5,6]\n" +
		"  %%0 = reduce_max(%%x) {axes=[2,3]} : f32[%[1]d,3,6]\n  output out = %%0\n}\n", 3},
	{"f32 softmax over a middle axis", "graph k {\n  input %%x : f32[%[1]d,6,4]\n" +
		"  %%0 = reduce_max(%%x) {axes=[1]} : f32[%[1]d,4]\n  %%1 = broadcast_in_dim(%%0) {shape=[%[1]d,6,4], dims=[0,2]} : f32[%[1]d,6,4]\n" +
		"  %%2 = sub(%%x, %%1) : f32[%[1]d,6,4]\n  %%3 = exp(%%2) : f32[%[1]d,6,4]\n  %%4 = reduce_sum(%%3) {axes=[1]} : f32[%[1]d,4]\n" +
		"  %%5 = broadcast_in_dim(%%4) {shape=[%[1]d,6,4], dims=[0,2]} : f32[%[1]d,6,4]\n  %%6 = div(%%3, %%5) : f32[%[1]d,6,4]\n  output out = %%6\n}\n", 1},
}

// TestSymbolicColumnInner: each reduction built once over a batch bound of 9 takes the column
// template (the static build's, the same grid at the bound, its tile count the size parameter)
// and runs on the memchecked, racechecked simulator at batches 0, 1, a prime and the bound,
// inputs at the run's sizes at the start of bound-sized buffers: every output's run bytes are bit
// for bit the static kernel's built at that batch and within tolerance of the reference, and the
// bytes past the run's are untouched. The warp instructions of both are docs/perf.md's (go test
// -run TestSymbolicColumnInner -v ./codegen/ptx).
func TestSymbolicColumnInner(t *testing.T) {
	const bound = 9
	for _, tc := range columnInner {
		t.Run(tc.name, func(t *testing.T) {
			g := parse(t, fmt.Sprintf(tc.src, bound))
			k := Kernel{Name: "k0", Graph: g, Symbolic: true, Rows: bound}
			text, ls, err := Module([]Kernel{k}, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			assemble(t, text)
			l := ls[0]
			_, sl, err := Generate(Kernel{Name: "k0", Graph: g}, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			w := l.Work
			switch {
			case !strings.Contains(text, "partials") || l.Block != [3]int{colWidth * colRows, 1, 1}:
				t.Errorf("block %v: not the column template", l.Block)
			case w == nil || w.Scale != tc.tiles || w.Tile != 1 || w.Axis != 0 || w.MaxBlocks != l.Grid[0]:
				t.Errorf("work %+v, want %d tiles per row, one per block along x, at most the bound's grid %v", w, tc.tiles, l.Grid)
			case l.Grid[0] != bound*tc.tiles:
				t.Errorf("grid %v, want a block per tile at the bound (%d)", l.Grid, bound*tc.tiles)
			case sl.Grid != l.Grid || sl.Block != l.Block:
				t.Errorf("the static kernel's launch %v×%v, the symbolic one's at the bound %v×%v", sl.Grid, sl.Block, l.Grid, l.Block)
			}
			if t.Failed() {
				return
			}
			for _, n := range []int{0, 1, 7, bound} {
				gs := parse(t, fmt.Sprintf(tc.src, n))
				in, _, err := tensor.SeededValues(gs, uint64(n+1))
				if err != nil {
					t.Fatal(err)
				}
				// runSymAttn launches one block per unit of Work.Elements (every size parameter
				// without an expression is that count): the column work's grid, the run's tiles,
				// which stay below its MaxBlocks here.
				lw := *l.Work
				lw.Elements = fmt.Sprint(n * tc.tiles)
				lt := l
				lt.Work = &lw
				got, st := runSymAttn(t, text, "k0", lt, g, map[string]int64{}, in)
				what := fmt.Sprintf("batch %d of %d", n, bound)
				if n == 0 {
					for name, b := range got {
						if bytes.ContainsFunc(b, func(r rune) bool { return r != symUntouched }) {
							t.Errorf("%s: %s written", what, name)
						}
					}
					continue
				}
				run := runStatic(t, "k0", gs, in, Target{SM: 80})
				outs := symOutputs(t, gs, got, run, n, 0)
				want, err := ref.Run(gs, in, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range gs.Outputs {
					compare(t, what+" "+o.Name, outs[o.Name], want[o.Name], false, o.Value.Type.DType, 40, 1)
				}
				t.Logf("%s: %d warp instructions built once, %d static (%.3f×)", what, st.WarpInsts, run.stats.WarpInsts, float64(st.WarpInsts)/float64(run.stats.WarpInsts))
			}
		})
	}
}
