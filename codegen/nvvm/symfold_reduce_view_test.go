package nvvm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
)

// reduceViewSrc is a bias gradient summing, over the rows, V [2, 2, seq, 4] merged back into
// [2, seq, 8] through a transpose and a reshape (op reduce_sum, or reduce_max; axes [0,1], or
// [2] for a row reduction).
func reduceViewSrc(d ir.DType, seq int, op, axes string) string {
	out := "[8]"
	if axes == "2" {
		out = fmt.Sprintf("[2,%d]", seq)
	}
	return fmt.Sprintf("graph k {\n  input %%dq : %[2]s[2,2,%[1]d,4]\n  %%0 = transpose(%%dq) {perm=[0,2,1,3]} : %[2]s[2,%[1]d,2,4]\n"+
		"  %%1 = reshape(%%0) {shape=[2,%[1]d,8]} : %[2]s[2,%[1]d,8]\n  %%2 = %[3]s(%%1) {axes=[%[4]s]} : %[2]s%[5]s\n  output out = %%2\n}\n", seq, d, op, axes, out)
}

// TestSymbolicFoldReduceViews: a column reduction over the symbolic rows reading its operand
// through a transpose and a reshape that move the rows (a bias gradient over attention's heads
// merged back), and a row reduction over the merged rows' trailing axis, are the NVVM producer's
// own (Lacks names nothing; symfold_reduce_view.go): codegen/ptx's parameters (seq's value, then
// the folded or row count), launch and work; each assembles for sm_80 and sm_90 without spills,
// and on the memchecked, racechecked simulator at seq 1, a prime and the bound, its input laid
// out at the run's sizes and no longer, it equals the reference within tolerance and
// codegen/ptx's entry bit for bit (warp instructions of both: docs/perf.md, -v). The layer norm,
// softmax, scattered, column-keeping and split templates through views are compiler's
// TestSymbolicNVVM rows.
func TestSymbolicFoldReduceViews(t *testing.T) {
	p := requireProducer(t)
	const bound = 37
	target := plan.Target{SM: 80}
	for _, c := range []struct {
		d        ir.DType
		op, axes string
	}{{ir.F32, "reduce_sum", "0,1"}, {ir.F16, "reduce_sum", "0,1"}, {ir.BF16, "reduce_max", "0,1"},
		{ir.F32, "reduce_sum", "2"}, {ir.BF16, "reduce_max", "2"}} {
		row := c.axes == "2"
		t.Run(fmt.Sprintf("%s %s axes %s", c.d, c.op, c.axes), func(t *testing.T) {
			parse := func(seq int) *ir.Graph {
				g, err := ir.Parse("k.gir", []byte(reduceViewSrc(c.d, seq, c.op, c.axes)))
				if err != nil {
					t.Fatal(err)
				}
				return g
			}
			g := parse(bound)
			k := plan.Kernel{Name: "k0", Graph: g, Symbolic: true, Rows: 2 * bound, Sizes: seqSizes(g, parse(bound-1), bound)}
			text, l, ptxText, pl := bothSymbolic(t, p, k, target)
			var params []string
			for _, a := range l.Params {
				if a.Kind == plan.ArgSize {
					params = append(params, a.Expr)
				}
			}
			if strings.Join(params, ",") != "seq," || !row && (l.Work.Axis != 2 || l.Work.MaxBlocks != 1) || row && l.Work.Axis != 0 {
				t.Errorf("size parameters %q, work %+v: want seq, then the folded count (one block along z) or the row count (rows along x)", params, *l.Work)
			}
			assemble(t, text, []plan.Kernel{k})
			for _, seq := range []int{1, 13, bound} {
				size := func(a plan.Arg, w *plan.SymWork) int {
					if a.Expr == "seq" {
						return seq
					}
					return 2 * seq * w.Scale
				}
				terms := 2 * seq
				if row {
					terms = 8
				}
				checkRun(t, fmt.Sprintf("seq %d", seq), k, text, l, ptxText, pl, parse(seq), size, terms) // symrowlen_test.go
			}
		})
	}
}
