package ptx

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// maskSrc is q·kᵀ by hand over 2 heads plus a mask broadcast over them (and over the batch when
// shared): [nb, 2, t, 16]·[nb, 2, seq, 16]ᵀ + mask[nb or 1, 1, t, seq] → [nb, 2, t, seq]; with
// trans the mask is stored [nb or 1, 1, seq, t] and transposed before its broadcast.
func maskSrc(d ir.DType, nb, t, seq int, shared, trans bool) string {
	mb := nb
	if shared {
		mb = 1
	}
	m, view, tr := fmt.Sprintf("%s[%d,1,%d,%d]", d, mb, t, seq), "%m", ""
	if trans {
		m, view = fmt.Sprintf("%s[%d,1,%d,%d]", d, mb, seq, t), "%3"
		tr = fmt.Sprintf("  %%3 = transpose(%%m) {perm=[0,1,3,2]} : %s[%d,1,%d,%d]\n", d, mb, t, seq)
	}
	return fmt.Sprintf("graph k {\n  input %%q : %[1]s[%[2]d,2,%[3]d,16]\n  input %%k : %[1]s[%[2]d,2,%[4]d,16]\n  input %%m : %[5]s\n%[6]s"+
		"  %%0 = dot_general(%%q, %%k) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[3]} : %[1]s[%[2]d,2,%[3]d,%[4]d]\n"+
		"  %%1 = broadcast_in_dim(%[7]s) {dims=[0,1,2,3], shape=[%[2]d,2,%[3]d,%[4]d]} : %[1]s[%[2]d,2,%[3]d,%[4]d]\n"+
		"  %%2 = add(%%0, %%1) : %[1]s[%[2]d,2,%[3]d,%[4]d]\n  output out = %%2\n}\n", d, nb, t, seq, m, tr, view)
}

// maskSizes is maskSrc's sizes: a symbolic batch b (or the static one), t and seq.
func maskSizes(g *ir.Graph, batch, shared, trans bool) map[*ir.Value][]sym.Expr {
	in := g.Inputs()
	nb := sym.Const(int64(in[0].Type.Shape[0]))
	if batch {
		nb = sym.Sym("b")
	}
	mb := nb
	if shared {
		mb = sym.Const(1)
	}
	t, seq, c := sym.Sym("t"), sym.Sym("seq"), sym.Const
	s := map[*ir.Value][]sym.Expr{in[0]: {nb, c(2), t, c(16)}, in[1]: {nb, c(2), seq, c(16)}, in[2]: {mb, c(1), t, seq}}
	if trans {
		s[in[2]] = []sym.Expr{mb, c(1), seq, t}
	}
	for _, v := range g.Values {
		switch {
		case v.Op == "broadcast_in_dim":
			s[v] = []sym.Expr{nb, c(2), t, seq}
		case v.Op == "transpose" && trans:
			s[v] = []sym.Expr{mb, c(1), t, seq}
		}
	}
	return s
}

// TestSymbolicContractBroadcast: q·kᵀ by hand with t and seq symbolic (M and N), a mask of the
// run's sizes broadcast over the heads (and the batch) added in the epilogue, stored as it is or
// transposed ([b, 1, seq, t]) before the broadcast, built once at the bounds, FFMA and tensor
// cores. Run on the memchecked simulator at 1, primes and the bound: the mask is read through its
// views at its strides at the run (a broadcast dim's stride 0, a transpose's permuted ones), so
// the output is bit for bit the static kernel's at those sizes, and within tolerance of the
// reference.
func TestSymbolicContractBroadcast(t *testing.T) {
	for _, c := range []struct {
		d                    ir.DType
		batch, shared, trans bool
	}{
		{ir.F32, false, false, false}, {ir.F16, true, false, false}, {ir.BF16, true, true, false},
		{ir.F32, true, false, true}, {ir.F16, false, true, true},
	} {
		t.Run(fmt.Sprintf("%s/batch=%v/shared=%v/trans=%v", c.d, c.batch, c.shared, c.trans), func(t *testing.T) {
			tgt := Target{SM: 80}
			const tBound, seqBound = 37, 40
			g := parse(t, maskSrc(c.d, 3, tBound, seqBound, c.shared, c.trans))
			text, ls, err := Module([]Kernel{{Name: "k0", Graph: g, Symbolic: true, Rows: 6, Sizes: maskSizes(g, c.batch, c.shared, c.trans)}}, tgt)
			if err != nil {
				t.Fatal(err)
			}
			assemble(t, text)
			if mma := strings.Contains(text, "mma.sync"); mma != (c.d != ir.F32) {
				t.Errorf("tensor cores %v for %s", mma, c.d)
			}
			for i, r := range [][2]int{{1, 1}, {13, 7}, {5, 31}, {tBound, seqBound}} {
				nb := 3
				if c.batch && i < 3 {
					nb = 1 + i%2*2
				}
				ratio := contractRunRows(t, text, ls[0], g, parse(t, maskSrc(c.d, nb, r[0], r[1], c.shared, c.trans)), tgt, c.d, 16, true, r[0], r[1], nb, 2*nb)
				if c.d == ir.F32 && ratio > 1.25 {
					t.Errorf("t %d seq %d batch %d: %.3f× the static kernel's warp instructions", r[0], r[1], nb, ratio)
				}
			}
		})
	}
}

// An epilogue view at symbolic sizes of a value computed in the kernel (no buffer to read at the
// run's strides), broadcast or transposed first, is refused, not read at the bound's.
func TestSymbolicContractBroadcastRefused(t *testing.T) {
	for _, c := range []struct{ name, view, want string }{
		{"broadcast", "%1 = neg(%m) : f32[3,1,9,13]\n  %2 = broadcast_in_dim(%1) {dims=[0,1,2,3], shape=[3,2,9,13]} : f32[3,2,9,13]",
			"an epilogue broadcast_in_dim of a computed value at symbolic sizes does not run beside a batched product"},
		{"transpose", "%1 = neg(%m) : f32[3,1,9,13]\n  %4 = transpose(%1) {perm=[0,1,2,3]} : f32[3,1,9,13]\n  %2 = broadcast_in_dim(%4) {dims=[0,1,2,3], shape=[3,2,9,13]} : f32[3,2,9,13]",
			"an epilogue transpose of a computed value at symbolic sizes does not run beside a batched product"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := parse(t, "graph k {\n  input %q : f32[3,2,9,16]\n  input %k : f32[3,2,13,16]\n  input %m : f32[3,1,9,13]\n"+
				"  %0 = dot_general(%q, %k) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[3]} : f32[3,2,9,13]\n"+
				"  "+c.view+"\n  %3 = add(%0, %2) : f32[3,2,9,13]\n  output out = %3\n}\n")
			s := maskSizes(g, false, false, false)
			for _, v := range g.Values {
				if v.Op == "neg" || v.Op == "transpose" {
					s[v] = s[g.Inputs()[2]]
				}
			}
			if _, _, err := Generate(Kernel{Name: "k0", Graph: g, Symbolic: true, Rows: 6, Sizes: s}, Target{SM: 80}); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Generate = %v, want %q", err, c.want)
			}
		})
	}
}
