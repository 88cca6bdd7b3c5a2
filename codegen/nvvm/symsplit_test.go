package nvvm

import (
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// TestSymbolicSplitReduction: a symbolic full reduction the plan splits at the bound (10000
// rows of 4, 20 blocks) is the NVVM producer's own (Lacks names nothing), with codegen/ptx's
// parameters, grid, block and work (a block per 2048 elements along x, at most the bound's). At
// 0, 1, primes below and above the split, whole shares and the bound, over the grid the work
// gives, it runs on the memchecked simulator in block order and, with the global race check,
// reversed: within tolerance of the reference, codegen/ptx's entry's bits, the scratch left all
// zero (partials too: the plan's scratch area is shared, another split kernel's counter may sit
// where a partial was).
func TestSymbolicSplitReduction(t *testing.T) {
	p := requireProducer(t)
	target := plan.Target{SM: 80}
	const bound = 10000
	for _, d := range []ir.DType{ir.F32, ir.F16, ir.BF16} {
		t.Run(d.String(), func(t *testing.T) {
			parse := func(rows int) *ir.Graph {
				g, err := ir.Parse("k.gir", fmt.Appendf(nil, "graph k {\n  input %%x : %[1]s[%[2]d,4]\n  %%0 = mul(%%x, %%x) : %[1]s[%[2]d,4]\n"+
					"  %%1 = reduce_sum(%%0) {axes=[0,1]} : %[1]s[]\n  output s = %%1\n}\n", d, rows))
				if err != nil {
					t.Fatal(err)
				}
				return g
			}
			g := parse(bound)
			k := plan.Kernel{Name: "k0", Graph: g, Symbolic: true, Rows: bound}
			if rp, err := plan.ReducePlan(k); err != nil || rp.Kind != "split" {
				t.Fatalf("plan %q, %v; want split", rp.Kind, err)
			}
			text, l, ptxText, pl := bothEntries(t, p, k, target) // symfold_test.go
			if l.Work == nil || l.Work.Axis != 0 || l.Work.Tile != 2048 || l.Work.MaxBlocks != l.Grid[0] || l.Grid[0] < 2 {
				t.Fatalf("grid %v work %+v: want the bound's split", l.Grid, l.Work)
			}
			assemble(t, text, []plan.Kernel{k})
			in := inputsFor(g, 3)
			w := artifact.Work{Elements: "n", Vector: 1, MaxBlocks: l.Work.MaxBlocks, Tile: l.Work.Tile, Axis: l.Work.Axis}
			for _, r := range []int{0, 1, 4099, 8209, 8704, bound} {
				grid := w.Grid(int64(4*r), l.Grid, l.Block)
				what := fmt.Sprintf("%d of %d rows (%d blocks)", r, bound, grid[0])
				got := splitRun(t, what, text, k, l, in, 4*r, grid)
				emitted := splitRun(t, what, ptxText, k, pl, in, 4*r, grid)
				gr := parse(r)
				x, err := tensor.FromBytes(gr.Inputs()[0].Type, firstRows(t, in["x"], bound, r).Bytes())
				if err != nil {
					t.Fatal(err)
				}
				want, err := ref.Run(gr, map[string]*tensor.Tensor{"x": x}, nil)
				if err != nil {
					t.Fatal(err)
				}
				compare(t, what+" (reference)", got, want["s"], false, d, false, max(1, 4*r))
				compare(t, what+" (codegen/ptx)", got, emitted, true, d, false, 1)
			}
		})
	}
}

// splitRun launches split kernel k (text, launch l) with count n over grid, in block order and
// then reversed with the global race check: both must give the same output and leave the
// scratch zero. It returns the output.
func splitRun(t *testing.T, what, text string, k plan.Kernel, l plan.Launch, in map[string]*tensor.Tensor, n int, grid [3]int) *tensor.Tensor {
	t.Helper()
	sr := loadRun(t, text, k, l, in)
	for i, a := range l.Params {
		if a.Kind == plan.ArgSize {
			sr.args[i] = uint32(n)
		}
	}
	sr.cfg.Grid = sim.Dim3{X: grid[0], Y: grid[1], Z: grid[2]}
	var first *tensor.Tensor
	for i, order := range []sim.BlockOrder{sim.InOrder, sim.Reverse} {
		cfg := sr.cfg
		cfg.Order, cfg.RaceGlobal = order, i > 0
		if _, err := sr.m.Launch(sr.entry, cfg, sr.args...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		sr.checkScratch(t, true)
		_, out := sr.read(t)
		if first == nil {
			first = out["s"]
		} else if string(out["s"].Bytes()) != string(first.Bytes()) {
			t.Errorf("%s: blocks reversed give other bits", what)
		}
	}
	return first
}
