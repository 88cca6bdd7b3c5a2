package ptx

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/splitkv"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// symDecodeCase is a decoding step's attention over a symbolic batch of at most b sequences:
// the split-KV template (appending its K and V rows to the caches when appended).
type symDecodeCase struct {
	d                  ir.DType
	b, h, kvh, l, s, e int
	mask               string
	bias               []int // the bias's bound shape; 1 where it broadcasts
	appended           bool  // attention appends the step's rows to its caches (appendGraph)
}

func (c symDecodeCase) graph(t *testing.T, b int) *ir.Graph {
	t.Helper()
	if c.appended {
		return appendGraph(t, c.d, ir.I64, b, c.h, c.kvh, c.l, c.s, c.e)
	}
	var bias []int
	if c.bias != nil {
		bias = append([]int{min(c.bias[0], b)}, c.bias[1:]...)
	}
	return attentionGraph(t, c.d, b, c.h, c.kvh, c.l, c.s, c.e, c.e, c.mask, bias)
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

// decodePositions are the sequences' positions at a run of n: each its own, the first and last
// keys, one past the cache (clamped) and middles.
func decodePositions(s, n int) []int64 {
	base := []int64{int64(s) - 1, 0, int64(s) / 2, int64(s) + 5, 17, int64(s) - 2, 1}
	p := make([]int64, n)
	for i := range p {
		p[i] = base[i%len(base)]
	}
	return p
}

// TestSymbolicDecodeKernel: split-KV decoding over a symbolic batch, built once at the bound,
// runs on the memchecked simulator (a race check between the blocks) at batches 1, a prime and
// the bound against the reference at each, sequences at different positions: the grid's z is
// the run's batch (the plan's work), the split is splitkv.ForBatches' for every batch, the
// scratch one allocation the runs share and every run leaves zero, two runs (the second in a
// random block order) bit for bit equal, and a launch at the bound's grid equal to one at the
// run's (blocks past the batch exit). Inputs hold the run's rows only, so a read past them is a
// memcheck error; an appended cache's rows past the run keep their bits.
func TestSymbolicDecodeKernel(t *testing.T) {
	for _, c := range []symDecodeCase{
		{ir.F32, 5, 4, 2, 1, 200, 64, ops.MaskPosition, nil, false},                 // GQA, split
		{ir.F16, 7, 4, 4, 1, 160, 64, ops.MaskPosition, []int{7, 1, 1, 160}, false}, // a bias over the batch
		{ir.F32, 4, 2, 1, 2, 100, 32, ops.MaskNone, []int{1, 2, 2, 100}, false},     // a bias broadcast over it, two query rows
		{ir.BF16, 3, 2, 2, 1, 20, 64, ops.MaskPosition, nil, false},                 // S < one chunk: no split
		{ir.F32, 5, 4, 2, 1, 130, 64, ops.MaskPosition, nil, true},                  // appending its rows
		{ir.F16, 3, 8, 2, 1, 256, 64, ops.MaskPosition, nil, true},                  //
	} {
		name := fmt.Sprintf("%s_B%d_H%d_KVH%d_L%d_S%d_E%d_%s_bias%v_appended%v", c.d, c.b, c.h, c.kvh, c.l, c.s, c.e, c.mask, c.bias, c.appended)
		t.Run(name, func(t *testing.T) {
			g := c.graph(t, c.b)
			k := Kernel{Name: "k0_attention", Graph: g, Symbolic: true, Sizes: batchSizes(g, c.b), InPlace: c.appended}
			text, launches, err := Module([]Kernel{k}, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			assemble(t, text)
			l := launches[0]
			var att *ir.Value
			for _, v := range g.Values {
				if v.Op == ops.AttentionOp {
					att = v
				}
			}
			sp, _ := splitkv.OfAnyBatch(att)
			if !strings.Contains(text, "split-KV attention, over batch batch, ") || l.Grid != sp.Grid() || l.Block[0] != sp.Threads() {
				t.Fatalf("launch %v %v, want split-KV over the batch, grid %v of %d threads", l.Grid, l.Block, sp.Grid(), sp.Threads())
			}
			if w := l.Work; w == nil || w.Tile != 1 || w.Axis != 2 || w.Elements != "batch" || w.MaxBlocks != 65535 {
				t.Fatalf("work %+v, want the batch along grid.z", l.Work)
			}
			if last := l.Params[len(l.Params)-1]; last.Kind != ArgSize || last.Expr != "batch" {
				t.Fatalf("last parameter %+v, want the batch's size", last)
			}
			dev, m, scratch := loadZeroScratch(t, text, l)
			if (scratch != 0) != (sp.Splits > 1) {
				t.Fatalf("scratch %v with %d splits", scratch != 0, sp.Splits)
			}
			prime := 3
			if c.b <= 3 {
				prime = 2
			}
			for _, n := range []int{c.b, 1, prime} { // the bound first: smaller runs then reuse its scratch
				c.runAt(t, dev, m, l, g, n, scratch)
			}
		})
	}
}

// runAt runs the kernel at batch n twice (in order, then in a random block order) and once more
// at the bound's grid, each equal bit for bit, against the reference at n, the scratch left zero
// after each.
func (c symDecodeCase) runAt(t *testing.T, dev *sim.Device, m *sim.Module, l Launch, g *ir.Graph, n int, scratch uint64) {
	t.Helper()
	gs := c.graph(t, n)
	in := inputsFor(gs, uint64(11*n+1), 1)
	if pos := in["pos"]; pos != nil {
		copy(pos.I, decodePositions(c.s, n))
	}
	want, err := ref.Run(gs, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	var first map[string][]byte
	for run, grid := range [][3]int{{l.Grid[0], l.Grid[1], n}, {l.Grid[0], l.Grid[1], n}, l.Grid} {
		// Caches at the bound: the run's rows, then rows of another run that must keep their bits.
		fill := inputsFor(g, 99, 1)
		addr, types := map[string]uint64{}, map[string]ir.Type{}
		alloc := func(name string, ty ir.Type, data []byte) uint64 {
			return allocNamed(t, dev, addr, types, name, ty, data)
		}
		var args []any
		scratchBytes := 0
		for _, a := range l.Params {
			switch a.Kind {
			case ArgInput:
				ty := g.Inputs()[a.Index].Type
				data := in[a.Name].Bytes() // contiguous at n, at the start of the bound's buffer
				if a.Name == "kc" || a.Name == "vc" {
					data = append(append([]byte(nil), data...), fill[a.Name].Bytes()[len(data):]...)
				}
				args = append(args, alloc(a.Name, ty, data))
			case ArgOutput:
				if cache := map[string]string{"k": "kc", "v": "vc"}[a.Name]; cache != "" {
					args = append(args, addr[cache])
					addr[a.Name], types[a.Name] = addr[cache], types[cache]
					continue
				}
				args = append(args, alloc(a.Name, g.Outputs[a.Index].Value.Type, nil)) // written, never read
			case ArgScratch:
				args = append(args, scratch)
				scratchBytes = a.Bytes
			case ArgSize:
				args = append(args, uint32(n))
			default:
				t.Fatalf("unexpected parameter %+v", a)
			}
		}
		if _, err := m.Launch("k0_attention", decodeRunConfig(grid, l.Block[0], run, 5), args...); err != nil {
			t.Fatalf("batch %d, grid %v: %v", n, grid, err)
		}
		read := func(name string, bytes int) []byte {
			buf := make([]byte, bytes)
			if err := dev.Read(addr[name], buf); err != nil {
				t.Fatal(err)
			}
			return buf
		}
		got := map[string][]byte{"o": read("o", want["o"].Type.Bytes())}
		if c.appended {
			for _, name := range []string{"k", "v"} {
				cache := read(name, types[name].Bytes())
				run := want[name].Bytes()
				if !bytes.Equal(cache[:len(run)], run) {
					t.Errorf("batch %d: cache %s differs from the reference's", n, name)
				}
				if !bytes.Equal(cache[len(run):], fill[map[string]string{"k": "kc", "v": "vc"}[name]].Bytes()[len(run):]) {
					t.Errorf("batch %d: cache %s's rows past the run were written", n, name)
				}
				got[name] = cache
			}
		}
		if scratch != 0 {
			addr["scratch"] = scratch
			if !bytes.Equal(read("scratch", scratchBytes), make([]byte, scratchBytes)) {
				t.Fatalf("batch %d: the scratch is not left zero", n)
			}
		}
		if first == nil {
			first = got
			o, err := tensor.FromBytes(want["o"].Type, got["o"])
			if err != nil {
				t.Fatal(err)
			}
			checkAttention(t, o, want["o"])
			continue
		}
		for name, b := range got {
			if !bytes.Equal(b, first[name]) {
				t.Errorf("batch %d, grid %v, run %d: %s gives other bits", n, grid, run, name)
			}
		}
	}
}
