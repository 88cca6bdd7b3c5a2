package ptx

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
)

// symGradSizes gives attention_grad graph g's values their sizes over the dims batch and seq
// (L = S = seq): q, k, v, o and do [batch, ·, seq, ·], lse [batch, H, seq], a bias [batch or 1,
// · , seq, seq], and each gradient its operand's.
func symGradSizes(g *ir.Graph, b int) map[*ir.Value][]sym.Expr {
	batch, seq := sym.Sym("batch"), sym.Sym("seq")
	m := map[*ir.Value][]sym.Expr{}
	for _, v := range g.Inputs() {
		s := v.Type.Shape
		e := []sym.Expr{batch, sym.Const(int64(s[1])), seq}
		if s[0] == 1 && b != 1 {
			e[0] = sym.Const(1)
		}
		switch {
		case v.Name == "bias":
			e = append(e, seq)
		case len(s) == 4:
			e = append(e, sym.Const(int64(s[3])))
		}
		m[v] = e
	}
	for _, o := range g.Outputs {
		m[o.Value] = m[o.Value.Args[map[string]int{"dq": 0, "dk": 1, "dv": 2}[o.Name]]]
	}
	return m
}

// TestSymbolicAttentionGrad: the backward templates on CUDA cores, dq and dk/dv (the dk and dv
// of one kernel, and each alone), over a symbolic batch and sequence length, built once at the
// bounds and run at batch and length 1, a prime and the bound on the memchecked, racechecked
// simulator: masks none and causal (the dk/dv template's rows above a key block's diagonal
// skipped), grouped KV heads, a bias broadcast over heads or batch. Each run matches the float64
// reference at its sizes, leaves the gradients' bytes past the run's sizes untouched, and is bit
// for bit the static kernel built for its sizes (the same tiles and folds in the same order).
// The f16 case's dq takes the tensor-core template (TestSymbolicAttentionGradMMA).
func TestSymbolicAttentionGrad(t *testing.T) {
	for _, c := range []symGradCase{
		{attnCase{3, 4, 2, 37, 37, 16, 12, ops.MaskCausal, nil, nil, ir.F32}, ""},
		{attnCase{3, 2, 1, 23, 23, 8, 8, ops.MaskNone, []int{3, 1, 23, 23}, nil, ir.F32}, ""},
		{attnCase{3, 2, 2, 40, 40, 64, 64, ops.MaskCausal, []int{1, 2, 40, 40}, nil, ir.F32}, ""},
		{attnCase{2, 2, 2, 20, 20, 128, 128, ops.MaskNone, []int{2, 2, 20, 20}, nil, ir.F16}, "q"}, // dk/dv with a bias at E = 128: CUDA cores
	} {
		c.run(t, []string{"q", "kv", "k", "v"})
	}
}

// symGradCase is a backward case at symbolic sizes; mma names the gradients ("q", "kv", "k",
// "v") that the tensor-core templates compute.
type symGradCase struct {
	attnCase
	mma string
}

// run builds each gradient of wrts over a symbolic batch and sequence length at the case's
// bounds and runs it at batch and length 1, primes and the bound against the reference and the
// static kernel of the run's sizes.
func (c symGradCase) run(t *testing.T, wrts []string) {
	for _, wrt := range wrts {
		t.Run(fmt.Sprintf("%s_d%s", c.attnCase, wrt), func(t *testing.T) {
			g := attnGradGraph(t, c.attnCase, wrt)
			k := Kernel{Name: "k0_attention_grad", Graph: g, Symbolic: true, Sizes: symGradSizes(g, c.b)}
			text, launches, err := Module([]Kernel{k}, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			if want := slices.Contains(strings.Fields(c.mma), wrt); strings.Contains(text, "mma.sync") != want {
				t.Fatalf("tensor cores %v, want %v", !want, want)
			}
			assemble(t, text)
			for _, r := range [][2]int{{1, 1}, {2, 1}, {1, 17}, {2, 13}, {c.b, c.l}} {
				b, n := r[0], r[1]
				cs := c.attnCase
				cs.b, cs.l, cs.s = b, n, n
				if c.bias != nil {
					cs.bias = []int{min(c.bias[0], b), c.bias[1], n, n}
				}
				checkSymGradRun(t, text, launches[0], g, cs, wrt, uint64(5*n+b))
			}
		})
	}
}

// checkSymGradRun runs gradient wrt's symbolic kernel (text, launch l; g at the bounds) at case
// cs's batch and sequence length on seeded inputs: the reference's result within checkGrad's
// tolerance, the bytes past the run's sizes untouched, the static kernel's bits.
func checkSymGradRun(t *testing.T, text string, l Launch, g *ir.Graph, cs attnCase, wrt string, seed uint64) {
	t.Helper()
	gs := attnGradGraph(t, cs, wrt)
	in := attnGradInputs(t, gs, seed)
	got, _ := runSymAttn(t, text, "k0_attention_grad", l, g, map[string]int64{"batch": int64(cs.b), "seq": int64(cs.l)}, in)
	want, err := ref.Run(gs, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	run := runStatic(t, "k0_attention_grad", gs, in, Target{SM: 80})
	for name, x := range symOutputs(t, gs, got, run, cs.b, cs.l) {
		checkGrad(t, x, want[name])
	}
}
