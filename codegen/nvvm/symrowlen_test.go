package nvvm

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// rowLenCases reduce a symbolic last dim seq of [b, seq] (or broadcast per-row values back along
// it): src has %[1]d for b, %[2]d for seq; sized names the values whose sizes the compiler hands
// over ([b, seq]: the reductions' operand, or the broadcasts of a loop); loop says the kernel's
// rows are its elements (compiler/symrowlen.go's rowBroadcast), not b.
var rowLenCases = []struct {
	name, src string
	sized     []string
	loop      bool
}{
	{"row sums of x times a per-row w (f32)", "graph k {\n  input %%x : f32[%[1]d,%[2]d]\n  input %%w : f32[%[1]d]\n" +
		"  %%0 = broadcast_in_dim(%%w) {dims=[0], shape=[%[1]d,%[2]d]} : f32[%[1]d,%[2]d]\n  %%p = mul(%%x, %%0) : f32[%[1]d,%[2]d]\n" +
		"  %%2 = reduce_sum(%%p) {axes=[1]} : f32[%[1]d]\n  output y = %%2\n}\n", []string{"p"}, false},
	{"the softmax's gradient y·(dy − Σ dy·y), both outputs (f32)", "graph k {\n  input %%y : f32[%[1]d,%[2]d]\n  input %%dy : f32[%[1]d,%[2]d]\n" +
		"  %%p = mul(%%dy, %%y) : f32[%[1]d,%[2]d]\n  %%1 = reduce_sum(%%p) {axes=[1]} : f32[%[1]d]\n  %%2 = broadcast_in_dim(%%1) {dims=[0], shape=[%[1]d,%[2]d]} : f32[%[1]d,%[2]d]\n" +
		"  %%3 = sub(%%dy, %%2) : f32[%[1]d,%[2]d]\n  %%4 = mul(%%y, %%3) : f32[%[1]d,%[2]d]\n  output dx = %%4\n  output s = %%1\n}\n", []string{"p"}, false},
	{"a maximum over seq, kept (f16)", "graph k {\n  input %%x : f16[%[1]d,%[2]d]\n  %%0 = reduce_max(%%x) {axes=[1], keepdims=true} : f16[%[1]d,1]\n  output m = %%0\n}\n",
		[]string{"x"}, false},
	{"a loop dividing by per-row sums broadcast along seq (f32)", "graph k {\n  input %%e : f32[%[1]d,%[2]d]\n  input %%s : f32[%[1]d,1]\n" +
		"  %%bc = broadcast_in_dim(%%s) {dims=[0,1], shape=[%[1]d,%[2]d]} : f32[%[1]d,%[2]d]\n  %%1 = div(%%e, %%bc) : f32[%[1]d,%[2]d]\n  output y = %%1\n}\n",
		[]string{"bc"}, true},
}

// TestSymbolicRowLength: row reductions of a symbolic last dim and loops broadcasting per-row
// values along it (compiler/symrowlen.go) are the NVVM producer's own (Lacks names nothing;
// symrowlen.go): codegen/ptx's parameters (b's and seq's values, then the row or element count),
// launch and work; they assemble for sm_80 and sm_90 without spills, and on the memchecked,
// racechecked simulator at (b, seq) of 1, a prime and the bound, every buffer laid out
// contiguously at the run's sizes and no longer, they equal the reference within tolerance and
// codegen/ptx's entry bit for bit, writing nothing past the run's elements. The warp instructions
// of both are docs/perf.md's (-v).
func TestSymbolicRowLength(t *testing.T) {
	p := requireProducer(t)
	const bb, bseq = 3, 37
	target := plan.Target{SM: 80}
	for _, tc := range rowLenCases {
		t.Run(tc.name, func(t *testing.T) {
			parse := func(b, seq int) *ir.Graph {
				g, err := ir.Parse("k.gir", fmt.Appendf(nil, tc.src, b, seq))
				if err != nil {
					t.Fatal(err)
				}
				return g
			}
			g := parse(bb, bseq)
			sizes := map[*ir.Value][]sym.Expr{}
			for _, v := range g.Values {
				for _, name := range tc.sized {
					if v.Name == name {
						sizes[v] = []sym.Expr{sym.Sym("b"), sym.Sym("seq")}
					}
				}
			}
			if len(sizes) != len(tc.sized) {
				t.Fatalf("sized values %v: found %d", tc.sized, len(sizes))
			}
			k := plan.Kernel{Name: "k0", Graph: g, Symbolic: true, Rows: bb, Sizes: sizes}
			if tc.loop {
				k.Rows = bb * bseq
			}
			text, l, ptxText, pl := bothSymbolic(t, p, k, target)
			var params []string
			for _, a := range l.Params {
				if a.Kind == plan.ArgSize {
					params = append(params, a.Expr)
				}
			}
			if strings.Join(params, ",") != "b,seq," {
				t.Errorf("size parameters %q: want b, seq, then the count", params)
			}
			assemble(t, text, []plan.Kernel{k})
			for _, run := range [][2]int{{1, 1}, {2, 13}, {bb, bseq}} {
				b, seq := run[0], run[1]
				rows := b
				if tc.loop {
					rows = b * seq
				}
				size := func(a plan.Arg, w *plan.SymWork) int {
					switch a.Expr {
					case "b":
						return b
					case "seq":
						return seq
					}
					return rows * w.Scale
				}
				checkRun(t, fmt.Sprintf("b %d, seq %d", b, seq), k, text, l, ptxText, pl, parse(b, seq), size, seq)
			}
		})
	}
}

// checkRun runs NVVM's entry of kernel k (text, l) and codegen/ptx's (ptxText, pl) on inputs of
// gr, k's graph at the run's sizes (runRowLen; size(a, work) each size argument), and compares
// each output with the reference interpreter's within tolerance (terms summed) and with
// codegen/ptx's bit for bit. It logs both launches' warp instructions (docs/perf.md).
func checkRun(t *testing.T, at string, k plan.Kernel, text string, l plan.Launch, ptxText string, pl plan.Launch, gr *ir.Graph, size func(plan.Arg, *plan.SymWork) int, terms int) {
	t.Helper()
	in := inputsFor(gr, uint64(len(at)*7+terms))
	want, err := ref.Run(gr, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, st := runRowLen(t, text, k, l, in, func(a plan.Arg) int { return size(a, l.Work) }, gr)
	emitted, pst := runRowLen(t, ptxText, k, pl, in, func(a plan.Arg) int { return size(a, pl.Work) }, gr)
	t.Logf("%s: warp instructions nvvm %d, ptx %d", at, st.WarpInsts, pst.WarpInsts)
	for i, o := range gr.Outputs {
		what := fmt.Sprintf("%s at %s", o.Name, at)
		w, err := tensor.FromBytes(ir.T(o.Value.Type.DType, want[o.Name].Len()), want[o.Name].Bytes())
		if err != nil {
			t.Fatal(err)
		}
		bo := k.Graph.Outputs[i].Value
		compare(t, what+" (reference)", got[o.Name], w, false, precision(k.Graph, bo), false, terms)
		compare(t, what+" (codegen/ptx)", got[o.Name], emitted[o.Name], true, precision(k.Graph, bo), false, 1)
	}
}

// runRowLen runs kernel k (text, launch l) with its size arguments size(a) in a fresh simulator
// device, checks on, its inputs in laid out at the run's sizes (graph gr). It returns each output's
// elements at the run, flat, failing the test if the kernel wrote past them, and the launch's
// counters.
func runRowLen(t *testing.T, text string, k plan.Kernel, l plan.Launch, in map[string]*tensor.Tensor, size func(plan.Arg) int, gr *ir.Graph) (map[string]*tensor.Tensor, *sim.Stats) {
	t.Helper()
	out, st := launchSized(t, text, k, l, in, size)
	for i, o := range gr.Outputs {
		x := out[o.Name]
		n := o.Value.Type.Shape.NumElements()
		if rest := x.Bytes()[n*x.Type.DType.Size():]; !bytes.Equal(rest, bytes.Repeat([]byte{outFill}, len(rest))) {
			t.Errorf("output %d (%s) written past its %d elements at the run", i, o.Name, n)
		}
		out[o.Name] = firstRows(t, x, x.Len(), n)
	}
	return out, st
}

// outFill is the byte launchSized fills the outputs with before the launch.
const outFill = 0x3d

// launchSized runs kernel k (text, launch l) with its size arguments size(a) in a fresh
// simulator device, memcheck and global racecheck on, its outputs (at the bound's sizes) filled
// with outFill first. It returns the outputs whole and the launch's counters.
func launchSized(t *testing.T, text string, k plan.Kernel, l plan.Launch, in map[string]*tensor.Tensor, size func(plan.Arg) int) (map[string]*tensor.Tensor, *sim.Stats) {
	t.Helper()
	sr := loadRun(t, text, k, l, in)
	for i, a := range l.Params {
		if a.Kind == plan.ArgSize {
			sr.args[i] = uint32(size(a))
		}
	}
	sr.cfg.RaceGlobal = true
	for _, o := range k.Graph.Outputs {
		if err := sr.dev.Write(sr.outAddr[o.Name], bytes.Repeat([]byte{outFill}, o.Value.Type.Bytes())); err != nil {
			t.Fatal(err)
		}
	}
	st, err := sr.m.Launch(sr.entry, sr.cfg, sr.args...)
	if err != nil {
		t.Fatal(err)
	}
	_, out := sr.read(t)
	return out, st
}
