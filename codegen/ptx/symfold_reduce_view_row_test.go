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

// mergedHeads is the head of a graph reading V [2, 2, seq, 4] merged back into [2, seq, 8]
// (%1) through a transpose (%0) and a reshape.
func mergedHeads(d ir.DType, seq int) string {
	return fmt.Sprintf("graph k {\n  input %%dq : %[2]s[2,2,%[1]d,4]\n  %%0 = transpose(%%dq) {perm=[0,2,1,3]} : %[2]s[2,%[1]d,2,4]\n"+
		"  %%1 = reshape(%%0) {shape=[2,%[1]d,8]} : %[2]s[2,%[1]d,8]\n", seq, d)
}

// lines returns a writer of IR lines to sb, S standing for seq and T for d.
func lines(sb *strings.Builder, d ir.DType, seq int) func(string) {
	r := strings.NewReplacer("S", fmt.Sprint(seq), "T", d.String())
	return func(f string) { sb.WriteString(r.Replace(f) + "\n") }
}

// rowSumViewSrc sums each merged row (the row template over the kernel's rows).
func rowSumViewSrc(d ir.DType, seq int) string {
	return mergedHeads(d, seq) + fmt.Sprintf("  %%2 = reduce_sum(%%1) {axes=[2]} : %[2]s[2,%[1]d]\n  output out = %%2\n}\n", seq, d)
}

// layerNormViewSrc is a layer norm (no affine) over the merged rows: two row reductions, the
// row read three times, a full-shape output.
func layerNormViewSrc(d ir.DType, seq int) string {
	var sb strings.Builder
	sb.WriteString(mergedHeads(d, seq))
	p := lines(&sb, d, seq)
	p("  %n = constant() {dtype=T, shape=[2,S,1], value=[8.0]} : T[2,S,1]")
	p("  %eps = constant() {dtype=T, shape=[2,S,1], value=[1e-05]} : T[2,S,1]")
	p("  %s = reduce_sum(%1) {axes=[2], keepdims=true} : T[2,S,1]")
	p("  %mean = div(%s, %n) : T[2,S,1]")
	p("  %meanb = broadcast_in_dim(%mean) {dims=[0,1,2], shape=[2,S,8]} : T[2,S,8]")
	p("  %c = sub(%1, %meanb) : T[2,S,8]")
	p("  %sq = mul(%c, %c) : T[2,S,8]")
	p("  %ss = reduce_sum(%sq) {axes=[2], keepdims=true} : T[2,S,1]")
	p("  %var = div(%ss, %n) : T[2,S,1]")
	p("  %ve = add(%var, %eps) : T[2,S,1]")
	p("  %r = rsqrt(%ve) : T[2,S,1]")
	p("  %rb = broadcast_in_dim(%r) {dims=[0,1,2], shape=[2,S,8]} : T[2,S,8]")
	p("  %y = mul(%c, %rb) : T[2,S,8]")
	p("  output out = %y\n}")
	return sb.String()
}

// softmaxViewSrc is a softmax over the merged rows (its max and sum folded online).
func softmaxViewSrc(d ir.DType, seq int) string {
	var sb strings.Builder
	sb.WriteString(mergedHeads(d, seq))
	p := lines(&sb, d, seq)
	p("  %m = reduce_max(%1) {axes=[2], keepdims=true} : T[2,S,1]")
	p("  %mb = broadcast_in_dim(%m) {dims=[0,1,2], shape=[2,S,8]} : T[2,S,8]")
	p("  %z = sub(%1, %mb) : T[2,S,8]")
	p("  %e = exp(%z) : T[2,S,8]")
	p("  %s = reduce_sum(%e) {axes=[2], keepdims=true} : T[2,S,1]")
	p("  %sb = broadcast_in_dim(%s) {dims=[0,1,2], shape=[2,S,8]} : T[2,S,8]")
	p("  %y = div(%e, %sb) : T[2,S,8]")
	p("  output out = %y\n}")
	return sb.String()
}

// headSumViewSrc sums each head of the transposed heads [2, seq, 2, 4] over the rows and its
// features: a fold over the scattered axes 0, 1 and 3 (the row template over the kept heads).
func headSumViewSrc(d ir.DType, seq int) string {
	return fmt.Sprintf("graph k {\n  input %%dq : %[2]s[2,2,%[1]d,4]\n  %%0 = transpose(%%dq) {perm=[0,2,1,3]} : %[2]s[2,%[1]d,2,4]\n"+
		"  %%1 = reduce_sum(%%0) {axes=[0,1,3]} : %[2]s[2]\n  output out = %%1\n}\n", seq, d)
}

// headsSumViewSrc sums the transposed heads [2, seq, 2, 4] over the heads: the column template
// keeping the rows (its tiles the size, symcolumn.go).
func headsSumViewSrc(d ir.DType, seq int) string {
	return fmt.Sprintf("graph k {\n  input %%dq : %[2]s[2,2,%[1]d,4]\n  %%0 = transpose(%%dq) {perm=[0,2,1,3]} : %[2]s[2,%[1]d,2,4]\n"+
		"  %%1 = reduce_sum(%%0) {axes=[2]} : %[2]s[2,%[1]d,4]\n  output out = %%1\n}\n", seq, d)
}

// TestSymbolicRowReduceViewRuns: row reductions over the merged heads' rows (a sum, a layer
// norm, a softmax), a fold over scattered axes of the transposed heads and a sum over the heads
// keeping the rows (the column template over tiles of the rows), each built once at
// seq = 37, run on the memchecked simulator at seq 1, a prime and the bound (inputs contiguous
// at the run's sizes at the start of bound-sized buffers whose rest is never written; the grid
// the runtime launches at those sizes): within
// tolerance of the reference and bit for bit the static kernel built for that seq. The warp
// instructions of both are docs/perf.md's (go test -run TestSymbolicRowReduceViewRuns -v
// ./codegen/ptx).
func TestSymbolicRowReduceViewRuns(t *testing.T) {
	const bound = 37
	for _, c := range []struct {
		name string
		d    ir.DType
		src  func(d ir.DType, seq int) string
		k    int // terms summed per output, for the tolerance
	}{
		{"row sum", ir.F32, rowSumViewSrc, 8}, {"row sum", ir.BF16, rowSumViewSrc, 8},
		{"layer norm", ir.F32, layerNormViewSrc, 8}, {"layer norm", ir.F16, layerNormViewSrc, 8},
		{"softmax", ir.F32, softmaxViewSrc, 8}, {"softmax", ir.BF16, softmaxViewSrc, 8},
		{"head sums", ir.F32, headSumViewSrc, 0}, {"head sums", ir.F16, headSumViewSrc, 0},
		{"sums over the heads", ir.F32, headsSumViewSrc, 2}, {"sums over the heads", ir.BF16, headsSumViewSrc, 2},
	} {
		t.Run(c.name+" "+c.d.String(), func(t *testing.T) {
			g := parse(t, c.src(c.d, bound))
			text, ls, err := Module([]Kernel{{Name: "k0", Graph: g, Symbolic: true, Rows: 2 * bound, Sizes: symtest.SizesOver(g, bound, "seq", nil)}}, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			assemble(t, text)
			l := ls[0]
			if l.Work == nil {
				t.Fatal("no symbolic work")
			}
			for _, seq := range []int{1, 13, bound} {
				what := fmt.Sprintf("seq %d of %d", seq, bound)
				gs := parse(t, c.src(c.d, seq))
				in, _, err := tensor.SeededValues(gs, uint64(seq))
				if err != nil {
					t.Fatal(err)
				}
				n := l.Work.Scale * 2 * seq
				w := artifact.Work{Elements: "n", Vector: l.Work.Vector, MaxBlocks: l.Work.MaxBlocks, Tile: l.Work.Tile, Axis: l.Work.Axis}
				grid := w.Grid(int64(n), l.Grid, l.Block) // the runtime's at the run's sizes
				got, st := runSym(t, text, l, g, gs.Outputs[0].Value.Type.Bytes(), map[string]int{"seq": seq, "": n}, grid, in)
				k := c.k
				if k == 0 {
					k = 2 * seq * 4
				}
				run := checkStaticAndRef(t, what, got, gs, in, Target{SM: 80}, c.d, k, true)
				t.Logf("%s: %d warp instructions built once, %d static (%.3f×)", what, st.WarpInsts, run.stats.WarpInsts, float64(st.WarpInsts)/float64(run.stats.WarpInsts))
			}
		})
	}
}
