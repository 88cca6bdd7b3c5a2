package nvvm

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// TestSymbolicNormGEMV: a norm GEMV over symbolic rows (a packed decode step's, Kernel.Rows its
// M), built once at the bound, is the NVVM producer's own (Lacks names nothing) with
// codegen/ptx's parameters (but its GEMV's scratch) and the direct template's work, assembles for sm_80 and sm_90
// without spills, and runs on the memchecked simulator at m the bound, 1 and a prime with x (or
// the tokens of gathered rows, which it also writes out) and the outputs holding the run's rows only (a read or write past them is a memcheck error):
// bit for bit the static kernel of m rows and within the reference's error bounds; at m = 0,
// on the bound's grid, it reads and writes nothing.
func TestSymbolicNormGEMV(t *testing.T) {
	p := requireProducer(t)
	for _, c := range []struct {
		norm, dt string
		m, n, k  int
		kContig  bool
	}{
		{"layernorm_bias", "f32", 3, 40, 257, false},
		{"rmsnorm", "f16", 4, 64, 256, true},
		{"layernorm", "bf16", 5, 33, 300, false},
		{"rmsnorm", "f32", 2, 48, 100, false},
		{"embed", "f32", 3, 64, 256, false}, // gathered rows, written out too (gemvnormout.go)
	} {
		t.Run(fmt.Sprintf("%s_%s_%dx%dx%d_kcontig=%v", c.norm, c.dt, c.m, c.n, c.k, c.kContig), func(t *testing.T) {
			graph := func(m int) *ir.Graph {
				if c.norm == "embed" {
					return embedGraph(t, m, true)
				}
				return normGEMVGraph(t, c.norm, c.dt, m, c.n, c.k, c.kContig)
			}
			kern := plan.Kernel{Name: "k0", Graph: graph(c.m), Symbolic: true, Rows: c.m}
			if tpl := plan.Template(kern); tpl != "norm gemv" {
				t.Fatalf("template %q, want norm gemv", tpl)
			}
			target := plan.Target{SM: 80}
			if note, lacks := Lacks(kern, target); lacks {
				t.Fatalf("Lacks = %q", note)
			}
			text, ls, err := p.Module([]plan.Kernel{kern}, target)
			if err != nil {
				t.Fatal(err)
			}
			ptxText, pls, err := ptx.Module([]plan.Kernel{kern}, target)
			if err != nil {
				t.Fatal(err)
			}
			l := ls[0]
			// codegen/ptx's GEMV splits K over a scratch, which the direct template has no use for.
			pp := slices.DeleteFunc(slices.Clone(pls[0].Params), func(a plan.Arg) bool { return a.Kind == plan.ArgScratch })
			if !reflect.DeepEqual(l.Params, pp) || l.Work == nil || l.Work.Scale != c.n {
				t.Fatalf("parameters %v, work %+v; codegen/ptx's %v: want its parameters but the scratch, the direct template's work of %d elements a row", l.Params, l.Work, pls[0].Params, c.n)
			}
			assemble(t, text, []plan.Kernel{kern})
			for i, m := range []int{c.m, 1, 2, 0} { // the bound, 1, a prime, none
				if m > c.m || i == 2 && m == c.m {
					continue
				}
				gm := graph(max(m, 1))
				in := inputsFor(gm, uint64(31*m+c.k))
				var want map[string]*tensor.Tensor
				if m == 0 {
					for _, v := range gm.Inputs() { // the run's no rows
						in[v.Name] = tensor.New(ir.T(v.Type.DType, append([]int{0}, v.Type.Shape[1:]...)...))
					}
				} else {
					static := plan.Kernel{Name: "k0", Graph: gm}
					stext, sls, err := p.Module([]plan.Kernel{static}, target)
					if err != nil {
						t.Fatal(err)
					}
					want, _ = run(t, stext, static, sls[0], in)
				}
				sr := loadRun(t, text, plan.Kernel{Name: "k0", Graph: gm}, l, in)
				for i, a := range l.Params {
					if a.Kind == plan.ArgSize {
						sr.args[i] = uint32(m * c.n)
					}
				}
				w := artifact.Work{Vector: l.Work.Vector, MaxBlocks: l.Work.MaxBlocks, Tile: l.Work.Tile, Axis: l.Work.Axis}
				if g := w.Grid(int64(m*c.n), l.Grid, l.Block); m > 0 {
					sr.cfg.Grid.X, sr.cfg.Grid.Y, sr.cfg.Grid.Z = g[0], g[1], g[2]
				}
				st, err := sr.m.Launch(sr.entry, sr.cfg, sr.args...)
				if err != nil {
					t.Fatalf("m %d: %v", m, err)
				}
				if m == c.m {
					t.Logf("warp instructions at m %d: nvvm %d, ptx %d", m, st.WarpInsts, ptxWarpInsts(t, ptxText, plan.Kernel{Name: "k0", Graph: gm}, pls[0], in, m))
				}
				if m == 0 {
					continue
				}
				_, got := sr.read(t)
				pin, iin := map[string]*tensor.Tensor{}, map[string]*tensor.Tensor{}
				for _, v := range gm.Params() {
					pin[v.Name] = in[v.Name]
				}
				for _, v := range gm.Inputs() {
					iin[v.Name] = in[v.Name]
				}
				wantRef, err := ref.Run(gm, iin, pin)
				if err != nil {
					t.Fatal(err)
				}
				bounds, err := tolerance.Bounds(gm, iin, pin, false)
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range gm.Outputs {
					if !bytes.Equal(got[o.Name].Bytes(), want[o.Name].Bytes()) {
						t.Errorf("m %d: %s differs from the static kernel's of %d rows", m, o.Name, m)
					}
					b := bounds[o.Name]
					compareWith(t, fmt.Sprintf("m %d: %s (reference)", m, o.Name), got[o.Name], wantRef[o.Name], false, precision(gm, o.Value), false, c.k, &b)
				}
			}
		})
	}
}

// ptxWarpInsts runs codegen/ptx's symbolic entry (launch l) at m rows and returns its warp
// instructions.
func ptxWarpInsts(t *testing.T, text string, k plan.Kernel, l plan.Launch, in map[string]*tensor.Tensor, m int) int64 {
	t.Helper()
	sr := loadRun(t, text, k, l, in)
	for i, a := range l.Params {
		if a.Kind == plan.ArgSize {
			sr.args[i] = uint32(m * l.Work.Scale)
		}
	}
	w := artifact.Work{Vector: l.Work.Vector, MaxBlocks: l.Work.MaxBlocks, Tile: l.Work.Tile, Axis: l.Work.Axis}
	g := w.Grid(int64(m*l.Work.Scale), l.Grid, l.Block)
	sr.cfg.Grid.X, sr.cfg.Grid.Y, sr.cfg.Grid.Z = g[0], g[1], g[2]
	st, err := sr.m.Launch(sr.entry, sr.cfg, sr.args...)
	if err != nil {
		t.Fatalf("codegen/ptx's entry at m %d: %v", m, err)
	}
	return st.WarpInsts
}
