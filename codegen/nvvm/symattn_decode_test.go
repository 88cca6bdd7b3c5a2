package nvvm

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/codegen/splitkv"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// symDecodeCase is a decoding step's attention over a symbolic batch of at most b sequences
// (codegen/ptx's table): the split-KV template, appending its K and V rows when appended.
type symDecodeCase struct {
	d                  ir.DType
	b, h, kvh, l, s, e int
	mask               string
	bias               []int // the bias's bound shape; 1 where it broadcasts
	appended           bool
}

func (c symDecodeCase) graph(t *testing.T, b int) *ir.Graph {
	t.Helper()
	if c.appended {
		return appendGraph(t, c.d, ir.I64, b, c.h, c.kvh, c.l, c.s, c.e)
	}
	ac := attnCase{b: b, h: c.h, kvh: c.kvh, l: c.l, s: c.s, e: c.e, ev: c.e, mask: c.mask, d: c.d}
	if c.bias != nil {
		ac.bias = append([]int{min(c.bias[0], b)}, c.bias[1:]...)
	}
	return ac.graph(t)
}

// batchSizes gives every value of g (built at batch bound) that leads with the batch the dim
// batch there: a broadcast 1 stays 1.
func batchSizes(g *ir.Graph, bound int) map[*ir.Value][]sym.Expr {
	m := map[*ir.Value][]sym.Expr{}
	for _, v := range g.Values {
		s := make([]sym.Expr, len(v.Type.Shape))
		for i, n := range v.Type.Shape {
			s[i] = sym.Const(int64(n))
		}
		if len(s) > 0 && v.Type.Shape[0] == bound {
			s[0] = sym.Sym("batch")
		}
		m[v] = s
	}
	return m
}

// TestSymbolicDecodeTemplate: split-KV decoding over a symbolic batch, built once at the bound,
// is the NVVM producer's own (Lacks names nothing) with codegen/ptx's parameters (the scratch,
// then the batch), launch and work (the batch along grid.z), assembles for sm_80 and sm_90
// without spills, and runs on the memchecked simulator (the race check between blocks on) at
// batches the bound, 1 and a prime, with inputs holding the run's rows only (a read or write past
// them is a memcheck error), sequences at different positions: within tolerance of the reference
// and bit for bit codegen/ptx's entry, in order and in a random block order, and at the bound's
// grid (blocks past the batch return) alike; the scratch left zero every run.
func TestSymbolicDecodeTemplate(t *testing.T) {
	p := requireProducer(t)
	for _, c := range []symDecodeCase{
		{ir.F32, 5, 4, 2, 1, 200, 64, ops.MaskPosition, nil, false},                 // GQA, split
		{ir.F16, 7, 4, 4, 1, 160, 64, ops.MaskPosition, []int{7, 1, 1, 160}, false}, // a bias over the batch
		{ir.F32, 4, 2, 1, 2, 100, 32, ops.MaskNone, []int{1, 2, 2, 100}, false},     // a bias broadcast over it, two query rows
		{ir.BF16, 3, 2, 2, 1, 20, 64, ops.MaskPosition, nil, false},                 // S < one chunk: no split
		{ir.F32, 5, 4, 2, 1, 130, 64, ops.MaskPosition, nil, true},                  // appending its rows
		{ir.F16, 3, 8, 2, 1, 256, 64, ops.MaskPosition, nil, true},
	} {
		name := fmt.Sprintf("%s_B%d_H%d_KVH%d_L%d_S%d_E%d_%s_bias%v_appended%v", c.d, c.b, c.h, c.kvh, c.l, c.s, c.e, c.mask, c.bias, c.appended)
		t.Run(name, func(t *testing.T) {
			g := c.graph(t, c.b)
			k := plan.Kernel{Name: "k0_attention", Graph: g, Symbolic: true, Sizes: batchSizes(g, c.b), InPlace: c.appended}
			text, l, ptxText, pl := bothSymbolic(t, p, k, plan.Target{SM: 80})
			assemble(t, text, []plan.Kernel{k})
			sp, _ := splitkv.OfAnyBatch(g.Outputs[0].Value)
			if l.Grid != sp.Grid() || l.Block[0] != sp.Threads() || strings.Contains(text, "mma.sync") {
				t.Fatalf("launch %v %v, want split-KV's grid %v of %d threads", l.Grid, l.Block, sp.Grid(), sp.Threads())
			}
			if w := l.Work; w.Tile != 1 || w.Axis != 2 || w.Elements != "batch" || w.MaxBlocks != 65535 {
				t.Fatalf("work %+v, want the batch along grid.z", *w)
			}
			if last := l.Params[len(l.Params)-1]; last.Kind != plan.ArgSize || last.Expr != "batch" {
				t.Fatalf("last parameter %+v, want the batch's size", last)
			}
			prime := 3
			if c.b <= 3 {
				prime = 2
			}
			for _, n := range []int{c.b, 1, prime} {
				gn := c.graph(t, n)
				in := inputsFor(gn, uint64(11*n+1))
				if pos := in["pos"]; pos != nil {
					base := []int64{int64(c.s) - 1, 0, int64(c.s) / 2, int64(c.s) + 5, 17, int64(c.s) - 2, 1}
					for i := range pos.I {
						pos.I[i] = base[i%len(base)] // the first and last keys, one past the cache (clamped), middles
					}
				}
				want, err := ref.Run(gn, in, nil)
				if err != nil {
					t.Fatal(err)
				}
				emitted, pst := runSymDecode(t, ptxText, k, pl, gn, in, n, n, sim.InOrder)
				for run, order := range []sim.BlockOrder{sim.InOrder, sim.RandomOrder, sim.InOrder} {
					z := n
					if run == 2 {
						z = l.Grid[2] // the bound's grid: blocks past the batch return
					}
					got, st := runSymDecode(t, text, k, l, gn, in, n, z, order)
					if run == 0 && n == c.b {
						t.Logf("warp instructions at batch %d: nvvm %d, ptx %d", n, st.WarpInsts, pst.WarpInsts)
					}
					for name, b := range got {
						if !bytes.Equal(b, emitted[name]) {
							t.Errorf("batch %d, grid.z %d, %v: %s differs from codegen/ptx's entry", n, z, order, name)
						}
					}
					if run == 0 {
						o, err := tensor.FromBytes(want["o"].Type, got["o"])
						if err != nil {
							t.Fatal(err)
						}
						checkAttention(t, o, want["o"])
						for _, name := range []string{"k", "v"} {
							if w := want[name]; w != nil && !bytes.Equal(got[name], w.Bytes()) {
								t.Errorf("batch %d: cache %s differs from the reference's", n, name)
							}
						}
					}
				}
			}
		})
	}
}

// runSymDecode runs a split-KV kernel over a symbolic batch at batch n on a fresh device, grid.z
// z, its inputs (in, at n) in buffers of the run's size, each cache output in its cache input's
// memory (the plan's in_place_of), and returns the outputs' bytes at n; the scratch must be left
// zero; and the launch's counters.
func runSymDecode(t *testing.T, text string, k plan.Kernel, l plan.Launch, gn *ir.Graph, in map[string]*tensor.Tensor, n, z int, order sim.BlockOrder) (map[string][]byte, *sim.Stats) {
	t.Helper()
	sr := loadRun(t, text, k, l, in)
	inputAt := map[string]uint64{}
	for i, a := range l.Params {
		switch a.Kind {
		case plan.ArgInput:
			inputAt[a.Name] = sr.args[i].(uint64)
		case plan.ArgSize:
			sr.args[i] = uint32(n)
		}
	}
	for i, a := range l.Params {
		if c, ok := map[string]string{"k": "kc", "v": "vc"}[a.Name]; ok && a.Kind == plan.ArgOutput {
			sr.args[i], sr.outAddr[a.Name] = inputAt[c], inputAt[c]
		}
	}
	cfg := sr.cfg
	cfg.Grid.Z, cfg.Order, cfg.Seed, cfg.RaceGlobal = z, order, 5, true
	st, err := sr.m.Launch(sr.entry, cfg, sr.args...)
	if err != nil {
		t.Fatalf("batch %d, grid.z %d: %v", n, z, err)
	}
	sr.checkScratch(t, true)
	out := map[string][]byte{}
	for _, o := range gn.Outputs {
		buf := make([]byte, o.Value.Type.Bytes())
		if err := sr.dev.Read(sr.outAddr[o.Name], buf); err != nil {
			t.Fatal(err)
		}
		out[o.Name] = buf
	}
	return out, st
}
