package ptx

import (
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/ir"
)

// foldBatchedSrc is a batched fold: per batch element j of 4, a's 2 heads of 8 merged back
// ([seq, 2, 4, 8] transposed and reshaped into [seq, 4, 16]), row j contracted over seq with
// b[seq, j, 16].
func foldBatchedSrc(d ir.DType, seq int) string {
	return fmt.Sprintf("graph k {\n  input %%a : %[1]s[%[2]d,2,4,8]\n  input %%b : %[1]s[%[2]d,4,16]\n  %%0 = transpose(%%a) {perm=[0,2,1,3]} : %[1]s[%[2]d,4,2,8]\n"+
		"  %%1 = reshape(%%0) {shape=[%[2]d,4,16]} : %[1]s[%[2]d,4,16]\n  %%2 = dot_general(%%1, %%b) {lhs_batch=[1], rhs_batch=[1], lhs_contract=[0], rhs_contract=[0]} : %[1]s[4,16,16]\n  output out = %%2\n}\n", d, seq)
}

// A batched GEMM whose K is the symbolic rows, reading an operand through a view (heads merged
// back), runs at seq 1, a prime and the bound on the memchecked simulator: within tolerance of
// the reference and bit for bit the static kernel built for that seq, FFMA (f32) and tensor cores
// (f16). The compiler does not hand the templates a batched fold yet (docs/dynamic.md, Next).
func TestSymbolicFoldViewBatched(t *testing.T) {
	for _, c := range []struct {
		d     ir.DType
		bound int
	}{{ir.F32, 37}, {ir.F16, 40}} {
		t.Run(c.d.String(), func(t *testing.T) {
			g := parse(t, foldBatchedSrc(c.d, c.bound))
			text, ls, err := Module([]Kernel{{Name: "k0", Graph: g, Symbolic: true, Rows: c.bound, Sizes: seqSizes(g, c.bound)}}, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			assemble(t, text)
			for _, seq := range []int{1, 13, c.bound} {
				checkFoldRun(t, fmt.Sprintf("seq %d of %d", seq, c.bound), text, ls[0], g, parse(t, foldBatchedSrc(c.d, seq)), seq, seq, c.d)
			}
		})
	}
}
