package ptx

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/codegen/splitkv"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// symLenCase is a decoding step's attention over a symbolic cache length past+1 of at most s
// keys, over a symbolic batch of at most b when batch is set, else a static batch b.
type symLenCase struct {
	d               ir.DType
	b               int
	batch           bool
	h, kvh, l, s, e int
	mask            string
	bias            bool // an additive bias [b, h, l, past+1]
}

func (c symLenCase) graph(t *testing.T, b, s int) *ir.Graph {
	t.Helper()
	var bias []int
	if c.bias {
		bias = []int{b, c.h, c.l, s}
	}
	return attentionGraph(t, c.d, b, c.h, c.kvh, c.l, s, c.e, c.e, c.mask, bias)
}

// sizes gives each value of g (built at the bounds) its sizes: the keys' axis (K's and V's dim
// 2, the bias's dim 3) past+1, the leading dim the batch when it is symbolic.
func (c symLenCase) sizes(g *ir.Graph) map[*ir.Value][]sym.Expr {
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
	return m
}

// TestSymbolicDecodeLengthKernel: split-KV decoding over a symbolic cache length (and a symbolic
// batch), built once at the bounds, runs on the memchecked simulator (a race check between the
// blocks) at S = 1, a prime, a chunk multiple and the bound against the reference: the split is
// plan.SymDecodeLength's, the grid's x the run's chunk count (over a symbolic batch, z the run's batch),
// the scratch one allocation every run leaves zero, two runs (the second in a random block
// order) bit for bit equal, and a launch at the bound's grid equal to them (blocks past the
// run's chunks and batch exit). Inputs hold the run's keys only, contiguous at the run's S, so a
// read past them is a memcheck error.
func TestSymbolicDecodeLengthKernel(t *testing.T) {
	for _, c := range []symLenCase{
		{ir.F32, 2, false, 4, 2, 1, 300, 64, ops.MaskPosition, false}, // GQA, many chunks
		{ir.F16, 3, true, 4, 4, 1, 200, 64, ops.MaskNone, true},       // symbolic batch too, a bias over the keys
		{ir.BF16, 1, false, 8, 1, 2, 150, 32, ops.MaskCausal, false},  // MQA, two query rows
		{ir.F32, 2, true, 2, 1, 1, 20, 128, ops.MaskPosition, false},  // S < one chunk: no split
	} {
		name := fmt.Sprintf("%s_B%d%s_H%d_KVH%d_L%d_S%d_E%d_%s_bias%v", c.d, c.b, map[bool]string{true: "sym"}[c.batch], c.h, c.kvh, c.l, c.s, c.e, c.mask, c.bias)
		t.Run(name, func(t *testing.T) {
			g := c.graph(t, c.b, c.s)
			k := Kernel{Name: "k0_attention", Graph: g, Symbolic: true, Sizes: c.sizes(g)}
			text, launches, err := Module([]Kernel{k}, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			assemble(t, text)
			l := launches[0]
			p, _ := PlanAttention(g)
			sp, _, _, ok := plan.SymDecodeLength(p.Op, k.Sizes)
			over := "over cache length past+1, "
			if c.batch {
				over = "over batch batch and cache length past+1, "
			}
			if !ok || !strings.Contains(text, "split-KV attention, "+over) || l.Grid != sp.Grid() || l.Block[0] != sp.Threads() {
				t.Fatalf("launch %v %v, want split-KV %sgrid %v of %d threads", l.Grid, l.Block, over, sp.Grid(), sp.Threads())
			}
			want := SymWork{Vector: 1, MaxBlocks: sp.Splits, Scale: 1, Tile: sp.Chunk, Axis: 0, Elements: "past+1"}
			if c.batch {
				want = SymWork{Vector: 1, MaxBlocks: 65535, Scale: 1, Tile: 1, Axis: 2, Elements: "batch"}
			}
			if l.Work == nil || *l.Work != want {
				t.Fatalf("work %+v, want %+v", l.Work, want)
			}
			if last := l.Params[len(l.Params)-1]; last.Kind != ArgSize || last.Expr != want.Elements {
				t.Fatalf("last parameter %+v, want the work's size %s", last, want.Elements)
			}
			dev, m, scratch := loadZeroScratch(t, text, l)
			if (scratch != 0) != (sp.Splits > 1) {
				t.Fatalf("scratch %v with %d splits", scratch != 0, sp.Splits)
			}
			lengths := []int{c.s, 1, 13, min(2*sp.Chunk, c.s)} // the bound first, then smaller runs reuse its scratch
			for i, s := range lengths {
				n := c.b
				if c.batch && i%2 == 1 {
					n = 1
				}
				c.runAt(t, dev, m, l, g, n, s, scratch)
			}
		})
	}
}

// runAt runs the kernel at batch n and cache length s twice (in order, then in a random block
// order) and once more at the bound's grid, each equal bit for bit, against the reference, the
// scratch left zero after each. It returns the first run's warp instructions.
func (c symLenCase) runAt(t *testing.T, dev *sim.Device, m *sim.Module, l Launch, g *ir.Graph, n, s int, scratch uint64) int64 {
	t.Helper()
	gs := c.graph(t, n, s)
	in := inputsFor(gs, uint64(7*s+n), 1)
	if pos := in["pos"]; pos != nil {
		for i, p := range decodePositions(s, n) {
			pos.I[i] = p
		}
	}
	want, err := ref.Run(gs, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]int64{"past": int64(s - 1), "batch": int64(n)}
	w := artifact.Work{Elements: l.Work.Elements, Vector: l.Work.Vector, MaxBlocks: l.Work.MaxBlocks, Tile: l.Work.Tile, Axis: l.Work.Axis}
	elems, err := sym.Parse(w.Elements)
	if err != nil {
		t.Fatal(err)
	}
	size, _ := elems.Eval(env)
	grid := w.Grid(size, l.Grid, l.Block)
	var first []byte
	var insts int64
	for run, grid := range [][3]int{grid, grid, l.Grid} {
		addr, types := map[string]uint64{}, map[string]ir.Type{}
		var args []any
		scratchBytes := 0
		for _, a := range l.Params {
			switch a.Kind {
			case ArgInput:
				// contiguous at the run's sizes, at the start of the bound's buffer
				args = append(args, allocNamed(t, dev, addr, types, a.Name, g.Inputs()[a.Index].Type, in[a.Name].Bytes()))
			case ArgOutput:
				args = append(args, allocNamed(t, dev, addr, types, a.Name, g.Outputs[a.Index].Value.Type, nil))
			case ArgScratch:
				args = append(args, scratch)
				scratchBytes = a.Bytes
			case ArgSize:
				e, err := sym.Parse(a.Expr)
				if err != nil {
					t.Fatal(err)
				}
				v, err := e.Eval(env)
				if err != nil {
					t.Fatal(err)
				}
				args = append(args, uint32(v))
			default:
				t.Fatalf("unexpected parameter %+v", a)
			}
		}
		st, err := m.Launch("k0_attention", decodeRunConfig(grid, l.Block[0], run, 3), args...)
		if err != nil {
			t.Fatalf("batch %d, S %d, grid %v: %v", n, s, grid, err)
		}
		got := make([]byte, want["o"].Type.Bytes())
		if err := dev.Read(addr["o"], got); err != nil {
			t.Fatal(err)
		}
		if scratch != 0 {
			z := make([]byte, scratchBytes)
			if err := dev.Read(scratch, z); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(z, make([]byte, scratchBytes)) {
				t.Fatalf("batch %d, S %d: the scratch is not left zero", n, s)
			}
		}
		if first == nil {
			first, insts = got, st.WarpInsts
			o, err := tensor.FromBytes(want["o"].Type, got)
			if err != nil {
				t.Fatal(err)
			}
			checkAttention(t, o, want["o"])
			continue
		}
		if !bytes.Equal(got, first) {
			t.Errorf("batch %d, S %d, grid %v, run %d: other bits", n, s, grid, run)
		}
	}
	return insts
}

// TestSymbolicDecodeLengthWarpInsts: at the bound the kernel over a symbolic cache length
// executes about the static kernel's warp instructions (the same split; its sizes in registers),
// and at half the bound about half of them: the chunks past the run's S do not run.
//
//	go test ./codegen/ptx -run TestSymbolicDecodeLengthWarpInsts -v
func TestSymbolicDecodeLengthWarpInsts(t *testing.T) {
	c := symLenCase{ir.F32, 1, false, 4, 4, 1, 512, 64, ops.MaskNone, false}
	g := c.graph(t, c.b, c.s)
	k := Kernel{Name: "k0_attention", Graph: g, Symbolic: true, Sizes: c.sizes(g)}
	text, launches, err := Module([]Kernel{k}, Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := PlanAttention(g)
	lp, _, _, _ := plan.SymDecodeLength(p.Op, k.Sizes)
	if sp, _ := splitkv.Of(p.Op); lp.Chunk != sp.Chunk {
		t.Fatalf("chunks of %d, the static kernel's %d: want the same split to compare", lp.Chunk, sp.Chunk)
	}
	dev, m, scratch := loadZeroScratch(t, text, launches[0])
	static := func(s int) int64 {
		gs := c.graph(t, c.b, s)
		return runKernel(t, Kernel{Name: "k0_attention", Graph: gs}, inputsFor(gs, 1, 1)).stats.WarpInsts
	}
	symBound, symHalf := c.runAt(t, dev, m, launches[0], g, 1, c.s, scratch), c.runAt(t, dev, m, launches[0], g, 1, c.s/2, scratch)
	statBound, statHalf := static(c.s), static(c.s/2)
	t.Logf("warp instructions, %d heads of %d, f32: S %d symbolic %d, static %d; S %d symbolic %d, static %d",
		c.h, c.e, c.s, symBound, statBound, c.s/2, symHalf, statHalf)
	if float64(symBound) > 1.05*float64(statBound) {
		t.Errorf("at the bound the symbolic kernel executes %d warp instructions, the static %d: want at most 5%% more", symBound, statBound)
	}
	if float64(symHalf) > 0.6*float64(symBound) {
		t.Errorf("at half the bound the symbolic kernel executes %d warp instructions, %d at the bound: want at most 60%%", symHalf, symBound)
	}
}

// loadZeroScratch loads text on a new simulated device and allocates launch l's scratch, zero,
// if it has one (else 0).
func loadZeroScratch(t *testing.T, text string, l Launch) (*sim.Device, *sim.Module, uint64) {
	t.Helper()
	dev := sim.NewDevice()
	m, err := dev.Load(text)
	if err != nil {
		t.Fatal(err)
	}
	var scratch uint64
	for _, a := range l.Params {
		if a.Kind == ArgScratch {
			if scratch, err = dev.Alloc(a.Bytes); err != nil {
				t.Fatal(err)
			}
			if err := dev.Write(scratch, make([]byte, a.Bytes)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dev, m, scratch
}

// decodeRunConfig is a decode test's launch of run (0, 1, …): the global race check on, run 1 in
// a random block order (seed), the others in order.
func decodeRunConfig(grid [3]int, threads, run int, seed uint64) sim.Config {
	order := sim.InOrder
	if run == 1 {
		order = sim.RandomOrder
	}
	return sim.Config{Grid: sim.Dim3{X: grid[0], Y: grid[1], Z: grid[2]}, Block: sim.Dim3{X: threads, Y: 1, Z: 1}, Order: order, Seed: seed, RaceGlobal: true}
}
