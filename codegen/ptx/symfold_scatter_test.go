package ptx

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/internal/symtest"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// runBlockLimit is the most warp instructions a scattered fold built once may issue at a run's
// sizes per the static kernel's at those sizes: the warps past the run's count exit first thing
// (a few instructions each) and the combine reads the bound's slots, so it tracks the static
// kernel at any size (at the bound the views' index arithmetic at the run's sizes costs most).
// Launching the bound's block whatever the run's count cost 8.2× at seq 1 (docs/perf.md).
const runBlockLimit = 2.25

// scatterStatsSrc is BatchNorm's variance over [batch, 3, 4, 4]'s axes 0, 2 and 3: two sums (the
// same identity), one kept output.
func scatterStatsSrc(d ir.DType, batch int) string {
	return sizedSrc(d, batch, `graph k {
  input %x : T[S,3,4,4]
  %s = reduce_sum(%x) {axes=[0,2,3], keepdims=true} : T[1,3,1,1]
  %sb = broadcast_in_dim(%s) {shape=[S,3,4,4], dims=[0,1,2,3]} : T[S,3,4,4]
  %c = sub(%x, %sb) : T[S,3,4,4]
  %sq = mul(%c, %c) : T[S,3,4,4]
  %v = reduce_sum(%sq) {axes=[0,2,3], keepdims=true} : T[1,3,1,1]
  output out = %v
}`)
}

// scatterMaxSumSrc folds [batch, 5, 7] over axes 0 and 2 twice, a maximum and then a sum (two
// identities in the slots), and spreads the sum back: a full-shape output over the run's count.
func scatterMaxSumSrc(d ir.DType, batch int) string {
	return sizedSrc(d, batch, `graph k {
  input %x : T[S,5,7]
  %m = reduce_max(%x) {axes=[0,2]} : T[5]
  %mb = broadcast_in_dim(%m) {shape=[S,5,7], dims=[1]} : T[S,5,7]
  %e = sub(%x, %mb) : T[S,5,7]
  %s = reduce_sum(%e) {axes=[0,2]} : T[5]
  %sb = broadcast_in_dim(%s) {shape=[S,5,7], dims=[1]} : T[S,5,7]
  %y = sub(%x, %sb) : T[S,5,7]
  output out = %y
}`)
}

// sizedSrc is src with S standing for n and T for d (as lines writes them).
func sizedSrc(d ir.DType, n int, src string) string {
	var sb strings.Builder
	lines(&sb, d, n)(src)
	return sb.String()
}

// TestScatteredFoldRunBlock: a scattered fold built once at the bound runs the run's block
// (symfold_scatter.go) at sizes whose count fills one warp, a few (not a power of two: slots
// of warps that left hold the identity) and every warp of the bound's block, on the memchecked
// and racechecked simulator: bit for bit the static kernel built for that size, within tolerance
// of the reference, and issuing at most runBlockLimit times the static kernel's warp
// instructions (deterministic counters, so a fold that runs the bound's block again fails).
func TestScatteredFoldRunBlock(t *testing.T) {
	for _, c := range []struct {
		name  string
		d     ir.DType
		src   func(d ir.DType, n int) string
		dim   string
		bound int
		rows  int   // the kernel's rows per unit of the dim
		sizes []int // the dim's sizes run
		k     int   // terms summed per output per unit of the dim, for the tolerance
	}{
		{"head sums through views", ir.F32, headSumViewSrc, "seq", 37, 2, []int{1, 5, 13, 37}, 8},
		{"head sums through views", ir.F16, headSumViewSrc, "seq", 37, 2, []int{1, 37}, 8},
		{"variance, two sums", ir.F32, scatterStatsSrc, "batch", 40, 1, []int{1, 7, 13, 40}, 32},
		{"maximum, then a sum spread back", ir.F16, scatterMaxSumSrc, "batch", 20, 1, []int{1, 13, 20}, 7},
	} {
		t.Run(c.name+" "+c.d.String(), func(t *testing.T) {
			g := parse(t, c.src(c.d, c.bound))
			k := Kernel{Name: "k0", Graph: g, Symbolic: true, Rows: c.rows * c.bound, Sizes: symtest.SizesOver(g, c.bound, c.dim, nil)}
			text, ls, err := Module([]Kernel{k}, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			assemble(t, text)
			l := ls[0]
			if l.Block[0] != 256 || !strings.Contains(text, "exit;") {
				t.Fatalf("block %v, exit %v: want the bound's 256 threads, the warps past the run leaving", l.Block, strings.Contains(text, "exit;"))
			}
			for _, s := range c.sizes {
				what := fmt.Sprintf("%s %d of %d", c.dim, s, c.bound)
				gs := parse(t, c.src(c.d, s))
				in, _, err := tensor.SeededValues(gs, uint64(s))
				if err != nil {
					t.Fatal(err)
				}
				n := l.Work.Scale * c.rows * s
				w := artifact.Work{Elements: "n", Vector: l.Work.Vector, MaxBlocks: l.Work.MaxBlocks, Tile: l.Work.Tile, Axis: l.Work.Axis}
				got, st := runSym(t, text, l, g, gs.Outputs[0].Value.Type.Bytes(), map[string]int{c.dim: s, "": n}, w.Grid(int64(n), l.Grid, l.Block), in)
				run := checkStaticAndRef(t, what, got, gs, in, Target{SM: 80}, c.d, c.k*s, true)
				ratio := float64(st.WarpInsts) / float64(run.stats.WarpInsts)
				t.Logf("%s (%d elements folded per kept one): %d warp instructions built once, %d static (%.2f×)", what, n, st.WarpInsts, run.stats.WarpInsts, ratio)
				if ratio > runBlockLimit {
					t.Errorf("%s: %d warp instructions built once, %.2f× the static kernel's %d (at most %.2f×)", what, st.WarpInsts, ratio, run.stats.WarpInsts, runBlockLimit)
				}
			}
		})
	}
}
