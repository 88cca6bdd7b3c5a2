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
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// Each template at symbolic sizes (plan.Kernel.Symbolic): one build per kernel takes
// codegen/ptx's parameters (the size last), launch and work, is not the static kernel,
// assembles for sm_80 and sm_90 without spills, and runs on the memchecked simulator at the
// bound, 1, primes and 0 rows with only those rows of its row inputs ever written (a read of
// another row is an uninitialized read): equal to the reference's first rows, and to
// codegen/ptx's build of the same kernel bit for bit where both compute exactly alike.
func TestSymbolicTemplates(t *testing.T) {
	p := requireProducer(t)
	for _, tc := range []struct {
		name, src string
		rows      int    // Kernel.Rows (0: a flat elementwise loop, rows are elements)
		rowInputs string // the inputs carrying the rows, comma-separated; the others are static
		kind      string // the template ContractionPlan or ReducePlan names, "" for a loop
		same      bool   // codegen/ptx's bits
		tf32      bool
	}{
		{"flat f32", "graph k {\n  input %x : f32[40,3]\n  input %y : f32[40,3]\n  %0 = mul(%x, %y) : f32[40,3]\n  %1 = sub(%0, %x) : f32[40,3]\n  output out = %1\n}\n",
			0, "x,y", "", true, false},
		{"flat f16 eight-wide, two outputs", "graph k {\n  input %x : f16[9,16]\n  %0 = mul(%x, %x) : f16[9,16]\n  %1 = cast(%0) {to=f32} : f32[9,16]\n  output a = %0\n  output b = %1\n}\n",
			0, "x", "", true, false},
		{"loop with a static bias", "graph k {\n  input %x : f32[40,6]\n  input %b : f32[6]\n  %0 = broadcast_in_dim(%b) {shape=[40,6], dims=[1]} : f32[40,6]\n  %1 = add(%x, %0) : f32[40,6]\n  output out = %1\n}\n",
			20, "x", "", true, false},
		{"row sums and maxima", "graph k {\n  input %x : f32[30,50]\n  %0 = reduce_max(%x) {axes=[1]} : f32[30]\n  %1 = reduce_sum(%x) {axes=[1]} : f32[30]\n  output m = %0\n  output s = %1\n}\n",
			30, "x", "row", true, false},
		{"row softmax", "graph k {\n  input %x : f32[30,50]\n  %0 = reduce_max(%x) {axes=[1]} : f32[30]\n  %1 = broadcast_in_dim(%0) {shape=[30,50], dims=[0]} : f32[30,50]\n  %2 = sub(%x, %1) : f32[30,50]\n  %3 = exp(%2) : f32[30,50]\n  %4 = reduce_sum(%3) {axes=[1]} : f32[30]\n  %5 = broadcast_in_dim(%4) {shape=[30,50], dims=[0]} : f32[30,50]\n  %6 = div(%3, %5) : f32[30,50]\n  output out = %6\n}\n",
			30, "x", "row", false, false},
		{"a middle axis of the rows reduced (column template, its tiles the size)", "graph k {\n  input %x : f32[4,6,8]\n  %0 = reduce_sum(%x) {axes=[1]} : f32[4,8]\n  output out = %0\n}\n",
			4, "x", "column", true, false},
		{"upsampling's backward over [rows, C, H, 2, W] (column template)", "graph k {\n  input %dy : f32[5,3,4,2,4]\n  %0 = reduce_sum(%dy) {axes=[3]} : f32[5,3,4,4]\n  output dx = %0\n}\n",
			5, "dy", "column", true, false},
		{"bf16 middle axis, two column tiles, keepdims spread back", "graph k {\n  input %x : bf16[3,7,40]\n  %0 = reduce_sum(%x) {axes=[1], keepdims=true} : bf16[3,1,40]\n  %1 = broadcast_in_dim(%0) {shape=[3,7,40], dims=[0,1,2]} : bf16[3,7,40]\n  %2 = sub(%x, %1) : bf16[3,7,40]\n  output s = %0\n  output y = %2\n}\n",
			3, "x", "column", true, false},
		{"upsampling's backward over [rows, C, H, 2, W, 2]", "graph k {\n  input %dy : f32[3,2,4,2,4,2]\n  %0 = reduce_sum(%dy) {axes=[3,5]} : f32[3,2,4,4]\n  output dx = %0\n}\n",
			3, "dy", "row", true, false},
		{"one long row (split at the bound)", "graph k {\n  input %x : f32[1,40000]\n  %0 = reduce_sum(%x) {axes=[1]} : f32[1]\n  output out = %0\n}\n",
			1, "x", "split", true, false},
		{"FFMA GEMM", "graph k {\n  input %x : f32[300,20]\n  input %w : f32[24,20]\n  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[300,24]\n  %1 = relu(%0) : f32[300,24]\n  output out = %1\n}\n",
			300, "x", "ffma", true, false},
		{"tensor-core GEMM", "graph k {\n  input %x : f16[3,100,32]\n  input %w : f16[32,16]\n  %0 = dot_general(%x, %w) {lhs_contract=[2], rhs_contract=[0]} : f16[3,100,16]\n  output out = %0\n}\n",
			3, "x", "tensor core", true, false},
		{"tensor-core GEMM, staged epilogue", "graph k {\n  input %x : f16[150,64]\n  input %w : f16[136,64]\n  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[1]} : f16[150,136]\n  output out = %0\n}\n",
			150, "x", "tensor core", true, false},
		{"tf32 GEMM", "graph k {\n  input %x : f32[70,40]\n  input %w : f32[40,136]\n  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[70,136]\n  output out = %0\n}\n",
			70, "x", "tensor core", true, true},
		{"bf16 GEMM with a bias", "graph k {\n  input %x : bf16[2,33,40]\n  input %w : bf16[24,40]\n  input %b : bf16[24]\n  %0 = dot_general(%x, %w) {lhs_contract=[2], rhs_contract=[1]} : bf16[2,33,24]\n  %1 = broadcast_in_dim(%b) {shape=[2,33,24], dims=[2]} : bf16[2,33,24]\n  %2 = add(%0, %1) : bf16[2,33,24]\n  output out = %2\n}\n",
			66, "x", "tensor core", true, false},
		{"batched FFMA products", "graph k {\n  input %x : f32[3,6,8]\n  input %y : f32[3,8,20]\n  %0 = dot_general(%x, %y) {lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[1]} : f32[3,6,20]\n  output out = %0\n}\n",
			3, "x,y", "ffma", true, false},
		{"batched f16 products", "graph k {\n  input %x : f16[5,6,16]\n  input %y : f16[5,16,24]\n  %0 = dot_general(%x, %y) {lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[1]} : f16[5,6,24]\n  output out = %0\n}\n",
			5, "x,y", "tensor core", true, false},
		{"GEMV (direct)", "graph k {\n  input %x : f32[6,512]\n  input %w : f32[64,512]\n  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[6,64]\n  output out = %0\n}\n",
			6, "x", "gemv", false, false},
		{"conv2d", "graph k {\n  input %x : f32[5,3,7,7]\n  input %w : f32[4,3,3,3]\n  %0 = conv2d(%x, %w) {stride=[1,1], padding=[1,1], dilation=[1,1], groups=1} : f32[5,4,7,7]\n  output out = %0\n}\n",
			5, "x", "ffma", true, false},
		{"grouped f16 conv2d", "graph k {\n  input %x : f16[5,6,7,7]\n  input %w : f16[8,3,3,3]\n  %0 = conv2d(%x, %w) {stride=[2,1], padding=[1,1], dilation=[1,1], groups=2} : f16[5,8,4,7]\n  %1 = relu(%0) : f16[5,8,4,7]\n  output out = %1\n}\n",
			5, "x", "tensor core", true, false},
		{"conv2d with a fused max pooling", "graph k {\n  input %x : f32[5,3,8,8]\n  input %w : f32[4,3,3,3]\n  %0 = conv2d(%x, %w) {padding=[1,1]} : f32[5,4,8,8]\n  %1 = max_pool2d(%0) {kernel=[2,2], stride=[2,2]} : f32[5,4,4,4]\n  output out = %1\n}\n",
			5, "x", "ffma", true, false},
		{"f16 conv2d with a fused avg pooling and its pre-pool value", "graph k {\n  input %x : f16[7,8,13,13]\n  input %w : f16[12,8,3,3]\n  %0 = conv2d(%x, %w) {stride=[2,2], padding=[2,2]} : f16[7,12,8,8]\n  %1 = relu(%0) : f16[7,12,8,8]\n  %2 = avg_pool2d(%1) {kernel=[2,1], stride=[2,1]} : f16[7,12,4,8]\n  output out = %2\n  output pre = %1\n}\n",
			7, "x", "tensor core", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ir.Parse("k.gir", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			k := plan.Kernel{Name: "k0", Graph: g, Symbolic: true, Rows: tc.rows}
			target := plan.Target{SM: 80, TF32: tc.tf32}
			static := plan.Kernel{Name: "k0", Graph: g}
			switch plan.Template(static) {
			case "contraction":
				if c, err := plan.ContractionPlan(k, target); err != nil || c.Kind != tc.kind {
					t.Fatalf("plan %q, %v; want %s", c.Kind, err, tc.kind)
				}
			case "reduction":
				if rp, err := plan.ReducePlan(k); err != nil || rp.Kind != tc.kind {
					t.Fatalf("plan %q, %v; want %s", rp.Kind, err, tc.kind)
				}
			}
			text, ls, err := p.Module([]plan.Kernel{k}, target)
			if err != nil {
				t.Fatal(err)
			}
			l := ls[0]
			ptxText, pls, err := ptx.Module([]plan.Kernel{k}, target)
			if err != nil {
				t.Fatal(err)
			}
			pl := pls[0]
			if last := l.Params[len(l.Params)-1]; last.Kind != plan.ArgSize || l.Work == nil {
				t.Fatalf("params %v, work %v", l.Params, l.Work)
			}
			if !strings.Contains(text, ".param .u32 k0_param_") {
				t.Error("no .u32 size parameter in the PTX")
			}
			if tc.kind == "gemv" {
				// The direct template over the result's elements: a loop's work.
				if l.Work.Tile != 0 || l.Work.Scale != g.Outputs[0].Value.Type.Shape.NumElements()/tc.rows || !slices.Equal(l.Params, append(plan.Params(g), plan.Arg{Kind: plan.ArgSize})) {
					t.Errorf("GEMV: params %v, work %+v", l.Params, *l.Work)
				}
			} else if !reflect.DeepEqual(l.Params, pl.Params) || l.Grid != pl.Grid || l.Block != pl.Block || *l.Work != *pl.Work {
				t.Errorf("launch %v %v %v %+v, codegen/ptx's %v %v %v %+v", l.Params, l.Grid, l.Block, *l.Work, pl.Params, pl.Grid, pl.Block, *pl.Work)
			}
			if st, _, err := p.Module([]plan.Kernel{static}, target); err != nil || st == text {
				t.Errorf("the symbolic kernel is the static one (%v)", err)
			}
			assemble(t, text, []plan.Kernel{k})
			units := tc.rows
			if units == 0 {
				units = g.Outputs[0].Value.Type.Shape.NumElements()
			}
			in := inputsFor(g, 7)
			pin, iin := map[string]*tensor.Tensor{}, map[string]*tensor.Tensor{}
			for _, v := range g.Inputs() {
				iin[v.Name] = in[v.Name]
			}
			want, err := ref.Run(g, iin, pin)
			if err != nil {
				t.Fatal(err)
			}
			rowInputs := strings.Split(tc.rowInputs, ",")
			exact := exactKernel(g) && !reassociates(g) && !tiled(k)
			for _, r := range []int{units, 1, 2, 3, 7, 13, 0} {
				if r > units {
					continue
				}
				got, _ := symRun(t, text, k, l, in, rowInputs, units, r)
				emitted, _ := symRun(t, ptxText, k, pl, in, rowInputs, units, r)
				for _, o := range g.Outputs {
					what := fmt.Sprintf("%s at %d of %d rows", o.Name, r, units)
					w := firstRows(t, want[o.Name], units, r)
					compare(t, what+" (reference)", got[o.Name], w, exact, precision(g, o.Value), tc.tf32, contractionLen(g))
					compare(t, what+" (codegen/ptx)", got[o.Name], emitted[o.Name], tc.same, precision(g, o.Value), tc.tf32, contractionLen(g))
				}
			}
		})
	}
}

// firstRows is the first r of x's units rows, flat.
func firstRows(t *testing.T, x *tensor.Tensor, units, r int) *tensor.Tensor {
	n := x.Len() * r / units
	y, err := tensor.FromBytes(ir.T(x.Type.DType, n), x.Bytes()[:n*x.Type.DType.Size()])
	if err != nil {
		t.Fatal(err)
	}
	return y
}

// symRun runs kernel k (text, launch l) at r of its units rows in a fresh simulator device,
// checks on: only the first r rows of the row inputs are there (the static inputs whole, the
// outputs at the bound), the size argument is r times the work's scale (a dim's, r) and the grid
// follows from it as the executor computes it. It returns the first r rows of each output, flat,
// and the launch's counters.
func symRun(t *testing.T, text string, k plan.Kernel, l plan.Launch, in map[string]*tensor.Tensor, rowInputs []string, units, r int) (map[string]*tensor.Tensor, *sim.Stats) {
	t.Helper()
	part := map[string]*tensor.Tensor{}
	for name, x := range in {
		part[name] = x
		if slices.Contains(rowInputs, name) {
			part[name] = firstRows(t, x, units, r)
		}
	}
	sr := loadRun(t, text, k, l, part)
	n := int64(r * l.Work.Scale)
	if l.Work.Elements != "" { // attention's block count, an expression over seq
		e, err := sym.Parse(l.Work.Elements)
		if err != nil {
			t.Fatal(err)
		}
		if n, err = e.Eval(map[string]int64{"seq": int64(r)}); err != nil {
			t.Fatal(err)
		}
	}
	for i, a := range l.Params {
		switch {
		case a.Kind == plan.ArgSize && a.Expr != "":
			sr.args[i] = uint32(r) // a dim's value: the strided tests' one dim is the rows
		case a.Kind == plan.ArgSize:
			sr.args[i] = uint32(n)
		}
	}
	w := *l.Work
	grid := l.Grid
	if w.Tile > 0 {
		grid[w.Axis] = int(min(max(1, (n+int64(w.Tile)-1)/int64(w.Tile)), int64(w.MaxBlocks)))
	} else {
		grid[0] = w.Grid(n)
	}
	sr.cfg.Grid = sim.Dim3{X: grid[0], Y: grid[1], Z: grid[2]}
	const fill = 0x3d // a number in every float dtype (NaN payloads need not survive a tensor)
	for _, o := range k.Graph.Outputs {
		if err := sr.dev.Write(sr.outAddr[o.Name], bytes.Repeat([]byte{fill}, o.Value.Type.Bytes())); err != nil {
			t.Fatal(err)
		}
	}
	st, err := sr.m.Launch(sr.entry, sr.cfg, sr.args...)
	if err != nil {
		t.Fatalf("%d of %d rows: %v", r, units, err)
	}
	_, out := sr.read(t)
	for name, x := range out {
		// The rows past the run's are another run's memory: never written.
		b := x.Bytes()[x.Len()*r/units*x.Type.DType.Size():]
		if !bytes.Equal(b, bytes.Repeat([]byte{fill}, len(b))) {
			t.Errorf("%s written past %d of %d rows", name, r, units)
		}
		out[name] = firstRows(t, x, units, r)
	}
	return out, st
}

// A symbolic kernel no template takes at symbolic sizes is refused naming the kernel, in
// codegen/ptx's words: a bound that is not a whole number of rows, a loop
// kernel reading through a view without rows, a GEMV with a norm prologue (a reduction and a matmul),
// a GEMM folding its rows through a view (symfold.go).
func TestSymbolicTemplatesRefused(t *testing.T) {
	for _, tc := range []struct {
		src  string
		rows int
		want string
	}{
		{"graph k {\n  input %x : f32[10,6]\n  %0 = broadcast_in_dim(%x) {shape=[10,6], dims=[0,1]} : f32[10,6]\n  output out = %0\n}\n", 7,
			"element count 60 at the bound is not a whole number of its 7 rows"},
		{"graph k {\n  input %x : f32[3]\n  %0 = broadcast_in_dim(%x) {shape=[4,3], dims=[1]} : f32[4,3]\n  output out = %0\n}\n", 0,
			"input x is read through a broadcast or view"},
		{"graph k {\n  input %x : f32[4,64]\n  input %w : f32[32,64]\n  %0 = mul(%x, %x) : f32[4,64]\n  %1 = reduce_sum(%0) {axes=[1]} : f32[4]\n  %2 = broadcast_in_dim(%1) {shape=[4,64], dims=[0]} : f32[4,64]\n  %3 = div(%x, %2) : f32[4,64]\n  %4 = dot_general(%3, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[4,32]\n  output out = %4\n}\n", 4,
			"a matmul and reduce kernel does not run at symbolic sizes yet"},
		{"graph k {\n  input %x : f32[4,40,3]\n  input %dy : f32[40,20]\n  %0 = transpose(%x) {perm=[1,0,2]} : f32[40,4,3]\n  %2 = reshape(%0) {shape=[40,12]} : f32[40,12]\n  %1 = dot_general(%2, %dy) {lhs_contract=[0], rhs_contract=[0]} : f32[12,20]\n  output out = %1\n}\n", 40,
			"a GEMM whose K is the symbolic rows, read through a view, does not run at symbolic sizes yet"},
	} {
		g, err := ir.Parse("k.gir", []byte(tc.src))
		if err != nil {
			t.Fatal(err)
		}
		k := plan.Kernel{Name: "k0", Graph: g, Symbolic: true, Rows: tc.rows}
		_, _, perr := ptx.Generate(k, plan.Target{SM: 80})
		_, _, err = IR([]plan.Kernel{k}, plan.Target{SM: 80})
		if err == nil || perr == nil || !strings.HasPrefix(err.Error(), "k0: ") || !strings.Contains(err.Error(), tc.want) || !strings.Contains(perr.Error(), tc.want) {
			t.Errorf("IR = %v, codegen/ptx's Generate = %v; want %q from both", err, perr, tc.want)
		}
	}
}
