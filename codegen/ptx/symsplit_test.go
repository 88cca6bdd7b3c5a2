package ptx

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// splitSrc is a loss-like full reduction over rows·4 elements of dtype d, fused with its square.
func splitSrc(d ir.DType, rows int) string {
	return fmt.Sprintf("graph k {\n  input %%x : %[1]s[%[2]d,4]\n  %%0 = mul(%%x, %%x) : %[1]s[%[2]d,4]\n"+
		"  %%1 = reduce_sum(%%0) {axes=[0,1]} : %[1]s[]\n  output out = %%1\n}\n", d, rows)
}

// TestSymbolicSplitReductionRuns: the split full reduction built once at 10000 rows (40000
// elements, 20 blocks) runs on the memchecked simulator at counts 0, 1, primes below and above
// the split, a whole number of block shares and the bound, over the grid the plan's work gives
// at each count: twice in block order, then with the global race check in reversed and a
// random order, every launch the same bits and the scratch left zero (reusable); within
// tolerance of the reference, and bit for bit the static kernel built for that count where it
// splits too (at least 32768 elements). The warp instructions of both are docs/perf.md's
// (go test -run TestSymbolicSplitReductionRuns -v ./codegen/ptx).
func TestSymbolicSplitReductionRuns(t *testing.T) {
	const bound = 10000
	for _, d := range []ir.DType{ir.F32, ir.F16, ir.BF16} {
		t.Run(d.String(), func(t *testing.T) {
			g := parse(t, splitSrc(d, bound))
			text, ls, err := Module([]Kernel{{Name: "k0", Graph: g, Symbolic: true, Rows: bound}}, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			assemble(t, text)
			l := ls[0]
			if l.Work == nil || l.Grid[0] != splitBlocks(4*bound) || l.Params[len(l.Params)-2].Kind != ArgScratch {
				t.Fatalf("launch %+v: want the bound's split grid, a scratch buffer and a size", l)
			}
			w := artifact.Work{Elements: "n", Vector: l.Work.Vector, MaxBlocks: l.Work.MaxBlocks, Tile: l.Work.Tile, Axis: l.Work.Axis}
			for _, rows := range []int{0, 1, 4099, 8209, 8704, bound} {
				n := 4 * rows
				grid := w.Grid(int64(n), l.Grid, l.Block)
				if n >= splitReduce && grid[0] != splitBlocks(n) {
					t.Errorf("%d elements: grid %v, the static split launches %d blocks", n, grid, splitBlocks(n))
				}
				gs := parse(t, splitSrc(d, rows))
				in, _, err := tensor.SeededValues(gs, uint64(rows+1))
				if err != nil {
					t.Fatal(err)
				}
				what := fmt.Sprintf("%d of %d rows", rows, bound)
				got, st := runSplit(t, what, text, l, g, n, grid, in["x"].Bytes())
				if rows == 0 {
					if !bytes.Equal(got, make([]byte, len(got))) {
						t.Errorf("%s: sum %x, want 0", what, got)
					}
					continue
				}
				run := checkStaticAndRef(t, what, got, gs, in, Target{SM: 80}, d, n, n >= splitReduce)
				t.Logf("%s: %d blocks, %d warp instructions built once, %d static", what, grid[0], st.WarpInsts, run.stats.WarpInsts)
			}
		})
	}
}

// runSplit launches split kernel l (of g, at the bound) over grid with size parameter n, x at the
// start of its bound-sized buffer and the scratch zero: in block order twice, then with the
// global race check reversed and in a random order. Every launch must give the same output and
// leave the scratch zero. It returns the output's bytes and the first launch's counters.
func runSplit(t *testing.T, what, text string, l Launch, g *ir.Graph, n int, grid [3]int, x []byte) ([]byte, *sim.Stats) {
	t.Helper()
	dev := sim.NewDevice()
	m, err := dev.Load(text)
	if err != nil {
		t.Fatal(err)
	}
	var args []any
	var out, scratch uint64
	alloc := func(nb int, data []byte) uint64 {
		addr, err := dev.Alloc(nb)
		if err != nil {
			t.Fatal(err)
		}
		if err := dev.Write(addr, data); err != nil {
			t.Fatal(err)
		}
		return addr
	}
	for _, a := range l.Params {
		switch a.Kind {
		case ArgSize:
			args = append(args, uint32(n))
		case ArgInput:
			args = append(args, alloc(g.Inputs()[a.Index].Type.Bytes(), x)) // the rest never written
		case ArgOutput:
			nb := g.Outputs[a.Index].Value.Type.Bytes()
			out = alloc(nb, bytes.Repeat([]byte{symUntouched}, nb))
			args = append(args, out)
		case ArgScratch:
			scratch = alloc(a.Bytes, make([]byte, a.Bytes))
			args = append(args, scratch)
		default:
			t.Fatalf("unexpected parameter %+v", a)
		}
	}
	read := func(addr uint64, nb int) []byte {
		b := make([]byte, nb)
		if err := dev.Read(addr, b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	var first []byte
	var stats *sim.Stats
	for i, order := range []sim.BlockOrder{sim.InOrder, sim.InOrder, sim.Reverse, sim.RandomOrder} {
		cfg := sim.Config{Grid: sim.Dim3{X: grid[0], Y: grid[1], Z: grid[2]}, Block: sim.Dim3{X: l.Block[0], Y: l.Block[1], Z: l.Block[2]},
			Order: order, Seed: uint64(n), RaceGlobal: i > 1}
		st, err := m.Launch("k0", cfg, args...)
		if err != nil {
			t.Fatalf("%s, launch %d (%v): %v", what, i, order, err)
		}
		got := read(out, g.Outputs[0].Value.Type.Bytes())
		if i == 0 {
			first, stats = got, st
		} else if !bytes.Equal(got, first) {
			t.Errorf("%s: launch %d (%v) gives other bits", what, i, order)
		}
		sb := l.Params[len(l.Params)-2].Bytes
		if s := read(scratch, sb); !bytes.Equal(s, make([]byte, sb)) {
			t.Errorf("%s: launch %d (%v) leaves the scratch nonzero", what, i, order)
		}
	}
	return first, stats
}
