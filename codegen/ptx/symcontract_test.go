package ptx

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/internal/symtest"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// contractSrc is a batched product contracting seq, batched over nb elements: xᵀ·y per batch
// element ([nb, seq, 16]ᵀ·[nb, seq, 24] → [nb, 16, 24]) or, with scores, scores·V by hand
// ([nb, 12, seq]·[nb, seq, 16] → [nb, 12, 16]); heads reads V through a transpose of [nb, seq, 16]
// stored [nb, 16, seq]... as [nb, 2, seq, 8] merged back (a view moving seq).
func contractSrc(kind string, d ir.DType, nb, seq int) string {
	t := d.String()
	switch kind {
	case "xty":
		return fmt.Sprintf("graph k {\n  input %%x : %[1]s[%[2]d,%[3]d,16]\n  input %%y : %[1]s[%[2]d,%[3]d,24]\n  %%0 = dot_general(%%x, %%y) {lhs_batch=[0], lhs_contract=[1], rhs_batch=[0], rhs_contract=[1]} : %[1]s[%[2]d,16,24]\n  output out = %%0\n}\n", t, nb, seq)
	case "scores":
		return fmt.Sprintf("graph k {\n  input %%p : %[1]s[%[2]d,12,%[3]d]\n  input %%v : %[1]s[%[2]d,%[3]d,16]\n  %%0 = dot_general(%%p, %%v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : %[1]s[%[2]d,12,16]\n  output out = %%0\n}\n", t, nb, seq)
	}
	// heads: V's heads [nb, 2, seq, 8] merged back into [nb, seq, 16] before scores·V.
	return fmt.Sprintf("graph k {\n  input %%p : %[1]s[%[2]d,12,%[3]d]\n  input %%vh : %[1]s[%[2]d,2,%[3]d,8]\n  %%0 = transpose(%%vh) {perm=[0,2,1,3]} : %[1]s[%[2]d,%[3]d,2,8]\n  %%1 = reshape(%%0) {shape=[%[2]d,%[3]d,16]} : %[1]s[%[2]d,%[3]d,16]\n  %%2 = dot_general(%%p, %%1) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : %[1]s[%[2]d,12,16]\n  output out = %%2\n}\n", t, nb, seq)
}

// contractSizes is the sizes of g's values but the product's: seq where a dim is the bound,
// and b for the leading dim when the batch is symbolic.
func contractSizes(g *ir.Graph, bound int, batch bool) map[*ir.Value][]sym.Expr {
	sizes := symtest.SizesOver(g, bound, "seq", nil)
	if batch {
		for _, s := range sizes {
			s[0] = sym.Sym("b")
		}
	}
	return sizes
}

// TestSymbolicContract: batched products whose K is seq (a symbolic dim that is not the rows),
// built once at the bound (37 on FFMA, 40 on tensor cores) over a static batch of 3 or a symbolic
// batch of at most 3, run on the memchecked simulator at seq 0 (K empty: zeros), 1, a prime, a multiple of the k
// tile and the bound (and batch 1 or 3): within tolerance of the reference and bit for bit the
// static kernel built at that seq (the same template, tiles and k steps; the copies past K
// zero-filled). Inputs are contiguous at the run's sizes at the start of bound-sized buffers
// whose rest is never written. The warp instructions of both are docs/perf.md's
// (go test -run TestSymbolicContract -v ./codegen/ptx).
func TestSymbolicContract(t *testing.T) {
	for _, c := range []struct {
		kind  string
		d     ir.DType
		bound int
		batch bool
		tf32  bool
	}{
		{"xty", ir.F32, 37, false, false}, {"xty", ir.F32, 37, true, false}, {"scores", ir.F32, 37, false, false}, {"scores", ir.F32, 37, true, false}, {"heads", ir.F32, 37, true, false},
		{"xty", ir.F16, 40, false, false}, {"scores", ir.BF16, 40, true, false}, {"heads", ir.F16, 40, false, false},
		{"scores", ir.F32, 40, true, true},
	} {
		t.Run(fmt.Sprintf("%s/%s/batch=%v/tf32=%v", c.kind, c.d, c.batch, c.tf32), func(t *testing.T) {
			tgt := Target{SM: 80, TF32: c.tf32}
			g := parse(t, contractSrc(c.kind, c.d, 3, c.bound))
			text, ls, err := Module([]Kernel{{Name: "k0", Graph: g, Symbolic: true, Rows: 3, Sizes: contractSizes(g, c.bound, c.batch)}}, tgt)
			if err != nil {
				t.Fatal(err)
			}
			assemble(t, text)
			if mma := strings.Contains(text, "mma.sync"); mma != (c.d != ir.F32 || c.tf32) {
				t.Errorf("tensor cores %v for %s", mma, c.d)
			}
			// Operands strided but for their batch stride take the bound's copies (16-byte chunks
			// on tensor cores: x, y, V); V's heads merged back through views are 16-byte chunks
			// of d = 8 at every size; the scores' row stride follows seq: chunks when seq is a
			// multiple of 8 at the run, else element copies (symchunk.go).
			chunks, elems := strings.Contains(text, "cp.async.cg.shared.global"), strings.Contains(text, "ld.global.u16")
			want := map[string][2]bool{"xty": {true, false}, "scores": {true, true}, "heads": {true, true}}[c.kind]
			if c.d != ir.F32 && (chunks != want[0] || elems != want[1]) {
				t.Errorf("16-byte copies %v, element copies %v; want %v", chunks, elems, want)
			}
			tile := map[bool]int{false: 16, true: 32}[c.d != ir.F32 || c.tf32] // two FFMA k steps, one or two tensor-core steps
			seqs := []int{0, 1, 13, tile, c.bound}
			if tile == 32 {
				seqs = []int{0, 1, 8, 13, 16, tile, c.bound} // chunks at 8, 16, 32 and 40; elements at 1 and 13
			}
			runContractSeqs(t, text, ls[0], g, func(nb, seq int) string { return contractSrc(c.kind, c.d, nb, seq) }, seqs, c.bound, c.batch, tgt, contractPrec(c.d, c.tf32))
		})
	}
}

// runSymContract launches kernel l (of g, at the bound) at seq and batch nb (runSym); a
// symbolic batch's grid.z is nb. It returns the run's output bytes (gs's).
func runSymContract(t *testing.T, text string, l Launch, g, gs *ir.Graph, seq, nb int, in map[string]*tensor.Tensor) ([]byte, *sim.Stats) {
	t.Helper()
	grid := l.Grid
	if l.Work != nil {
		grid[l.Work.Axis] = nb
	}
	return runSym(t, text, l, g, gs.Outputs[0].Value.Type.Bytes(), map[string]int{"seq": seq, "b": nb, "": nb}, grid, in)
}
