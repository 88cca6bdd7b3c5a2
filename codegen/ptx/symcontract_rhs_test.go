package ptx

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/tensor"
)

// rhsSrc is q·kᵀ by hand: [nb, t, 16]·[nb, seq, 16]ᵀ → [nb, t, seq], seq the right operand's
// free dim.
func rhsSrc(d ir.DType, nb, t, seq int) string {
	return fmt.Sprintf("graph k {\n  input %%q : %[1]s[%[2]d,%[3]d,16]\n  input %%k : %[1]s[%[2]d,%[4]d,16]\n  %%0 = dot_general(%%q, %%k) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[2]} : %[1]s[%[2]d,%[3]d,%[4]d]\n  output out = %%0\n}\n", d, nb, t, seq)
}

// rhsSizes is the operands' sizes of rhsSrc's graph: [b or nb, t, 16] and [b or nb, seq, 16];
// self makes t seq (a self-attention's scores), static keeps t the bound's.
func rhsSizes(g *ir.Graph, batch, self, static bool) map[*ir.Value][]sym.Expr {
	in := g.Inputs()
	nb := sym.Const(int64(in[0].Type.Shape[0]))
	if batch {
		nb = sym.Sym("b")
	}
	t, seq := sym.Sym("t"), sym.Sym("seq")
	switch {
	case self:
		t = seq
	case static:
		t = sym.Const(int64(in[0].Type.Shape[1]))
	}
	return map[*ir.Value][]sym.Expr{in[0]: {nb, t, sym.Const(16)}, in[1]: {nb, seq, sym.Const(16)}}
}

// TestSymbolicContractRHS: q·kᵀ by hand whose keys' rows seq (the product's N) are symbolic,
// the queries' rows t static, their own dim or seq (a self-attention's scores), over a static
// batch of 3 or a symbolic batch of at most 3, built once at the bounds (two column tiles and
// two row tiles at 140). Run on the memchecked simulator at 1, a prime, a tile and the bound,
// with t ≠ seq too: within tolerance of the reference, bit for bit the static kernel built at
// those sizes (N at the run bounds the keys copied, the columns stored and the column tiles,
// and is the output's row stride), nothing written past the run's output. Its warp
// instructions stay within 1.05× the static kernel's on FFMA, 1.15× on tensor cores.
func TestSymbolicContractRHS(t *testing.T) {
	for _, c := range []struct {
		d                         ir.DType
		tBound, seqBound          int
		batch, self, static, tf32 bool
	}{
		{ir.F32, 37, 140, false, false, true, false}, {ir.F32, 140, 37, true, false, false, false}, {ir.F32, 37, 37, true, true, false, false},
		{ir.BF16, 40, 140, true, false, false, false}, {ir.F16, 40, 40, false, true, false, false}, {ir.F32, 24, 40, false, false, false, true},
	} {
		t.Run(fmt.Sprintf("%s/batch=%v/self=%v/static=%v/tf32=%v", c.d, c.batch, c.self, c.static, c.tf32), func(t *testing.T) {
			tgt := Target{SM: 80, TF32: c.tf32}
			g := parse(t, rhsSrc(c.d, 3, c.tBound, c.seqBound))
			text, ls, err := Module([]Kernel{{Name: "k0", Graph: g, Symbolic: true, Rows: 3, Sizes: rhsSizes(g, c.batch, c.self, c.static)}}, tgt)
			if err != nil {
				t.Fatal(err)
			}
			assemble(t, text)
			if mma := strings.Contains(text, "mma.sync"); mma != (c.d != ir.F32 || c.tf32) {
				t.Errorf("tensor cores %v for %s", mma, c.d)
			}
			// seq 1, a prime, 6 and 12 (even, a multiple of 4) and the bound: element stores where
			// the run's seq is not a multiple of 4, groups of four columns where it is.
			runs := [][2]int{{1, 1}, {13, c.seqBound}, {c.tBound, 7}, {5, 6}, {c.tBound, 12}, {c.tBound, min(128, c.seqBound)}, {c.tBound, c.seqBound}}
			if c.self {
				runs = [][2]int{{1, 1}, {13, 13}, {6, 6}, {20, 20}, {32, 32}, {c.seqBound, c.seqBound}}
			}
			for i, r := range runs {
				tr, seq := r[0], r[1]
				if c.static {
					tr = c.tBound
				}
				nb := 3
				if c.batch && i < len(runs)-1 {
					nb = 1 + i%2*2 // 1 or 3
				}
				// Under tf32 the static build of a product with a free dim of 1 takes FFMA: only
				// the reference applies.
				ratio := contractRun(t, text, ls[0], g, parse(t, rhsSrc(c.d, nb, tr, seq)), tgt, contractPrec(c.d, c.tf32), 16, !(c.tf32 && (tr == 1 || seq == 1)), tr, seq, nb)
				if limit := map[bool]float64{true: 1.05, false: 1.15}[c.d == ir.F32 && !c.tf32]; ratio > limit {
					t.Errorf("t %d seq %d batch %d: %.3f× the static kernel's warp instructions (at most %.2f×)", tr, seq, nb, ratio, limit)
				}
			}
		})
	}
}

// contractRun runs kernel l of text (built for g at the bounds) on gs's seeded inputs at t tr,
// seq and batch nb on the memchecked simulator, checks that no output byte past the run's is
// written and the output against the static kernel (bit for bit when bits) and the reference
// (k terms summed), logs the warp instructions and returns their ratio to the static kernel's.
func contractRun(t *testing.T, text string, l Launch, g, gs *ir.Graph, tgt Target, prec ir.DType, k int, bits bool, tr, seq, nb int) float64 {
	t.Helper()
	return contractRunRows(t, text, l, g, gs, tgt, prec, k, bits, tr, seq, nb, nb)
}

// contractRunRows is contractRun for a batch of nb leading a static batch, rows batch elements in
// all (grid.z and the batch count).
func contractRunRows(t *testing.T, text string, l Launch, g, gs *ir.Graph, tgt Target, prec ir.DType, k int, bits bool, tr, seq, nb, rows int) float64 {
	t.Helper()
	in, _, err := tensor.SeededValues(gs, uint64(7*tr+seq))
	if err != nil {
		t.Fatal(err)
	}
	grid := l.Grid
	if l.Work != nil {
		grid[l.Work.Axis] = rows
	}
	whole, st := runSym(t, text, l, g, g.Outputs[0].Value.Type.Bytes(), map[string]int{"t": tr, "seq": seq, "b": nb, "": rows}, grid, in)
	got, at := whole[:gs.Outputs[0].Value.Type.Bytes()], fmt.Sprintf("t %d seq %d batch %d", tr, seq, nb)
	for i, x := range whole[len(got):] {
		if x != symUntouched {
			t.Fatalf("%s: output byte %d past the run's %d written", at, len(got)+i, len(got))
		}
	}
	run := checkStaticAndRef(t, at, got, gs, in, tgt, prec, k, bits)
	ratio := float64(st.WarpInsts) / float64(run.stats.WarpInsts)
	t.Logf("%s: %d warp instructions built once, %d static (%.3f×)", at, st.WarpInsts, run.stats.WarpInsts, ratio)
	return ratio
}

// TestSymbolicContractRHSStores: a symbolic-N product stores groups of four columns (one
// vector store each) on the branch taken where the run's N is a multiple of 4, on tensor cores
// pairs (as the static kernel at an even N) where it is a multiple of 2 only, and element by
// element on the last, FFMA and tensor cores; an N that is a multiple of 4 at every size (4·s)
// takes the groups without a branch. The runs above check every branch's bits.
func TestSymbolicContractRHSStores(t *testing.T) {
	stores := regexp.MustCompile(`st\.global(\.v[24])?\.(f32|b16)`)
	// widths lists the stores' vector widths of each section of the epilogue (1: scalar).
	widths := func(text string) []int {
		seen := map[int]bool{}
		for _, m := range stores.FindAllStringSubmatch(text, -1) {
			w := 1
			if m[1] != "" {
				w = int(m[1][2] - '0')
			}
			seen[w] = true
		}
		var ws []int
		for _, w := range []int{4, 2, 1} {
			if seen[w] {
				ws = append(ws, w)
			}
		}
		return ws
	}
	branch := regexp.MustCompile(`and\.b32 %r\d+, %r\d+, (\d+);\s+setp\.ne\.u32 %p\d+, %r\d+, 0;\s+@%p\d+\s+bra (\$L_cols_not\d+_\d+);`)
	for _, c := range []struct {
		d        ir.DType
		times4   bool    // N is 4·s
		sections [][]int // the stores' widths from each branch on
	}{
		{ir.F32, false, [][]int{{4}, {1}}},
		{ir.BF16, false, [][]int{{4}, {2}, {1}}},
		{ir.F16, false, [][]int{{4}, {2}, {1}}},
		{ir.F32, true, [][]int{{4}}},
		{ir.BF16, true, [][]int{{4}}},
	} {
		t.Run(fmt.Sprintf("%s/times4=%v", c.d, c.times4), func(t *testing.T) {
			g := parse(t, rhsSrc(c.d, 3, 40, 140))
			sizes := rhsSizes(g, true, false, false)
			if c.times4 {
				k := g.Inputs()[1]
				sizes[k] = []sym.Expr{sizes[k][0], sym.Mul(sym.Const(4), sym.Sym("s")), sym.Const(16)}
			}
			text, _, err := Module([]Kernel{{Name: "k0", Graph: g, Symbolic: true, Rows: 3, Sizes: sizes}}, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			assemble(t, text)
			epi := text[strings.Index(text, "// epilogue"):]
			var got [][]int
			for m := branch.FindStringSubmatchIndex(epi); m != nil && len(got) < len(c.sections); m = branch.FindStringSubmatchIndex(epi) {
				mask, label := epi[m[2]:m[3]], epi[m[4]:m[5]]
				at := strings.Index(epi, "\n"+label+":")
				if at < 0 {
					t.Fatalf("branch to %s, never placed", label)
				}
				if want := fmt.Sprint(c.sections[len(got)][0] - 1); mask != want {
					t.Errorf("branch %d tests N's low bits with %s, want %s", len(got), mask, want)
				}
				got = append(got, widths(epi[m[1]:at]))
				epi = epi[at:]
			}
			got = append(got, widths(epi))
			if fmt.Sprint(got) != fmt.Sprint(c.sections) {
				t.Errorf("store widths by branch %v, want %v", got, c.sections)
			}
		})
	}
}
