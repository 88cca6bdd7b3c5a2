package ptx

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// A conv2d whose epilogue ends in a pooling, built once over a symbolic batch (Kernel.Rows, the
// images): at batch 1, the primes below the bound and the bound, on the memchecked simulator
// with every buffer allocated at the bound and only the run's images written, it matches the
// reference, leaves the bound's images past the run untouched, and gives the static build's bits
// at that batch when both take the same template (the k order does not depend on M).
func TestSymbolicPooledConv(t *testing.T) {
	type convCase struct {
		dt                   ir.DType
		bound, c, h, w, o, k int
		stride, pad          int
		pool                 string
		win                  [2]int
		pre                  bool // the pre-pool value is an output too
	}
	for _, c := range []convCase{
		{ir.F32, 7, 3, 8, 8, 5, 3, 1, 1, "max_pool2d", [2]int{2, 2}, false},
		{ir.F32, 5, 4, 16, 14, 6, 3, 2, 1, "avg_pool2d", [2]int{2, 1}, true}, // stride 2: 8×7 pixels
		{ir.F32, 3, 2, 10, 10, 3, 5, 1, 0, "max_pool2d", [2]int{1, 2}, false},
		{ir.F16, 7, 8, 8, 8, 16, 3, 1, 1, "max_pool2d", [2]int{2, 2}, true},
		{ir.F16, 5, 8, 13, 13, 12, 3, 2, 2, "avg_pool2d", [2]int{2, 2}, false},  // stride 2, pad 2: 8×8 pixels
		{ir.F16, 4, 16, 8, 6, 130, 1, 1, 0, "avg_pool2d", [2]int{4, 1}, false},  // channels past one tile
		{ir.F32, 8, 16, 14, 14, 32, 3, 1, 1, "max_pool2d", [2]int{2, 2}, false}, // cnn's second conv
		{ir.F16, 8, 16, 14, 14, 32, 3, 1, 1, "max_pool2d", [2]int{2, 2}, false}, // the same on tensor cores
	} {
		oh, ow := (c.h+2*c.pad-c.k)/c.stride+1, (c.w+2*c.pad-c.k)/c.stride+1
		if oh%c.win[0] != 0 || ow%c.win[1] != 0 {
			t.Fatalf("case %+v: windows do not tile %dx%d", c, oh, ow)
		}
		build := func(n int) *ir.Graph {
			g := ir.NewGraph("sympool")
			x := g.Input("x", ir.T(c.dt, n, c.c, c.h, c.w), nil)
			w := g.Param("w", ir.T(c.dt, c.o, c.c, c.k, c.k), nil)
			ty := ir.T(c.dt, n, c.o, oh, ow)
			y := g.Add("conv2d", ty, ir.Attrs{"stride": []int{c.stride, c.stride}, "padding": []int{c.pad, c.pad}, "dilation": []int{1, 1}, "groups": 1}, x, w)
			bias := g.Param("b", ir.T(c.dt, c.o), nil)
			bb := g.Add("broadcast_in_dim", ty, ir.Attrs{"shape": []int(ty.Shape), "dims": []int{1}}, bias)
			r := g.Add("relu", ty, nil, g.Add("add", ty, nil, y, bb))
			g.SetOutput("p", g.Add(c.pool, ir.T(c.dt, n, c.o, oh/c.win[0], ow/c.win[1]), ir.Attrs{"kernel": c.win[:]}, r))
			if c.pre {
				g.SetOutput("pre", r)
			}
			return g
		}
		name := fmt.Sprintf("%s_%s%dx%d_n%d_c%d_%dx%d_o%d_k%d_s%d_p%d_pre%v", c.dt, c.pool, c.win[0], c.win[1], c.bound, c.c, c.h, c.w, c.o, c.k, c.stride, c.pad, c.pre)
		t.Run(name, func(t *testing.T) {
			g := build(c.bound)
			k := Kernel{Name: "k0", Graph: g, Symbolic: true, Rows: c.bound}
			text, l, err := Module([]Kernel{k}, harnessTarget)
			if err != nil {
				t.Fatal(err)
			}
			if w := l[0].Work; w == nil || w.Scale != oh*ow || w.Tile != mmBM || w.Axis != 1 || w.MaxBlocks != l[0].Grid[1] {
				t.Fatalf("work %+v, want scale %d, tile %d, axis 1, at most the bound's grid %v", w, oh*ow, mmBM, l[0].Grid)
			}
			assemble(t, text)
			in := inputsFor(g, 11, 1)
			ns := []int{1, 2, 3, 5, 7, c.bound / 2, c.bound} // 1, primes, half the bound, the bound
			slices.Sort(ns)
			for _, n := range slices.Compact(ns) {
				if n >= 1 && n <= c.bound {
					runSymbolicPooled(t, text, l[0], g, build(n), in, n)
				}
			}
		})
	}
}

// runSymbolicPooled runs the symbolic kernel (text, l over bound graph g) at batch n, whose
// static graph is gs, with the first n images of the bound's inputs in.
func runSymbolicPooled(t *testing.T, text string, l Launch, g, gs *ir.Graph, in map[string]*tensor.Tensor, n int) {
	t.Helper()
	sin, params := map[string]*tensor.Tensor{}, map[string]*tensor.Tensor{}
	for _, v := range gs.Inputs() {
		x, err := tensor.FromBytes(v.Type, in[v.Name].Bytes()[:v.Type.Bytes()])
		if err != nil {
			t.Fatal(err)
		}
		sin[v.Name] = x
	}
	for _, v := range gs.Params() {
		params[v.Name] = in[v.Name]
	}
	want, err := ref.Run(gs, sin, params)
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(sin, params) // the kernels take both
	dev := sim.NewDevice()
	m, err := dev.Load(text)
	if err != nil {
		t.Fatal(err)
	}
	const fill = 0x7d
	var args []any
	outs := map[string]uint64{}
	for _, a := range l.Params {
		var bound ir.Type
		var data []byte
		switch a.Kind {
		case ArgSize:
			args = append(args, uint32(n*l.Work.Scale))
			continue
		case ArgInput:
			bound, data = g.Inputs()[a.Index].Type, sin[a.Name].Bytes() // the run's images only
		case ArgParam:
			bound, data = g.Params()[a.Index].Type, sin[a.Name].Bytes()
		case ArgOutput:
			bound, data = g.Outputs[a.Index].Value.Type, bytes.Repeat([]byte{fill}, g.Outputs[a.Index].Value.Type.Bytes())
		default:
			t.Fatalf("unexpected parameter %+v", a)
		}
		addr, err := dev.Alloc(bound.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if err := dev.Write(addr, data); err != nil {
			t.Fatal(err)
		}
		if a.Kind == ArgOutput {
			outs[a.Name] = addr
		}
		args = append(args, addr)
	}
	grid := l.Grid
	grid[l.Work.Axis] = min(ceilDiv(n*l.Work.Scale, l.Work.Tile), l.Work.MaxBlocks)
	cfg := sim.Config{Grid: sim.Dim3{X: grid[0], Y: grid[1], Z: grid[2]}, Block: sim.Dim3{X: l.Block[0], Y: l.Block[1], Z: l.Block[2]}, SharedBytes: l.SharedBytes}
	st, err := m.Launch("k0", cfg, args...)
	if err != nil {
		t.Fatalf("batch %d: %v", n, err)
	}
	// The static build at batch n, run with the same images.
	sk := Kernel{Name: "k0", Graph: gs}
	stext, sl, err := Module([]Kernel{sk}, harnessTarget)
	if err != nil {
		t.Fatal(err)
	}
	srun, err := launchSim(t, stext, "k0", sl[0], gs, sin)
	if err != nil {
		t.Fatalf("static batch %d: %v", n, err)
	}
	// The cost at the run's batch against the static build's (docs/perf.md).
	t.Logf("batch %d of %d: %d warp instructions, the static build at %d %d (%.3f×)", n, g.Inputs()[0].Type.Shape[0],
		st.WarpInsts, n, srun.stats.WarpInsts, float64(st.WarpInsts)/float64(srun.stats.WarpInsts))
	same := templateOf(stext) == templateOf(text)
	k, scale := contraction(gs, sin)
	for i, o := range gs.Outputs {
		bound := g.Outputs[i].Value.Type.Bytes()
		buf := make([]byte, bound)
		if err := dev.Read(outs[o.Name], buf); err != nil {
			t.Fatal(err)
		}
		size := o.Value.Type.Bytes()
		if past := buf[size:]; !bytes.Equal(past, bytes.Repeat([]byte{fill}, len(past))) {
			t.Errorf("batch %d: %s written past the run's images", n, o.Name)
		}
		got, err := tensor.FromBytes(o.Value.Type, buf[:size])
		if err != nil {
			t.Fatal(err)
		}
		compare(t, fmt.Sprintf("batch %d: %s", n, o.Name), got, want[o.Name], false, o.Value.Type.DType, k, scale)
		static := make([]byte, size)
		if err := srun.dev.Read(srun.outAddr[o.Name], static); err != nil {
			t.Fatal(err)
		}
		if same && !bytes.Equal(static, buf[:size]) {
			t.Errorf("batch %d: %s differs from the static build's bits (template %s)", n, o.Name, templateOf(text))
		}
	}
	if !same {
		t.Logf("batch %d: the static build takes the %s template, the symbolic one %s", n, templateOf(stext), templateOf(text))
	}
}

// templateOf names a conv2d kernel's GEMM template by its instructions.
func templateOf(text string) string {
	if bytes.Contains([]byte(text), []byte("mma.sync")) {
		return "mma.sync"
	}
	return "FFMA"
}
