package nvvm

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// foldCases are symbolic kernels folding their rows into static results: column reductions over
// the rows (bias gradients, a loss's batch sum, sums and maxima over every dim, a maximum spread
// back over the rows) and GEMMs whose K is the rows (weight gradients, FFMA and tensor cores,
// rows of one dim or several). src has %[1]d for the rows at the run's sizes (the graph at the
// bound has rows); rowOutputs are the outputs carrying the rows, the others are static.
var foldCases = []struct {
	name, src  string
	rows, per  int    // Kernel.Rows (the leading dim at the bound); the folded units per row (the work's scale)
	rowInputs  string // comma-separated
	rowOutputs string
	kind       string // ContractionPlan's kind, "" for a reduction
}{
	{"bias gradient", "graph k {\n  input %%dy : f32[%[1]d,37]\n  %%0 = reduce_sum(%%dy) {axes=[0]} : f32[37]\n  output db = %%0\n}\n",
		40, 1, "dy", "", ""},
	{"batch sum of a loss (one column)", "graph k {\n  input %%l : f32[%[1]d]\n  %%0 = reduce_sum(%%l) {axes=[0]} : f32[]\n  output loss = %%0\n}\n",
		40, 1, "l", "", ""},
	{"sum over every dim, kept", "graph k {\n  input %%x : f32[%[1]d,3]\n  %%0 = reduce_sum(%%x) {axes=[0,1], keepdims=true} : f32[1,1]\n  output s = %%0\n}\n",
		16, 3, "x", "", ""},
	{"sum and maximum of squares, f16", "graph k {\n  input %%x : f16[%[1]d,5]\n  %%0 = reduce_sum(%%x) {axes=[0]} : f16[5]\n  %%1 = mul(%%x, %%x) : f16[%[1]d,5]\n  %%2 = reduce_max(%%1) {axes=[0]} : f16[5]\n  output s = %%0\n  output m = %%2\n}\n",
		36, 1, "x", "", ""},
	{"maximum spread back over the rows", "graph k {\n  input %%x : f32[%[1]d,2]\n  %%0 = reduce_max(%%x) {axes=[0]} : f32[2]\n  %%1 = broadcast_in_dim(%%0) {shape=[%[1]d,2], dims=[1]} : f32[%[1]d,2]\n  %%2 = sub(%%x, %%1) : f32[%[1]d,2]\n  output y = %%2\n  output m = %%0\n}\n",
		16, 1, "x", "y", ""},
	{"i32 column sum", "graph k {\n  input %%x : i32[%[1]d,40]\n  %%0 = reduce_sum(%%x) {axes=[0]} : i32[40]\n  output s = %%0\n}\n",
		24, 1, "x", "", ""},
	{"weight gradient (FFMA) with a scale", "graph k {\n  input %%x : f32[%[1]d,12]\n  input %%dy : f32[%[1]d,20]\n  %%0 = dot_general(%%x, %%dy) {lhs_contract=[0], rhs_contract=[0]} : f32[12,20]\n  %%c = constant() {dtype=f32, shape=[], value=[0.5]} : f32[]\n  %%1 = broadcast_in_dim(%%c) {shape=[12,20], dims=[]} : f32[12,20]\n  %%2 = mul(%%0, %%1) : f32[12,20]\n  output dw = %%2\n}\n",
		150, 1, "x,dy", "", "ffma"},
	{"weight gradient of few rows (FFMA)", "graph k {\n  input %%x : f32[%[1]d,3]\n  input %%dy : f32[%[1]d,9]\n  %%0 = dot_general(%%x, %%dy) {lhs_contract=[0], rhs_contract=[0]} : f32[3,9]\n  output dw = %%0\n}\n",
		70, 1, "x,dy", "", "ffma"},
	{"weight gradient over two dims (FFMA)", "graph k {\n  input %%x : f32[%[1]d,7,10]\n  input %%dy : f32[%[1]d,7,11]\n  %%0 = dot_general(%%x, %%dy) {lhs_contract=[0,1], rhs_contract=[0,1]} : f32[10,11]\n  output dw = %%0\n}\n",
		3, 7, "x,dy", "", "ffma"},
	{"weight gradient (tensor cores)", "graph k {\n  input %%x : f16[%[1]d,16]\n  input %%dy : f16[%[1]d,24]\n  %%0 = dot_general(%%x, %%dy) {lhs_contract=[0], rhs_contract=[0]} : f16[16,24]\n  output dw = %%0\n}\n",
		40, 1, "x,dy", "", "tensor core"},
	{"weight gradient over two dims (tensor cores)", "graph k {\n  input %%x : f16[%[1]d,5,16]\n  input %%dy : f16[%[1]d,5,24]\n  %%0 = dot_general(%%x, %%dy) {lhs_contract=[0,1], rhs_contract=[0,1]} : f16[16,24]\n  output dw = %%0\n}\n",
		3, 5, "x,dy", "", "tensor core"},
	// Folds over scattered axes (symfold_scatter.go): the row template over the kept channels,
	// the run's count ending the reduced loops.
	{"statistics over scattered axes, keepdims", "graph k {\n  input %%x : f32[%[1]d,3,4,4]\n  %%0 = reduce_sum(%%x) {axes=[0,2,3], keepdims=true} : f32[1,3,1,1]\n  %%1 = mul(%%x, %%x) : f32[%[1]d,3,4,4]\n  %%2 = reduce_sum(%%1) {axes=[0,2,3], keepdims=true} : f32[1,3,1,1]\n  output s = %%0\n  output q = %%2\n}\n",
		6, 16, "x", "", ""},
	{"maximum over scattered axes spread back, f16", "graph k {\n  input %%x : f16[%[1]d,5,7]\n  %%0 = reduce_max(%%x) {axes=[0,2]} : f16[5]\n  %%1 = broadcast_in_dim(%%0) {shape=[%[1]d,5,7], dims=[1]} : f16[%[1]d,5,7]\n  %%2 = sub(%%x, %%1) : f16[%[1]d,5,7]\n  output y = %%2\n  output m = %%0\n}\n",
		20, 7, "x", "y", ""},
	{"i32 sums over scattered axes, two kept", "graph k {\n  input %%x : i32[%[1]d,2,9,3]\n  %%0 = reduce_sum(%%x) {axes=[0,2]} : i32[2,3]\n  output s = %%0\n}\n",
		40, 9, "x", "", ""},
	{"bf16 weight gradient, two k steps and more (tensor cores)", "graph k {\n  input %%x : bf16[%[1]d,40]\n  input %%dy : bf16[%[1]d,136]\n  %%0 = dot_general(%%x, %%dy) {lhs_contract=[0], rhs_contract=[0]} : bf16[40,136]\n  output dw = %%0\n}\n",
		70, 1, "x,dy", "", "tensor core"},
}

// TestSymbolicFolds: each folding kernel is the NVVM producer's own (Lacks names nothing), built
// once with codegen/ptx's parameters (the folded count last), launch and work (one block row
// along z), not the static kernel, assembling for sm_80 and sm_90 without spills. On the
// memchecked, racechecked simulator at the bound, 1, primes and 0 rows, with only the run's rows of its row inputs allocated, every static output
// equals the reference at those rows (within tolerance: the folds reassociate and the tiles
// accumulate in f32; exact where the op is) and codegen/ptx's symbolic entry's bit for bit (the
// same fold order and arithmetic), and a row output's rows past the run are never written.
func TestSymbolicFolds(t *testing.T) {
	p := requireProducer(t)
	target := plan.Target{SM: 80}
	for _, tc := range foldCases {
		t.Run(tc.name, func(t *testing.T) {
			parse := func(rows int) *ir.Graph {
				g, err := ir.Parse("k.gir", fmt.Appendf(nil, tc.src, rows))
				if err != nil {
					t.Fatal(err)
				}
				return g
			}
			g := parse(tc.rows)
			k := plan.Kernel{Name: "k0", Graph: g, Symbolic: true, Rows: tc.rows}
			if tc.kind != "" {
				if c, err := plan.ContractionPlan(k, target); err != nil || c.Kind != tc.kind {
					t.Fatalf("plan %q, %v; want %s", c.Kind, err, tc.kind)
				}
			}
			text, l, ptxText, pl := bothEntries(t, p, k, target)
			if last := l.Params[len(l.Params)-1]; last.Kind != plan.ArgSize || l.Work == nil {
				t.Fatalf("params %v, work %v", l.Params, l.Work)
			}
			if w := *l.Work; w.Axis != 2 || w.MaxBlocks != 1 || w.Scale != tc.per {
				t.Errorf("work %+v: want one block along z, %d per row", w, tc.per)
			}
			if st, _, err := p.Module([]plan.Kernel{{Name: "k0", Graph: g}}, target); err != nil || st == text {
				t.Errorf("the symbolic kernel is the static one (%v)", err)
			}
			assemble(t, text, []plan.Kernel{k})
			in := inputsFor(g, 5)
			rowInputs, rowOutputs := strings.Split(tc.rowInputs, ","), strings.Split(tc.rowOutputs, ",")
			sizes := []int{tc.rows, 1, 2, 3, 7, 13, 0}
			for _, r := range sizes {
				if r > tc.rows {
					continue
				}
				gr := parse(r)
				part := map[string]*tensor.Tensor{}
				for name, x := range in {
					part[name] = x
					if slices.Contains(rowInputs, name) {
						part[name] = firstRows(t, x, tc.rows, r)
					}
				}
				iin := map[string]*tensor.Tensor{}
				for _, v := range gr.Inputs() {
					x, err := tensor.FromBytes(v.Type, part[v.Name].Bytes())
					if err != nil {
						t.Fatal(err)
					}
					iin[v.Name] = x
				}
				want, err := ref.Run(gr, iin, nil)
				if err != nil {
					t.Fatal(err)
				}
				got := foldRun(t, text, k, l, part, tc.rows, r, rowOutputs)
				emitted := foldRun(t, ptxText, k, pl, part, tc.rows, r, rowOutputs)
				exact := exactKernel(g) && !reassociates(g) && tc.kind == ""
				for _, o := range g.Outputs {
					what := fmt.Sprintf("%s at %d of %d rows", o.Name, r, tc.rows)
					w, err := tensor.FromBytes(ir.T(o.Value.Type.DType, want[o.Name].Len()), want[o.Name].Bytes())
					if err != nil {
						t.Fatal(err)
					}
					compare(t, what+" (reference)", got[o.Name], w, exact, precision(g, o.Value), false, max(1, r*contractionLen(g)/tc.rows))
					compare(t, what+" (codegen/ptx)", got[o.Name], emitted[o.Name], true, precision(g, o.Value), false, 1)
				}
			}
		})
	}
}

// foldRun runs folding kernel k (text, launch l) at r of its rows rows (runRows), the size
// argument r times the work's scale; only the outputs rowOutputs carry rows.
func foldRun(t *testing.T, text string, k plan.Kernel, l plan.Launch, in map[string]*tensor.Tensor, rows, r int, rowOutputs []string) map[string]*tensor.Tensor {
	t.Helper()
	return runRows(t, text, k, l, in, rows, r, func(plan.Arg) int { return r * l.Work.Scale }, func(name string) bool { return slices.Contains(rowOutputs, name) })
}

// runRows runs kernel k (text, launch l, its grid) at r of its rows rows on a fresh simulator
// device (memcheck, racecheck, and the global race check), its row inputs holding only those
// rows (in), the outputs bound-sized and filled, each size argument a set to size(a). It returns
// each output flat: a static one whole, the run's rows of a row output (rowOutput), whose rows
// past the run must keep the fill.
func runRows(t *testing.T, text string, k plan.Kernel, l plan.Launch, in map[string]*tensor.Tensor, rows, r int, size func(plan.Arg) int, rowOutput func(string) bool) map[string]*tensor.Tensor {
	t.Helper()
	out, _ := launchSized(t, text, k, l, in, size) // symrowlen_test.go
	for name, x := range out {
		if !rowOutput(name) {
			out[name] = firstRows(t, x, 1, 1)
			continue
		}
		b := x.Bytes()[x.Len()/rows*r*x.Type.DType.Size():]
		if !bytes.Equal(b, bytes.Repeat([]byte{outFill}, len(b))) {
			t.Errorf("%s written past %d of %d rows", name, r, rows)
		}
		out[name] = firstRows(t, x, rows, r)
	}
	return out
}

// bothEntries builds kernel k with p and with codegen/ptx for target (the NVVM producer's own
// entry: Lacks names nothing) and fails the test unless the two launches take the same
// parameters, grid, block and work.
func bothEntries(t *testing.T, p *Producer, k plan.Kernel, target plan.Target) (text string, l plan.Launch, ptxText string, pl plan.Launch) {
	t.Helper()
	if note, ok := Lacks(k, target); ok {
		t.Fatalf("Lacks = %q", note)
	}
	text, ls, err := p.Module([]plan.Kernel{k}, target)
	if err != nil {
		t.Fatal(err)
	}
	ptxText, pls, err := ptx.Module([]plan.Kernel{k}, target)
	if err != nil {
		t.Fatal(err)
	}
	l, pl = ls[0], pls[0]
	if !reflect.DeepEqual(l.Params, pl.Params) || l.Grid != pl.Grid || l.Block != pl.Block || !reflect.DeepEqual(l.Work, pl.Work) {
		t.Errorf("launch %v %v %v %+v, codegen/ptx's %v %v %v %+v", l.Params, l.Grid, l.Block, l.Work, pl.Params, pl.Grid, pl.Block, pl.Work)
	}
	return text, l, ptxText, pl
}
