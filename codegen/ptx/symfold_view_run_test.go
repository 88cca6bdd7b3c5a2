package ptx

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/internal/symtest"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// foldViewSrc is a weight gradient dW = Vᵀ·X (f32) or Xᵀ·V (f16) whose V merges 2 heads of
// [2, 2, seq, d] back into [2, seq, 2·d] through a transpose and a reshape; K = 2·seq.
func foldViewSrc(d ir.DType, seq int) string {
	if d == ir.F16 {
		return fmt.Sprintf("graph k {\n  input %%x : f16[2,%[1]d,16]\n  input %%dv : f16[2,2,%[1]d,8]\n  %%0 = transpose(%%dv) {perm=[0,2,1,3]} : f16[2,%[1]d,2,8]\n  %%1 = reshape(%%0) {shape=[2,%[1]d,16]} : f16[2,%[1]d,16]\n  %%2 = dot_general(%%x, %%1) {lhs_contract=[0,1], rhs_contract=[0,1]} : f16[16,16]\n  output out = %%2\n}\n", seq)
	}
	return fmt.Sprintf("graph k {\n  input %%dq : f32[2,2,%[1]d,4]\n  input %%x : f32[2,%[1]d,8]\n  %%0 = transpose(%%dq) {perm=[0,2,1,3]} : f32[2,%[1]d,2,4]\n  %%1 = reshape(%%0) {shape=[2,%[1]d,8]} : f32[2,%[1]d,8]\n  %%2 = dot_general(%%1, %%x) {lhs_contract=[0,1], rhs_contract=[0,1]} : f32[8,8]\n  output out = %%2\n}\n", seq)
}

// foldBatchedSrc is a batched fold: per batch element j of 4, a's 2 heads of 8 merged back
// ([seq, 2, 4, 8] transposed and reshaped into [seq, 4, 16]), row j contracted over seq with
// b[seq, j, 16].
func foldBatchedSrc(d ir.DType, seq int) string {
	return fmt.Sprintf("graph k {\n  input %%a : %[1]s[%[2]d,2,4,8]\n  input %%b : %[1]s[%[2]d,4,16]\n  %%0 = transpose(%%a) {perm=[0,2,1,3]} : %[1]s[%[2]d,4,2,8]\n"+
		"  %%1 = reshape(%%0) {shape=[%[2]d,4,16]} : %[1]s[%[2]d,4,16]\n  %%2 = dot_general(%%1, %%b) {lhs_batch=[1], rhs_batch=[1], lhs_contract=[0], rhs_contract=[0]} : %[1]s[4,16,16]\n  output out = %%2\n}\n", d, seq)
}

// TestSymbolicFoldViewRuns: the fold GEMM reading an operand through transpose and reshape views,
// built once at seq = 37 (f32, FFMA) or 40 (f16, tensor cores), runs on the memchecked
// simulator at seq 1, a prime and the bound (its inputs contiguous at the run's sizes at the start
// of bound-sized buffers whose rest is never written): within tolerance of the reference and bit
// for bit the static kernel built for that seq (the same tiles and k steps); so does a batched
// fold (static batch dims, each coordinate from blockIdx.z; compiled whole: the compiler's
// TestSymbolicFoldViews, batched rows). The warp instructions of both are docs/perf.md's
// (go test -run TestSymbolicFoldViewRuns -v ./codegen/ptx).
func TestSymbolicFoldViewRuns(t *testing.T) {
	for _, c := range []struct {
		name  string
		d     ir.DType
		bound int
		per   int // K per seq
		src   func(ir.DType, int) string
	}{{"f32", ir.F32, 37, 2, foldViewSrc}, {"f16", ir.F16, 40, 2, foldViewSrc},
		{"batched f32", ir.F32, 37, 1, foldBatchedSrc}, {"batched f16", ir.F16, 40, 1, foldBatchedSrc}} {
		t.Run(c.name, func(t *testing.T) {
			runFoldOnce(t, c.d, c.bound, c.per, func(seq int) string { return c.src(c.d, seq) })
		})
	}
}

// runFoldOnce builds the fold of src (at seq; K is per rows per seq) once at seq bound, checks
// it assembles, and runs it at seq 1, 13 and the bound (checkFoldRun). It returns the text and
// launch.
func runFoldOnce(t *testing.T, d ir.DType, bound, per int, src func(seq int) string) (string, Launch) {
	t.Helper()
	g := parse(t, src(bound))
	text, ls, err := Module([]Kernel{{Name: "k0", Graph: g, Symbolic: true, Rows: per * bound, Sizes: symtest.SizesOver(g, bound, "seq", nil)}}, Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	assemble(t, text)
	for _, seq := range []int{1, 13, bound} {
		checkFoldRun(t, fmt.Sprintf("seq %d of %d", seq, bound), text, ls[0], g, parse(t, src(seq)), seq, per*seq, d)
	}
	return text, ls[0]
}

// checkFoldRun runs fold kernel l of module text (g at the bound) at seq, its size parameter k,
// on seq's graph gs with seeded inputs (runSymFold): bit for bit the static kernel built for gs
// and within d's tolerance of the reference. It logs and returns the ratio of both kernels' warp
// instructions (built once over static).
func checkFoldRun(t *testing.T, what, text string, l Launch, g, gs *ir.Graph, seq, k int, d ir.DType) float64 {
	t.Helper()
	in, _, err := tensor.SeededValues(gs, uint64(seq))
	if err != nil {
		t.Fatal(err)
	}
	got, st := runSymFold(t, text, l, g, seq, k, in)
	run := checkStaticAndRef(t, what, got, gs, in, Target{SM: 80}, d, k, true)
	ratio := float64(st.WarpInsts) / float64(run.stats.WarpInsts)
	t.Logf("%s: %d warp instructions built once, %d static (%.3f×)", what, st.WarpInsts, run.stats.WarpInsts, ratio)
	return ratio
}

// checkStaticAndRef checks output bytes got of a symbolic run on gs's inputs in: with bits, bit
// for bit the output of the static kernel built for gs on tgt; within prec's tolerance of the
// reference (k terms summed). It returns the static run.
func checkStaticAndRef(t *testing.T, what string, got []byte, gs *ir.Graph, in map[string]*tensor.Tensor, tgt Target, prec ir.DType, k int, bits bool) *simRun {
	t.Helper()
	run := runStatic(t, "k0", gs, in, tgt)
	static := make([]byte, len(got))
	if err := run.dev.Read(run.outAddr["out"], static); err != nil {
		t.Fatal(err)
	}
	if bits && !bytes.Equal(got, static) {
		t.Errorf("%s: the output differs from the static kernel's", what)
	}
	want, err := ref.Run(gs, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	o, err := tensor.FromBytes(gs.Outputs[0].Value.Type, got)
	if err != nil {
		t.Fatal(err)
	}
	compare(t, what, o, want["out"], false, prec, k, 1)
	return run
}

// runSymFold launches fold kernel l (of g, at the bound) at seq with K = k on the memchecked
// simulator: inputs contiguous at the run's sizes at the start of their bound-sized buffers,
// the rest never written; the grid is the bound's. It returns the output's bytes.
func runSymFold(t *testing.T, text string, l Launch, g *ir.Graph, seq, k int, in map[string]*tensor.Tensor) ([]byte, *sim.Stats) {
	t.Helper()
	return runSym(t, text, l, g, g.Outputs[0].Value.Type.Bytes(), map[string]int{"seq": seq, "": k}, l.Grid, in)
}

// runSym launches kernel k0 of text (launch l, of g at the bound) on the memchecked simulator
// over grid, each size parameter the value sizes gives its expression ("" for the kernel's own
// size): inputs at the start of bound-sized buffers, the rest never written. It returns the
// output's first n bytes.
func runSym(t *testing.T, text string, l Launch, g *ir.Graph, n int, sizes map[string]int, grid [3]int, in map[string]*tensor.Tensor) ([]byte, *sim.Stats) {
	t.Helper()
	dev := sim.NewDevice()
	m, err := dev.Load(text)
	if err != nil {
		t.Fatal(err)
	}
	var args []any
	var out uint64
	for _, a := range l.Params {
		switch a.Kind {
		case ArgSize:
			args = append(args, uint32(sizes[a.Expr]))
		case ArgInput:
			addr, err := dev.Alloc(g.Inputs()[a.Index].Type.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if err := dev.Write(addr, in[a.Name].Bytes()); err != nil {
				t.Fatal(err)
			}
			args = append(args, addr)
		case ArgOutput:
			nb := g.Outputs[a.Index].Value.Type.Bytes()
			if out, err = dev.Alloc(nb); err != nil {
				t.Fatal(err)
			}
			if err := dev.Write(out, bytes.Repeat([]byte{symUntouched}, nb)); err != nil { // bytes past the run's stay so
				t.Fatal(err)
			}
			args = append(args, out)
		default:
			t.Fatalf("unexpected parameter %+v", a)
		}
	}
	cfg := sim.Config{Grid: sim.Dim3{X: grid[0], Y: grid[1], Z: grid[2]}, Block: sim.Dim3{X: l.Block[0], Y: l.Block[1], Z: l.Block[2]}, SharedBytes: l.SharedBytes}
	st, err := m.Launch("k0", cfg, args...)
	if err != nil {
		t.Fatalf("sizes %v: %v", sizes, err)
	}
	got := make([]byte, n)
	if err := dev.Read(out, got); err != nil {
		t.Fatal(err)
	}
	return got, st
}
