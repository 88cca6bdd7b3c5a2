package nvvm

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// braced is a size written {{expr}} in a dimsGraph source.
var braced = regexp.MustCompile(`\{\{([^}]*)\}\}`)

// dimsGraph parses src, whose sizes over dims are written {{expr}}, at the dims' values env: a
// static graph, and with sizes the expressions (the Sizes the compiler hands a kernel).
func dimsGraph(t *testing.T, src string, env map[string]int64) (*ir.Graph, map[*ir.Value][]sym.Expr) {
	t.Helper()
	parse := func(m string) sym.Expr {
		e, err := sym.Parse(braced.FindStringSubmatch(m)[1])
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	text := braced.ReplaceAllStringFunc(src, func(m string) string {
		n, err := parse(m).Eval(env)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(n)
	})
	g, err := ir.Parse("k.gir", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	// The sizes of each value whose type has a braced size (values in the order of their lines):
	// its type's, a braced one the expression.
	sizes := map[*ir.Value][]sym.Expr{}
	next := 0
	for _, line := range strings.Split(src, "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "input ")
		i := strings.LastIndex(line, " : ")
		if !strings.HasPrefix(line, "%") || i < 0 {
			continue
		}
		v := g.Values[next]
		next++
		typ := line[i:]
		if !braced.MatchString(typ) {
			continue
		}
		var e []sym.Expr
		for d, f := range strings.Split(typ[strings.Index(typ, "[")+1:len(typ)-1], ",") {
			if braced.MatchString(f) {
				e = append(e, parse(f))
				continue
			}
			e = append(e, sym.Const(int64(v.Type.Shape[d])))
		}
		sizes[v] = e
	}
	return g, sizes
}

// runDims runs a symbolic kernel's entry (text, launch l; k at the bound) at the dims' values env,
// its size parameter n, on the memchecked, racechecked simulator with inputs in laid out at the
// run's sizes. It returns the outputs' first run-sized bytes (sized as the static graph gr's) and
// fails the test if anything past them was written.
func runDims(t *testing.T, text string, k plan.Kernel, l plan.Launch, gr *ir.Graph, in map[string]*tensor.Tensor, env map[string]int64, n int) (map[string][]byte, *sim.Stats) {
	t.Helper()
	sr := loadRun(t, text, k, l, in)
	for i, a := range l.Params {
		switch {
		case a.Kind == plan.ArgSize && a.Expr != "":
			sr.args[i] = uint32(env[a.Expr])
		case a.Kind == plan.ArgSize:
			sr.args[i] = uint32(n)
		}
	}
	sr.cfg.RaceGlobal = true
	switch w := l.Work; {
	case w == nil: // the bound's grid
	case w.Tile > 0:
		grid := [3]int{sr.cfg.Grid.X, sr.cfg.Grid.Y, sr.cfg.Grid.Z}
		grid[w.Axis] = int(min(max(1, (int64(n)+int64(w.Tile)-1)/int64(w.Tile)), int64(w.MaxBlocks)))
		sr.cfg.Grid = sim.Dim3{X: grid[0], Y: grid[1], Z: grid[2]}
	default:
		sr.cfg.Grid.X = w.Grid(int64(n))
	}
	const fill = 0x3d
	for _, o := range k.Graph.Outputs {
		if err := sr.dev.Write(sr.outAddr[o.Name], bytes.Repeat([]byte{fill}, o.Value.Type.Bytes())); err != nil {
			t.Fatal(err)
		}
	}
	st, err := sr.m.Launch(sr.entry, sr.cfg, sr.args...)
	if err != nil {
		t.Fatalf("%v: %v", env, err)
	}
	out := map[string][]byte{}
	for i, o := range gr.Outputs {
		b := make([]byte, k.Graph.Outputs[i].Value.Type.Bytes())
		if err := sr.dev.Read(sr.outAddr[o.Name], b); err != nil {
			t.Fatal(err)
		}
		m := o.Value.Type.Bytes()
		if !bytes.Equal(b[m:], bytes.Repeat([]byte{fill}, len(b)-m)) {
			t.Errorf("%v: %s written past the run's %d bytes", env, o.Name, m)
		}
		out[k.Graph.Outputs[i].Name] = b[:m]
	}
	return out, st
}

// TestSymbolicConcat: concats of views along a symbolic dim (a cache grown by concat) are the
// NVVM producer's own (symconcat.go; Lacks names nothing), checkConcatKernel's way: at 0, 1, a
// prime and the bound, every buffer laid out at the run's sizes, they equal the reference and
// codegen/ptx's entry bit for bit.
func TestSymbolicConcat(t *testing.T) {
	p := requireProducer(t)
	const bound = 23
	for _, tc := range []struct {
		name, src string
	}{
		{"f32 cache grown by a transposed step, three operands", "graph k {\n  input %a : f32[2,{{past}},8]\n  input %b : f32[2,8,1]\n" +
			"  %0 = transpose(%b) {perm=[0,2,1]} : f32[2,1,8]\n  input %c : f32[2,{{past}},8]\n" +
			"  %1 = concat(%a, %0, %c) {axis=1} : f32[2,{{2*past+1}},8]\n  output y = %1\n}\n"},
		{"f16 heads' cache along a symbolic dim not leading", "graph k {\n  input %a : f16[2,4,{{past}},8]\n  input %b : f16[2,1,4,8]\n" +
			"  %0 = transpose(%b) {perm=[0,2,1,3]} : f16[2,4,1,8]\n  %1 = concat(%a, %0) {axis=2} : f16[2,4,{{past+1}},8]\n  output y = %1\n}\n"},
		{"i64 two outputs, the axis static beside the symbolic one", "graph k {\n  input %a : i64[{{past}},3]\n  input %b : i64[{{past}},2]\n" +
			"  %0 = concat(%a, %b) {axis=1} : i64[{{past}},5]\n  %1 = slice(%b) {start=[0,1], limit=[{{past}},2]} : i64[{{past}},1]\n" +
			"  %2 = concat(%1, %a) {axis=1} : i64[{{past}},4]\n  output y = %0\n  output z = %2\n}\n"},
		{"bool broadcast operand", "graph k {\n  input %a : bool[{{past}},4]\n  input %b : bool[4]\n" +
			"  %0 = broadcast_in_dim(%b) {shape=[2,4], dims=[1]} : bool[2,4]\n  %1 = concat(%a, %0) {axis=0} : bool[{{past+2}},4]\n  output y = %1\n}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkConcatKernel(t, p, "k0_concat", tc.src, bound, false) })
	}
}

// checkConcatKernel builds src's concat kernel (sizes over past, at bound) with both producers:
// codegen/ptx's parameters (past's value, then the first output's element count), launch and
// work; it assembles for sm_80 and sm_90 without spills, and runs on the memchecked,
// racechecked simulator at past 0, 1, 7 and bound, writing nothing past the run's elements,
// equal to codegen/ptx's entry bit for bit and to the reference: a copy (not fused) bit for bit,
// a fused kernel within tolerance, and with tanh or exp (libdevice's here, PTX's approximations
// there) not compared with codegen/ptx's bits.
func checkConcatKernel(t *testing.T, p *Producer, name, src string, bound int64, fused bool) {
	t.Helper()
	g, sizes := dimsGraph(t, src, map[string]int64{"past": bound})
	k := plan.Kernel{Name: name, Graph: g, Symbolic: true, Sizes: sizes}
	if plan.ConcatCopy(g) == fused || plan.SymbolicConcat(g) != "" {
		t.Fatalf("a concat copy %v, %q; want fused %v", plan.ConcatCopy(g), plan.SymbolicConcat(g), fused)
	}
	target := plan.Target{SM: 80}
	text, l, ptxText, pl := bothSymbolic(t, p, k, target)
	var exprs []string
	for _, a := range l.Params {
		if a.Kind == plan.ArgSize {
			exprs = append(exprs, a.Expr)
		}
	}
	if fmt.Sprint(exprs) != "[past ]" {
		t.Errorf("size parameters %q: want past, then the element count", exprs)
	}
	assemble(t, text, []plan.Kernel{k})
	approx := slices.ContainsFunc(g.Values, func(v *ir.Value) bool { return v.Op == "tanh" || v.Op == "exp" })
	for _, r := range []int64{0, 1, 7, bound} {
		env := map[string]int64{"past": r}
		gr, _ := dimsGraph(t, src, env)
		in := inputsFor(gr, uint64(r)+3)
		want, err := ref.Run(gr, in, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := gr.Outputs[0].Value.Type.Shape.NumElements()
		got, st := runDims(t, text, k, l, gr, in, env, n)
		emitted, pst := runDims(t, ptxText, k, pl, gr, in, env, n)
		if r == bound {
			// docs/perf.md's table.
			t.Logf("warp instructions at past %d: nvvm %d, ptx %d", r, st.WarpInsts, pst.WarpInsts)
		}
		for _, o := range gr.Outputs {
			if !approx && !bytes.Equal(got[o.Name], emitted[o.Name]) {
				t.Errorf("%s at past %d: differs from codegen/ptx's", o.Name, r)
			}
			if !fused {
				if !bytes.Equal(got[o.Name], want[o.Name].Bytes()) {
					t.Errorf("%s at past %d: differs from the reference", o.Name, r)
				}
				continue
			}
			x, err := tensor.FromBytes(o.Value.Type, got[o.Name])
			if err != nil {
				t.Fatal(err)
			}
			d := o.Value.Type.DType
			compare(t, fmt.Sprintf("%s at past %d (reference)", o.Name, r), x, want[o.Name], !d.IsFloat(), d, false, 1)
		}
	}
}
