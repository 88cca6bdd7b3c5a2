package nvvm

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// symMMACase is tensor-core attention at a symbolic batch (≤ b) and sequence length (≤ l), with
// or without its rows' log-sum-exp: codegen/ptx's TestSymbolicAttentionMMA table.
type symMMACase struct {
	b, h, kvh, l, e int
	mask            string
	bias            []int // the bias's bound shape; 1 where it broadcasts
	d               ir.DType
	tf32, lse       bool
}

func (c symMMACase) graph(t *testing.T, b, n int) *ir.Graph {
	t.Helper()
	var bias []int
	if c.bias != nil {
		bias = []int{c.bias[0], c.bias[1], n, n}
		if bias[0] != 1 {
			bias[0] = b
		}
	}
	a := attnCase{b, c.h, c.kvh, n, n, c.e, c.e, c.mask, bias, nil, c.d}
	if c.lse {
		return lseGraph(t, a, true)
	}
	return a.graph(t)
}

// sizes gives g's values (at the bounds) their sizes over batch and seq: [batch, heads, seq,
// cols] (a bias's columns seq too, a broadcast 1 kept), positions [batch], the LSE [batch, H, seq].
func (c symMMACase) sizes(g *ir.Graph) map[*ir.Value][]sym.Expr {
	batch, seq := sym.Sym("batch"), sym.Sym("seq")
	m := map[*ir.Value][]sym.Expr{}
	for _, v := range append(g.Inputs(), g.Outputs[0].Value) {
		s := v.Type.Shape
		switch {
		case s.Rank() == 1:
			m[v] = []sym.Expr{batch}
			continue
		}
		e := []sym.Expr{batch, sym.Const(int64(s[1])), seq, sym.Const(int64(s[3]))}
		if s[0] == 1 && c.b != 1 {
			e[0] = sym.Const(1)
		}
		if v.Name == "bias" {
			e[3] = seq
		}
		m[v] = e
	}
	if c.lse {
		m[g.Outputs[1].Value] = []sym.Expr{batch, sym.Const(int64(c.h)), seq}
	}
	return m
}

// TestSymbolicAttentionMMATemplate: the tensor-core template (f16, bf16; f32 on tf32) at
// symbolic batch and sequence length, under position (pos read at the run's batch, limits past
// the run's S clamped to it) and causal masks, with an additive bias (over the batch, or
// broadcast) and grouped KV heads, with and without the rows' log-sum-exp, is the NVVM
// producer's own (Lacks names nothing) with codegen/ptx's parameters, launch and work, built
// once at the bounds, spill-free at sm_80 and sm_90, and runs at batch and length 1, primes and
// the bounds on the memchecked simulator with inputs of the run's sizes only: bit for bit
// codegen/ptx's entry, within tolerance of the reference, the output bytes past the run's sizes
// untouched.
func TestSymbolicAttentionMMATemplate(t *testing.T) {
	p := requireProducer(t)
	for _, c := range []symMMACase{
		{3, 4, 2, 70, 64, ops.MaskPosition, nil, ir.F16, false, false},
		{3, 2, 1, 70, 64, ops.MaskPosition, []int{3, 1, 70, 70}, ir.BF16, false, false},
		{3, 4, 2, 70, 64, ops.MaskPosition, nil, ir.BF16, false, true},
		{3, 2, 2, 70, 64, ops.MaskCausal, []int{1, 2, 70, 70}, ir.F16, false, true},
		{3, 2, 2, 70, 64, ops.MaskNone, nil, ir.BF16, false, true},
		{3, 2, 1, 40, 64, ops.MaskPosition, nil, ir.F32, true, true},
	} {
		t.Run(fmt.Sprintf("tf32%v_%s_H%d_KVH%d_L%d_E%d_%s_bias%v_lse%v", c.tf32, c.d, c.h, c.kvh, c.l, c.e, c.mask, c.bias, c.lse), func(t *testing.T) {
			target := plan.Target{SM: 80, TF32: c.tf32}
			g := c.graph(t, c.b, c.l)
			k := plan.Kernel{Name: "k0_attention", Graph: g, Symbolic: true, Sizes: c.sizes(g)}
			text, l, ptxText, pl := bothSymbolic(t, p, k, target)
			if !strings.Contains(text, "mma.sync") {
				t.Fatal("the entry has no mma.sync")
			}
			assemble(t, text, []plan.Kernel{k})
			for _, r := range [][2]int{{1, 1}, {2, 1}, {1, 17}, {2, 23}, {c.b, c.l}} {
				b, n := r[0], r[1]
				gs := c.graph(t, b, n)
				in := inputsFor(gs, uint64(7*n+b))
				if pos := in["pos"]; pos != nil {
					for j := range pos.I { // rows that see no key, a prefix, limits past the run's S
						pos.I[j] = []int64{int64(n / 3), -5, int64(3 * n), 0, int64(n - 2)}[j%5]
					}
				}
				env := map[string]int64{"batch": int64(b), "seq": int64(n)}
				got, st := runSymMMA(t, text, k, l, gs, env, in)
				emitted, pst := runSymMMA(t, ptxText, k, pl, gs, env, in)
				if b == c.b && n == c.l {
					t.Logf("warp instructions at batch %d, seq %d: nvvm %d, ptx %d", b, n, st.WarpInsts, pst.WarpInsts)
				}
				want, err := ref.Run(gs, in, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range gs.Outputs {
					if !bytes.Equal(got[o.Name].Bytes(), emitted[o.Name].Bytes()) {
						t.Errorf("batch %d, seq %d: %s differs from codegen/ptx's entry", b, n, o.Name)
					}
					switch {
					case o.Name == "lse":
						checkLSE(t, got["lse"], want["lse"], c.tf32)
					case c.tf32:
						rel, _ := tolerance.Tolerance(ir.F32, true, 0)
						checkAttentionWithin(t, got["o"], want["o"], rel)
					default:
						checkAttention(t, got["o"], want["o"])
					}
				}
			}
		})
	}
}

// runSymMMA runs symbolic attention kernel k (text, launch l) at the sizes env on a fresh
// simulator device, checks on: its inputs (in, of gs at env's sizes) in buffers of the run's
// sizes, its outputs at the bounds filled with a byte that the bytes past the run's sizes must
// keep, the grid the work's block count at env. It returns the outputs at the run's sizes and
// the launch's counters.
func runSymMMA(t *testing.T, text string, k plan.Kernel, l plan.Launch, gs *ir.Graph, env map[string]int64, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *sim.Stats) {
	t.Helper()
	sr := loadRun(t, text, k, l, in)
	e, err := sym.Parse(l.Work.Elements)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := e.Eval(env)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range l.Params {
		switch {
		case a.Kind == plan.ArgSize && a.Expr != "":
			sr.args[i] = uint32(env[a.Expr])
		case a.Kind == plan.ArgSize:
			sr.args[i] = uint32(blocks)
		}
	}
	const fill = 0x5a
	for _, o := range k.Graph.Outputs {
		if err := sr.dev.Write(sr.outAddr[o.Name], bytes.Repeat([]byte{fill}, o.Value.Type.Bytes())); err != nil {
			t.Fatal(err)
		}
	}
	sr.cfg.Grid = sim.Dim3{X: int(max(1, blocks)), Y: 1, Z: 1}
	st, err := sr.m.Launch(sr.entry, sr.cfg, sr.args...)
	if err != nil {
		t.Fatalf("%v: %v", env, err)
	}
	_, whole := sr.read(t)
	out := map[string]*tensor.Tensor{}
	for _, o := range gs.Outputs {
		n := o.Value.Type.Bytes()
		b := whole[o.Name].Bytes()
		if !bytes.Equal(b[n:], bytes.Repeat([]byte{fill}, len(b)-n)) {
			t.Errorf("%v: %s written past the run's %d bytes", env, o.Name, n)
		}
		x, err := tensor.FromBytes(o.Value.Type, b[:n])
		if err != nil {
			t.Fatal(err)
		}
		out[o.Name] = x
	}
	return out, st
}
