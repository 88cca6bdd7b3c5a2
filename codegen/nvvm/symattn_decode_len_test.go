package nvvm

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// symLenCase is a decoding step's attention over a symbolic cache length past+1 of at most s
// keys (codegen/ptx's table), over a symbolic batch of at most b when batch is set, else a
// static batch b.
type symLenCase struct {
	d               ir.DType
	b               int
	batch           bool
	h, kvh, l, s, e int
	mask            string
	bias            bool // an additive bias [b, h, l, past+1]
}

func (c symLenCase) String() string {
	return fmt.Sprintf("%s_B%d%s_H%d_KVH%d_L%d_S%d_E%d_%s_bias%v", c.d, c.b, map[bool]string{true: "sym"}[c.batch], c.h, c.kvh, c.l, c.s, c.e, c.mask, c.bias)
}

func (c symLenCase) graph(t *testing.T, b, s int) *ir.Graph {
	t.Helper()
	ac := attnCase{b: b, h: c.h, kvh: c.kvh, l: c.l, s: s, e: c.e, ev: c.e, mask: c.mask, d: c.d}
	if c.bias {
		ac.bias = []int{b, c.h, c.l, s}
	}
	return ac.graph(t)
}

// kernel is the case's kernel at the bounds: the keys' axis (K's and V's dim 2, the bias's dim
// 3) past+1, the leading dim the batch when it is symbolic.
func (c symLenCase) kernel(t *testing.T) plan.Kernel {
	g := c.graph(t, c.b, c.s)
	m := map[*ir.Value][]sym.Expr{}
	length := sym.Add(sym.Sym("past"), sym.Const(1))
	for _, v := range g.Values {
		s := make([]sym.Expr, len(v.Type.Shape))
		for i, n := range v.Type.Shape {
			s[i] = sym.Const(int64(n))
		}
		switch v.Name {
		case "k", "v":
			s[2] = length
		case "bias":
			s[3] = length
		}
		if c.batch && len(s) > 0 {
			s[0] = sym.Sym("batch")
		}
		m[v] = s
	}
	return plan.Kernel{Name: "k0_attention", Graph: g, Symbolic: true, Sizes: m}
}

// TestSymbolicDecodeLengthTemplate: split-KV decoding over a symbolic cache length (and a
// symbolic batch), built once at the bounds, is the NVVM producer's own (Lacks names nothing)
// with codegen/ptx's parameters, launch and work, assembles for sm_80 and sm_90 without spills,
// and runs on the memchecked simulator (the race check between blocks on) at S the bound, 1 and
// a prime, with inputs holding the run's keys only (contiguous at the run's S: a read past them
// is a memcheck error) and the scratch the runs share left zero: within tolerance of the
// reference and bit for bit codegen/ptx's entry, in order, in reverse and in a random block
// order, and at the bound's grid (blocks past the run's chunks and batch return) alike.
func TestSymbolicDecodeLengthTemplate(t *testing.T) {
	p := requireProducer(t)
	for _, c := range []symLenCase{
		{ir.F32, 2, false, 4, 2, 1, 300, 64, ops.MaskPosition, false}, // GQA, many chunks
		{ir.F16, 3, true, 4, 4, 1, 200, 64, ops.MaskNone, true},       // symbolic batch too, a bias over the keys
		{ir.BF16, 1, false, 8, 1, 2, 150, 32, ops.MaskCausal, false},  // MQA, two query rows
		{ir.BF16, 2, true, 4, 2, 1, 257, 64, ops.MaskPosition, false}, // a prime bound, both symbolic
		{ir.F32, 2, true, 2, 1, 1, 20, 128, ops.MaskPosition, false},  // S < one chunk: no split
	} {
		t.Run(c.String(), func(t *testing.T) {
			k := c.kernel(t)
			text, l, ptxText, pl := bothSymbolic(t, p, k, plan.Target{SM: 80})
			assemble(t, text, []plan.Kernel{k})
			pa, _ := plan.PlanAttention(k.Graph)
			sp, _, _, ok := plan.SymDecodeLength(pa.Op, k.Sizes)
			if !ok || l.Grid != sp.Grid() || l.Block[0] != sp.Threads() || strings.Contains(text, "mma.sync") {
				t.Fatalf("launch %v %v, want split-KV's grid %v of %d threads", l.Grid, l.Block, sp.Grid(), sp.Threads())
			}
			want := plan.SymWork{Vector: 1, MaxBlocks: sp.Splits, Scale: 1, Tile: sp.Chunk, Axis: 0, Elements: "past+1"}
			if c.batch {
				want = plan.SymWork{Vector: 1, MaxBlocks: 65535, Scale: 1, Tile: 1, Axis: 2, Elements: "batch"}
			}
			if *l.Work != want {
				t.Fatalf("work %+v, want %+v", *l.Work, want)
			}
			nv, px := newLenRunner(t, text, l), newLenRunner(t, ptxText, pl)
			prime := 13
			for i, s := range []int{c.s, 1, min(prime, c.s)} { // the bound first: smaller runs reuse its scratch
				n := c.b
				if c.batch && i == 1 {
					n = 1
				}
				gs := c.graph(t, n, s)
				in := inputsFor(gs, uint64(7*s+n))
				if pos := in["pos"]; pos != nil {
					base := []int64{int64(s) - 1, 0, int64(s) / 2, int64(s) + 5, 17, int64(s) - 2, 1}
					for j := range pos.I {
						pos.I[j] = base[j%len(base)] // the first and last keys, one past the cache (clamped), middles
					}
				}
				wantO, err := ref.Run(gs, in, nil)
				if err != nil {
					t.Fatal(err)
				}
				env := map[string]int64{"past": int64(s - 1), "batch": int64(n)}
				emitted, pst := px.run(t, gs, in, env, false, sim.InOrder)
				for _, run := range []struct {
					bound bool
					order sim.BlockOrder
				}{{false, sim.InOrder}, {false, sim.Reverse}, {false, sim.RandomOrder}, {true, sim.InOrder}} {
					got, st := nv.run(t, gs, in, env, run.bound, run.order)
					if !bytes.Equal(got, emitted) {
						t.Errorf("S %d, batch %d, bound grid %v, %v: the output differs from codegen/ptx's entry", s, n, run.bound, run.order)
					}
					if run.order == sim.InOrder && !run.bound {
						if s == c.s {
							t.Logf("warp instructions at S %d: nvvm %d, ptx %d", s, st.WarpInsts, pst.WarpInsts)
						}
						o, err := tensor.FromBytes(wantO["o"].Type, got)
						if err != nil {
							t.Fatal(err)
						}
						checkAttention(t, o, wantO["o"])
					}
				}
			}
		})
	}
}

// lenRunner runs one entry of a symbolic split-KV kernel on its own simulated device, its
// scratch allocated zero once at the bound and shared by the runs.
type lenRunner struct {
	dev     *sim.Device
	m       *sim.Module
	l       plan.Launch
	scratch uint64
}

func newLenRunner(t *testing.T, text string, l plan.Launch) *lenRunner {
	t.Helper()
	r := &lenRunner{dev: sim.NewDevice(), l: l}
	var err error
	if r.m, err = r.dev.Load(text); err != nil {
		t.Fatal(err)
	}
	for _, a := range l.Params {
		if a.Kind == plan.ArgScratch {
			if r.scratch, err = r.dev.Alloc(a.Bytes); err != nil {
				t.Fatal(err)
			}
			if err := r.dev.Write(r.scratch, make([]byte, a.Bytes)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return r
}

// run launches the kernel at the sizes env gives (gs is the graph at them, in its inputs) on
// the grid the work gives them, or the bound's, in block order order with the race check
// between blocks on; inputs and outputs are allocated at the run's sizes. It fails the test
// unless the scratch is left zero, and returns output o's bytes and the launch's counters.
func (r *lenRunner) run(t *testing.T, gs *ir.Graph, in map[string]*tensor.Tensor, env map[string]int64, bound bool, order sim.BlockOrder) ([]byte, *sim.Stats) {
	t.Helper()
	l := r.l
	grid := l.Grid
	if !bound {
		w := artifact.Work{Elements: l.Work.Elements, Vector: l.Work.Vector, MaxBlocks: l.Work.MaxBlocks, Tile: l.Work.Tile, Axis: l.Work.Axis}
		grid = w.Grid(evalSize(t, w.Elements, env), l.Grid, l.Block)
	}
	var args []any
	var out uint64
	scratchBytes := 0
	alloc := func(data []byte, n int) uint64 {
		a, err := r.dev.Alloc(max(n, 1))
		if err != nil {
			t.Fatal(err)
		}
		if data != nil {
			if err := r.dev.Write(a, data); err != nil {
				t.Fatal(err)
			}
		}
		return a
	}
	for _, a := range l.Params {
		switch a.Kind {
		case plan.ArgInput:
			b := in[a.Name].Bytes()
			args = append(args, alloc(b, len(b)))
		case plan.ArgOutput:
			out = alloc(nil, gs.Outputs[a.Index].Value.Type.Bytes())
			args = append(args, out)
		case plan.ArgScratch:
			args, scratchBytes = append(args, r.scratch), a.Bytes
		case plan.ArgSize:
			args = append(args, uint32(evalSize(t, a.Expr, env)))
		default:
			t.Fatalf("unexpected parameter %+v", a)
		}
	}
	cfg := sim.Config{Grid: sim.Dim3{X: grid[0], Y: grid[1], Z: grid[2]}, Block: sim.Dim3{X: l.Block[0], Y: 1, Z: 1}, Order: order, Seed: 3, RaceGlobal: true}
	st, err := r.m.Launch("k0_attention", cfg, args...)
	if err != nil {
		t.Fatalf("%v, grid %v: %v", env, grid, err)
	}
	got := make([]byte, gs.Outputs[0].Value.Type.Bytes())
	if err := r.dev.Read(out, got); err != nil {
		t.Fatal(err)
	}
	if r.scratch != 0 {
		z := make([]byte, scratchBytes)
		if err := r.dev.Read(r.scratch, z); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(z, make([]byte, scratchBytes)) {
			t.Fatalf("%v: the scratch is not left zero", env)
		}
	}
	return got, st
}

// evalSize is size expression expr at the dims' values env.
func evalSize(t *testing.T, expr string, env map[string]int64) int64 {
	t.Helper()
	e, err := sym.Parse(expr)
	if err != nil {
		t.Fatal(err)
	}
	v, err := e.Eval(env)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
