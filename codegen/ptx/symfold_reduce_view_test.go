package ptx

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/internal/symtest"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// reduceViewSrc is a bias gradient summing, over the rows, V [2, 2, seq, 4] merged back into
// [2, seq, 8] through a transpose and a reshape (op reduce_sum, or reduce_max).
func reduceViewSrc(d ir.DType, seq int, op string) string {
	return fmt.Sprintf("graph k {\n  input %%dq : %[2]s[2,2,%[1]d,4]\n  %%0 = transpose(%%dq) {perm=[0,2,1,3]} : %[2]s[2,%[1]d,2,4]\n"+
		"  %%1 = reshape(%%0) {shape=[2,%[1]d,8]} : %[2]s[2,%[1]d,8]\n  %%2 = %[3]s(%%1) {axes=[0,1]} : %[2]s[8]\n  output out = %%2\n}\n", seq, d, op)
}

// transposeViewSrc is one head's k bias gradient: kᵀ's gradient [2, 1, 8, seq] summed over the
// rows of [2, 1, seq, 8], read back through the transpose that moves seq (op as reduceViewSrc's).
func transposeViewSrc(d ir.DType, seq int, op string) string {
	return fmt.Sprintf("graph k {\n  input %%dkt : %[2]s[2,1,8,%[1]d]\n  %%0 = transpose(%%dkt) {perm=[0,1,3,2]} : %[2]s[2,1,%[1]d,8]\n"+
		"  %%1 = %[3]s(%%0) {axes=[0,1,2]} : %[2]s[8]\n  output out = %%1\n}\n", seq, d, op)
}

// TestSymbolicFoldReduceViewRuns: the column reduction reading its operand through transpose
// and reshape views that move the rows (or through a transpose alone, kᵀ's), built once at seq = 37, runs on the memchecked simulator
// at seq 1, a prime and the bound (its input contiguous at the run's sizes at the start of a
// bound-sized buffer whose rest is never written): within tolerance of the reference and bit for
// bit the static kernel built for that seq (the same row loop). The warp instructions of both
// are docs/perf.md's (go test -run TestSymbolicFoldReduceViewRuns -v ./codegen/ptx); past seq 1
// (where the prologue weighs most) they stay within most of the static kernel's: a reshape that
// keeps the batch and seq dims divides by seq once per element, as the static kernel by 37, and
// kᵀ's unit head dim by nothing (symfold_reduce_reshape.go; 1.26–1.37× and 1.09–1.13× before).
func TestSymbolicFoldReduceViewRuns(t *testing.T) {
	const bound, most = 37, 1.05 // most: warp instructions over the static kernel's, past seq 1
	for _, c := range []struct {
		d   ir.DType
		op  string
		src func(d ir.DType, seq int, op string) string
	}{{ir.F32, "reduce_sum", reduceViewSrc}, {ir.F16, "reduce_sum", reduceViewSrc}, {ir.BF16, "reduce_max", reduceViewSrc},
		{ir.F32, "reduce_sum", transposeViewSrc}, {ir.BF16, "reduce_sum", transposeViewSrc}} {
		name := c.d.String() + " " + c.op
		if c.src(c.d, 1, c.op) == transposeViewSrc(c.d, 1, c.op) {
			name += " of kᵀ"
		}
		t.Run(name, func(t *testing.T) {
			g := parse(t, c.src(c.d, bound, c.op))
			text, ls, err := Module([]Kernel{{Name: "k0", Graph: g, Symbolic: true, Rows: 2 * bound, Sizes: symtest.SizesOver(g, bound, "seq", nil)}}, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			assemble(t, text)
			for _, seq := range []int{1, 13, bound} {
				what := fmt.Sprintf("seq %d of %d", seq, bound)
				if r := checkFoldRun(t, what, text, ls[0], g, parse(t, c.src(c.d, seq, c.op)), seq, 2*seq, c.d); seq > 1 && r > most {
					t.Errorf("%s: %.3f× the static kernel's warp instructions, want at most %.2f×", what, r, most)
				}
			}
		})
	}
}

// Every reduction template reads views at the run's sizes (symfold_reduce_view_row_test.go), but
// only where the view's linear index is the same at the bound and at the run: sizes whose static
// trailing dims are not the bound's are refused, by the column, the row and the scattered
// templates alike, not read at the bound's index arithmetic.
func TestSymbolicReduceViewsRefused(t *testing.T) {
	for _, c := range []struct{ name, src string }{
		{"column", reduceViewSrc(ir.F32, 13, "reduce_sum")},
		{"row", rowSumViewSrc(ir.F32, 13)},
		{"layer norm", layerNormViewSrc(ir.F16, 13)},
		{"scattered", headSumViewSrc(ir.F32, 13)},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := parse(t, c.src)
			sizes := symtest.SizesOver(g, 13, "seq", nil)
			top := g.Values[1] // %0 = transpose(%dq): [2, seq, 2, 4] read as [2, seq, 1, 8]
			if c.name != "scattered" {
				top = g.Values[2] // %1 = reshape(%0): [2, seq, 8] read as [2, seq, 4, 2]
			}
			last := len(sizes[top]) - 1
			sizes[top] = append(sizes[top][:last:last], sym.Const(int64(top.Type.Shape[last]/2)), sym.Const(2))
			want := fmt.Sprintf("a reduction reading %s through views whose static dims differ from the bound's does not run at symbolic sizes", top.Type)
			if _, _, err := Generate(Kernel{Name: "k0", Graph: g, Symbolic: true, Rows: 26, Sizes: sizes}, Target{SM: 80}); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Generate = %v, want %q", err, want)
			}
		})
	}
}
