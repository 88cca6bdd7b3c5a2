package ptx

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// freeSrc is scores·V by hand with the scores' rows t symbolic beside seq:
// [nb, t, seq]·[nb, seq, 16] → [nb, t, 16].
func freeSrc(d ir.DType, nb, t, seq int) string {
	return fmt.Sprintf("graph k {\n  input %%p : %[1]s[%[2]d,%[3]d,%[4]d]\n  input %%v : %[1]s[%[2]d,%[4]d,16]\n  %%0 = dot_general(%%p, %%v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : %[1]s[%[2]d,%[3]d,16]\n  output out = %%0\n}\n", d, nb, t, seq)
}

// freeSizes is the operands' sizes of freeSrc's graph: [b or nb, t, seq] and [b or nb, seq, 16];
// self makes t seq (a self-attention's scores).
func freeSizes(g *ir.Graph, batch, self bool) map[*ir.Value][]sym.Expr {
	nb := sym.Const(int64(g.Inputs()[0].Type.Shape[0]))
	if batch {
		nb = sym.Sym("b")
	}
	t, seq := sym.Sym("t"), sym.Sym("seq")
	if self {
		t = seq
	}
	in := g.Inputs()
	return map[*ir.Value][]sym.Expr{in[0]: {nb, t, seq}, in[1]: {nb, seq, sym.Const(16)}}
}

// TestSymbolicContractFree: scores·V by hand whose scores' rows t are symbolic beside seq (its
// K), built once at the bounds (t ≤ 140: two row tiles of 128; seq ≤ 37 on FFMA, 40 on tensor cores)
// over a static batch of 3 or a symbolic batch of at most 3, t either its own dim or seq (a
// self-attention's scores). Run on the memchecked simulator at t and seq 1, a prime, a row
// tile and the bound, with t ≠ seq too: within tolerance of the reference and bit for bit the
// static kernel built at those sizes (M at the run bounds the rows copied and stored, the row
// tiles past it exit, the output's batch stride is t·16 at the run). On FFMA its warp
// instructions stay within 1.12× the static kernel's: the row tile past t exits at once.
func TestSymbolicContractFree(t *testing.T) {
	for _, c := range []struct {
		d                 ir.DType
		tBound, seqBound  int
		batch, self, tf32 bool
	}{
		{ir.F32, 140, 37, false, false, false}, {ir.F32, 140, 37, true, false, false}, {ir.F32, 37, 37, true, true, false},
		{ir.BF16, 140, 40, true, false, false}, {ir.F16, 40, 40, false, true, false}, {ir.F32, 140, 40, false, false, true},
	} {
		t.Run(fmt.Sprintf("%s/batch=%v/self=%v/tf32=%v", c.d, c.batch, c.self, c.tf32), func(t *testing.T) {
			tgt := Target{SM: 80, TF32: c.tf32}
			g := parse(t, freeSrc(c.d, 3, c.tBound, c.seqBound))
			text, ls, err := Module([]Kernel{{Name: "k0", Graph: g, Symbolic: true, Rows: 3, Sizes: freeSizes(g, c.batch, c.self)}}, tgt)
			if err != nil {
				t.Fatal(err)
			}
			assemble(t, text)
			if mma := strings.Contains(text, "mma.sync"); mma != (c.d != ir.F32 || c.tf32) {
				t.Errorf("tensor cores %v for %s", mma, c.d)
			}
			runs := [][2]int{{1, 1}, {13, c.seqBound}, {c.tBound, 7}, {128, 13}, {c.tBound, c.seqBound}}
			if c.self {
				runs = [][2]int{{1, 1}, {13, 13}, {32, 32}, {c.seqBound, c.seqBound}}
			}
			for i, r := range runs {
				tr, seq := r[0], r[1]
				nb := 3
				if c.batch && i < len(runs)-1 {
					nb = 1 + i%2*2 // 1 or 3
				}
				// Under tf32 the static build of a 1×1 product takes FFMA (no dim of its operands
				// is contiguous): only the reference applies.
				ratio := contractRun(t, text, ls[0], g, parse(t, freeSrc(c.d, nb, tr, seq)), tgt, contractPrec(c.d, c.tf32), seq, !(c.tf32 && tr == 1 && seq == 1), tr, seq, nb)
				if c.d == ir.F32 && !c.tf32 && ratio > 1.12 {
					t.Errorf("t %d seq %d batch %d: %.3f× the static kernel's warp instructions", tr, seq, nb, ratio)
				}
			}
		})
	}
}

// A symbolic M or N over two free dims is refused naming why (a symbolic free dim on the right
// alone runs: TestSymbolicContractRHS).
func TestSymbolicContractFreeRefused(t *testing.T) {
	c2, c9, seq := sym.Const(2), sym.Const(9), sym.Sym("seq")
	for _, tc := range []struct {
		name, src string
		lhs, rhs  []sym.Expr
		want      string
	}{
		{"a symbolic N over two free dims", "graph k {\n  input %p : f32[2,9,13]\n  input %v : f32[2,13,3,8]\n  %0 = dot_general(%p, %v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : f32[2,9,3,8]\n  output out = %0\n}\n",
			[]sym.Expr{c2, c9, seq}, []sym.Expr{c2, seq, sym.Sym("e"), sym.Const(8)}, "with a symbolic free dim (8*e) runs at symbolic sizes only with one free dim on each side"},
		{"a symbolic M over two free dims", "graph k {\n  input %p : f32[2,9,3,13]\n  input %v : f32[2,13,8]\n  %0 = dot_general(%p, %v) {lhs_batch=[0], lhs_contract=[3], rhs_batch=[0], rhs_contract=[1]} : f32[2,9,3,8]\n  output out = %0\n}\n",
			[]sym.Expr{c2, sym.Sym("t"), sym.Const(3), seq}, []sym.Expr{c2, seq, sym.Const(8)}, "with a symbolic free dim (3*t) runs at symbolic sizes only with one free dim on each side"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := parse(t, tc.src)
			in := g.Inputs()
			sizes := map[*ir.Value][]sym.Expr{in[0]: tc.lhs, in[1]: tc.rhs}
			if _, _, err := Generate(Kernel{Name: "k0", Graph: g, Symbolic: true, Rows: 2, Sizes: sizes}, Target{SM: 80}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Generate = %v, want %q", err, tc.want)
			}
		})
	}
}

// contractPrec is the tolerance's dtype of a product of d operands: under tf32, f16's (tf32
// rounds the operands to its 10 mantissa bits).
func contractPrec(d ir.DType, tf32 bool) ir.DType {
	if tf32 {
		return ir.F16
	}
	return d
}
