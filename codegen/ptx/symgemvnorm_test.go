package ptx

import (
	"bytes"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/gemv"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// symNormGEMV is normGEMV, or with embed embedNormGEMV (its rows gathered from the tables and
// written as an output), at m rows, with a position table of posRows rows whatever m.
func symNormGEMV(norm, dt string, m, n, k, posRows int, kContig, embed bool) string {
	if !embed {
		return normGEMV(norm, dt, m, n, k, kContig)
	}
	const vocab = 37
	src := embedNormGEMV(norm, dt, m, n, k, vocab, kContig, !kContig) // the rows output first or last
	return strings.Replace(src, fmt.Sprintf("%%wpe : %s[%d,%d]", dt, 2*m+1, k), fmt.Sprintf("%%wpe : %s[%d,%d]", dt, posRows, k), 1)
}

// A GEMV with a norm prologue (LayerNorm with and without beta, RMSNorm; the rows read or
// gathered from embedding tables and written beside the product) built once over symbolic rows
// (Kernel.Rows, its M: a decode step's batch) runs at every row count from 1 to the bound: on
// the simulator with memcheck, racecheck and synccheck, every buffer allocated at the bound and
// only the run's rows of the inputs written (reading a row past the run is an uninitialized
// read), it matches the reference, leaves the outputs' rows past the run untouched, and gives
// the bits of the static kernel of the run's rows (the same plan and arithmetic). The kernel
// assembles for sm_80 and sm_90 without spills. A token past the table at the run's last row
// is recorded in the error word. Bounds reach gemv.MaxPrologueRows (8) for a LayerNorm
// without a gather, gemv.MaxUnstagedRows otherwise.
func TestSymbolicNormGEMV(t *testing.T) {
	type shape struct{ bound, n, k int }
	shapes := []shape{{gemv.MaxPrologueRows, 64, 130}, {3, 96, 250}, {gemv.MaxPrologueRows, 40, 512}}
	if testing.Short() {
		shapes = shapes[:1]
	}
	for _, norm := range []string{"layernorm_bias", "layernorm", "rmsnorm"} {
		for _, dt := range []string{"f32", "f16", "bf16"} {
			for i, s := range shapes {
				kContig, embed := i%2 == 0, (i+len(norm))%2 == 1
				if norm == "layernorm" {
					embed = false // embedNormGEMV's LayerNorm sums two tables; layernorm_bias covers it
				}
				bound := s.bound
				if embed || norm == "rmsnorm" {
					bound = min(bound, gemv.MaxUnstagedRows) // more gathered rows or RMSNorm rows take no prologue
				}
				t.Run(fmt.Sprintf("%s_%s_%dx%dx%d_kcontig=%v_embed=%v", norm, dt, bound, s.n, s.k, kContig, embed), func(t *testing.T) {
					build := func(m int) *ir.Graph {
						return parse(t, symNormGEMV(norm, dt, m, s.n, s.k, 2*bound+1, kContig, embed))
					}
					g := build(bound)
					k := Kernel{Name: "k0", Graph: g, Symbolic: true, Rows: bound}
					text, l, err := Module([]Kernel{k}, harnessTarget)
					if err != nil {
						t.Fatal(err)
					}
					if !strings.Contains(text, "row prologue") || embed != strings.Contains(text, "row outputs") {
						t.Fatalf("row prologue %v, row outputs %v; want true, %v", strings.Contains(text, "row prologue"), strings.Contains(text, "row outputs"), embed)
					}
					if w := l[0].Work; w == nil || w.Scale != 1 || w.Tile != bound || w.Axis != 2 {
						t.Fatalf("work %+v, want scale 1, tile %d, axis 2", w, bound)
					}
					assemble(t, text)
					in := inputsFor(g, uint64(bound*s.n+s.k), 1)
					if embed {
						for r := range bound {
							in["tok"].I[r] = int64((5*r + 36) % 37)
							if norm != "rmsnorm" {
								in["pos"].I[r] = int64(2*r + 1)
							}
						}
					}
					for n := 1; n <= bound; n++ {
						runSymbolicNormGEMV(t, text, l[0], g, build(n), in, n, embed)
					}
				})
			}
		}
	}
}

// runSymbolicNormGEMV runs the symbolic kernel (text, l over bound graph g) at n rows, whose
// static graph is gs, with the first n rows of the bound's inputs in, and checks it against the
// reference and the static kernel of gs; with embed, also a token past the table at row n−1.
func runSymbolicNormGEMV(t *testing.T, text string, l Launch, g, gs *ir.Graph, in map[string]*tensor.Tensor, n int, embed bool) {
	t.Helper()
	sin := map[string]*tensor.Tensor{}
	for _, v := range gs.Inputs() {
		x, err := tensor.FromBytes(v.Type, in[v.Name].Bytes()[:v.Type.Bytes()])
		if err != nil {
			t.Fatal(err)
		}
		sin[v.Name] = x
	}
	params := map[string]*tensor.Tensor{}
	for _, v := range gs.Params() {
		params[v.Name] = in[v.Name]
	}
	want, err := ref.Run(gs, sin, params)
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(sin, params)
	run := launchSymbolic(t, text, l, g, sin, n)
	stext, sl, err := Module([]Kernel{{Name: "k0", Graph: gs}}, harnessTarget)
	if err != nil {
		t.Fatal(err)
	}
	srun, err := launchSim(t, stext, "k0", sl[0], gs, sin)
	if err != nil {
		t.Fatalf("static, %d rows: %v", n, err)
	}
	k, scale := contraction(gs, sin)
	for i, o := range gs.Outputs {
		buf := make([]byte, g.Outputs[i].Value.Type.Bytes())
		if err := run.dev.Read(run.outAddr[o.Name], buf); err != nil {
			t.Fatal(err)
		}
		size := o.Value.Type.Bytes()
		if past := buf[size:]; !bytes.Equal(past, bytes.Repeat([]byte{symFill}, len(past))) {
			t.Errorf("%d rows: %s written past the run's rows", n, o.Name)
		}
		got, err := tensor.FromBytes(o.Value.Type, buf[:size])
		if err != nil {
			t.Fatal(err)
		}
		compare(t, fmt.Sprintf("%d rows: %s", n, o.Name), got, want[o.Name], false, precision(o.Value), k, scale)
		static := make([]byte, size)
		if err := srun.dev.Read(srun.outAddr[o.Name], static); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(static, buf[:size]) {
			t.Errorf("%d rows: %s differs from the static kernel's bits", n, o.Name)
		}
	}
	for i, a := range l.Params {
		if a.Kind != ArgScratch {
			continue
		}
		buf := make([]byte, a.Bytes)
		if err := run.dev.Read(run.args[i].(uint64), buf); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf, make([]byte, a.Bytes)) {
			t.Errorf("%d rows: the scratch is not left zero", n)
		}
	}
	if !embed {
		return
	}
	bad := maps.Clone(sin)
	bad["tok"] = sin["tok"].Clone()
	bad["tok"].I[n-1] = 37
	run = launchSymbolic(t, text, l, g, bad, n)
	if site, elem, value := run.errorWord(t); site != 1 || elem != uint64(n-1) || value != 37 {
		t.Errorf("%d rows, token 37 at row %d: error word site %d, element %d, value %d", n, n-1, site, elem, value)
	}
}

// symFill is the byte a symbolic run's outputs hold before it: rows past the run keep it.
const symFill = 0x7d

// launchSymbolic launches symbolic kernel k0 (text, l over bound graph g) at n rows on a fresh
// simulator with every check on: each buffer allocated at the bound, inputs holding in's (the
// run's rows only), outputs filled with symFill, scratch and error word zeroed.
func launchSymbolic(t *testing.T, text string, l Launch, g *ir.Graph, in map[string]*tensor.Tensor, n int) *simRun {
	t.Helper()
	dev := sim.NewDevice()
	m, err := dev.Load(text)
	if err != nil {
		t.Fatal(err)
	}
	run := &simRun{dev: dev, m: m, outAddr: map[string]uint64{}}
	for _, a := range l.Params {
		var size int
		var data []byte
		switch a.Kind {
		case ArgSize:
			run.args = append(run.args, uint32(n*l.Work.Scale))
			continue
		case ArgInput:
			size, data = g.Inputs()[a.Index].Type.Bytes(), in[a.Name].Bytes()
		case ArgParam:
			size, data = g.Params()[a.Index].Type.Bytes(), in[a.Name].Bytes()
		case ArgOutput:
			size = g.Outputs[a.Index].Value.Type.Bytes()
			data = bytes.Repeat([]byte{symFill}, size)
		case ArgScratch:
			size, data = a.Bytes, make([]byte, a.Bytes)
		case ArgError:
			size, data = ErrorWordBytes, make([]byte, ErrorWordBytes)
		default:
			t.Fatalf("unexpected parameter %+v", a)
		}
		addr, err := dev.Alloc(size)
		if err != nil {
			t.Fatal(err)
		}
		if err := dev.Write(addr, data); err != nil {
			t.Fatal(err)
		}
		switch a.Kind {
		case ArgOutput:
			run.outAddr[a.Name] = addr
		case ArgError:
			run.errAddr = addr
		}
		run.args = append(run.args, addr)
	}
	grid := l.Grid
	grid[l.Work.Axis] = min(ceilDiv(n*l.Work.Scale, l.Work.Tile), l.Work.MaxBlocks)
	run.cfg = sim.Config{Grid: sim.Dim3{X: grid[0], Y: grid[1], Z: grid[2]}, Block: sim.Dim3{X: l.Block[0], Y: l.Block[1], Z: l.Block[2]}, SharedBytes: l.SharedBytes}
	if run.stats, err = m.Launch("k0", run.cfg, run.args...); err != nil {
		t.Fatalf("%d rows: %v", n, err)
	}
	return run
}
