package ptx

import (
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// convFoldSrc is a convolution's weight gradient over n images: x [n, 4, 6, 6] viewed as
// [2, 2·n, 6, 6] (2 groups) convolved by dy [n, 6, 6, 6] viewed as [6, n, 6, 6] with padding 1:
// dW [2, 6, 3, 3], K = n·36 taps per element.
func convFoldSrc(d ir.DType, n int) string {
	return fmt.Sprintf("graph k {\n  input %%x : %[1]s[%[2]d,4,6,6]\n  input %%dy : %[1]s[%[2]d,6,6,6]\n"+
		"  %%0 = reshape(%%x) {shape=[%[2]d,2,2,6,6]} : %[1]s[%[2]d,2,2,6,6]\n  %%1 = transpose(%%0) {perm=[2,1,0,3,4]} : %[1]s[2,2,%[2]d,6,6]\n"+
		"  %%2 = reshape(%%1) {shape=[2,%[3]d,6,6]} : %[1]s[2,%[3]d,6,6]\n  %%3 = transpose(%%dy) {perm=[1,0,2,3]} : %[1]s[6,%[2]d,6,6]\n"+
		"  %%4 = conv2d(%%2, %%3) {padding=[1,1], groups=2} : %[1]s[2,6,3,3]\n  output out = %%4\n}\n", d, n, 2*n)
}

// TestSymbolicConvFoldRuns: the direct template's conv weight gradient, built once over a batch
// of at most 7 (the weight operand's input channels symbolic in its sizes), runs on the
// memchecked simulator at batch 1, a prime and the bound (inputs contiguous at the run's sizes at
// the start of bound-sized buffers whose rest is never written; its size parameter is K at the
// run, batch·36): within tolerance of the reference and bit for bit the static kernel built for
// that batch, f32, f16 and bf16. Without the weight's sizes the kernel is a static convolution.
func TestSymbolicConvFoldRuns(t *testing.T) {
	const bound = 7
	for _, d := range []ir.DType{ir.F32, ir.F16, ir.BF16} {
		t.Run(d.String(), func(t *testing.T) {
			g := parse(t, convFoldSrc(d, bound))
			sizes := map[*ir.Value][]sym.Expr{}
			for _, v := range g.Values {
				if v.Op == "conv2d" {
					b := sym.Sym("batch")
					sizes[v.Args[0]] = []sym.Expr{sym.Const(2), sym.Scale(b, 2), sym.Const(6), sym.Const(6)}
					sizes[v.Args[1]] = []sym.Expr{sym.Const(6), b, sym.Const(6), sym.Const(6)}
				}
			}
			k := Kernel{Name: "k0", Graph: g, Symbolic: true, Rows: bound, Sizes: sizes}
			text, ls, err := Module([]Kernel{k}, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			assemble(t, text)
			if w := ls[0].Work; w == nil || w.Scale != 36 {
				t.Fatalf("work %+v: want the taps' size parameter, 36 per image", w)
			}
			for _, n := range []int{1, 5, bound} {
				checkFoldRun(t, fmt.Sprintf("batch %d of %d", n, bound), text, ls[0], g, parse(t, convFoldSrc(d, n)), n, 36*n, d) // symfold_view_run_test.go
			}
			k.Sizes = nil
			if _, ls, err := Module([]Kernel{k}, Target{SM: 80}); err == nil && ls[0].Work != nil && ls[0].Work.Scale == 36 {
				t.Error("without the weight's sizes the kernel still folds")
			}
		})
	}
}
