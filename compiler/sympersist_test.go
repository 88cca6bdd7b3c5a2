package compiler_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/onnx"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// persistModels are models whose static build at the bound forms persistent kernels: chains of
// small products (warp-split and direct stages), elementwise stages between them, two dims whose
// product is the rows, empty batches, and a conv2d stage over a symbolic batch. Their ranges
// hold 13 (and 31), so checkRows runs a prime beside the bounds and 1.
var persistModels = []struct {
	name  string
	build func(b *frontend.Builder)
}{
	{"tanh chain", func(b *frontend.Builder) { tanhChain(b, 1, 31, 8, 6) }},
	{"MLP chain with biases", func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, b.Dim("batch", 1, 13), 40)
		for i := range 3 {
			w := b.Param("w"+string(rune('0'+i)), ir.T(ir.F32, 40, 40), frontend.Uniform(-0.3, 0.3))
			bias := b.Param("b"+string(rune('0'+i)), ir.T(ir.F32, 40), frontend.Uniform(-1, 1))
			x = frontend.Linear(x, w, bias).Relu()
		}
		b.Output("y", x.Mul(x).Add(x))
	}},
	{"two dims as rows, f16", func(b *frontend.Builder) {
		batch, seq := b.Dim("batch", 1, 3), b.Dim("seq", 2, 13)
		x := b.Input("x", ir.F16, batch, seq, 16)
		w := b.Param("w", ir.T(ir.F16, 16, 16), frontend.Uniform(-0.5, 0.5))
		for range 4 {
			x = x.Reshape(-1, 16).Matmul(w).Sigmoid().Reshape(batch, seq, 16)
		}
		b.Output("y", x)
	}},
	{"empty batches", func(b *frontend.Builder) { tanhChain(b, 0, 13, 12, 4) }},
	{"first layer of a stacked state", func(b *frontend.Builder) { stackedState(b, 0, 2, 16) }},
	{"second layer of a stacked state", func(b *frontend.Builder) { stackedState(b, 1, 2, 16) }},
	{"last layer of three, 8-byte rows of f16 pairs", func(b *frontend.Builder) { stackedState(b, 2, 3, 8) }},
	{"every layer of a stacked state", func(b *frontend.Builder) {
		batch := b.Dim("batch", 1, 13)
		x := b.Input("x", ir.F32, batch, 16)
		h0 := b.Input("h0", ir.F32, 2, batch, 16)
		w := b.Param("w", ir.T(ir.F32, 16, 16), frontend.Uniform(-0.5, 0.5))
		for l := range 2 { // layer l starts from h0[l] and reads the layer below
			h := h0.Index(0, l)
			for range 2 {
				h = h.Matmul(w).Add(x).Tanh()
			}
			x = h
		}
		b.Output("y", x)
	}},
	{"conv2d stages", func(b *frontend.Builder) {
		img := b.Input("img", ir.F32, b.Dim("n", 1, 13), 8, 4, 4)
		opt := frontend.Conv2dOptions{Padding: [2]int{1, 1}}
		h := img
		for i := range 3 {
			w := b.Param("w"+string(rune('0'+i)), ir.T(ir.F32, 8, 8, 3, 3), frontend.Uniform(-0.2, 0.2))
			h = frontend.Conv2d(h, w, nil, opt).Relu().Add(h)
		}
		b.Output("y", h)
	}},
}

// tanhChain is n products by one d×d weight, each with tanh, over a batch in [lo, hi].
func tanhChain(b *frontend.Builder, lo, hi, d, n int) {
	x := b.Input("x", ir.F32, b.Dim("batch", lo, hi), d)
	w := b.Param("w", ir.T(ir.F32, d, d), frontend.Uniform(-1, 1))
	for range n {
		x = x.Matmul(w).Tanh()
	}
	b.Output("y", x)
}

// stackedState is an RNN-like chain over a batch in [1, 13] whose state starts from layer l of
// a stacked input [layers, batch, h] (an LSTM's h0): a stage reads a slice of an input with more
// rows than its own, past the first layer at an offset of the run's rows. h 8 is f16.
func stackedState(b *frontend.Builder, l, layers, h int) {
	dt := ir.F32
	if h == 8 {
		dt = ir.F16
	}
	batch := b.Dim("batch", 1, 13)
	x := b.Input("x", dt, batch, h)
	h0 := b.Input("h0", dt, layers, batch, h)
	w := b.Param("w", ir.T(dt, h, h), frontend.Uniform(-0.5, 0.5))
	s := h0.Index(0, l)
	for range 3 {
		s = s.Matmul(w).Add(x).Tanh()
	}
	b.Output("y", s)
}

// persistentKernels returns the kernel names of g's build that are persistent, with their ops.
func persistentKernels(t *testing.T, g *ir.Graph) []string {
	t.Helper()
	res, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, k := range res.Artifact.Plan.Kernels {
		if strings.Contains(k.Name, "persistent") {
			names = append(names, k.Name+": "+k.Ops)
		}
	}
	return names
}

// The passes form the persistent kernels of the static graph at the bound (fusion decides the
// same), and one build runs at every size: at the bounds, 1 and primes, smaller sizes first, on
// the memchecked simulator against the reference interpreter (checkRows).
func TestSymbolicPersistent(t *testing.T) {
	for _, tc := range persistModels {
		t.Run(tc.name, func(t *testing.T) {
			g, err := frontend.Build("m", tc.build)
			if err != nil {
				t.Fatal(err)
			}
			bound := map[string]int64{}
			for _, d := range g.Dims {
				bound[d.Name] = int64(d.Hi)
			}
			static, err := ops.Instantiate(g, bound)
			if err != nil {
				t.Fatal(err)
			}
			want := persistentKernels(t, static)
			if len(want) == 0 {
				t.Fatal("the static graph at the bound forms no persistent kernel")
			}
			if got := persistentKernels(t, g); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("persistent kernels with dims:\n%s\nstatic at the bound:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			checkRows(t, g)
		})
	}
}

// A persistent kernel's size parameters: one per symbolic stage, each the stage's rows times its
// elements per row, and the launch stays one block.
func TestSymbolicPersistentSizes(t *testing.T) {
	g, err := ir.Parse("p.gir", []byte(`graph p {
  dims { batch in [1,6] }
  input %x : f32[batch,8]
  param %w : f32[8,8] {init="uniform"}
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[batch,8]
  %1 = tanh(%0) : f32[batch,8]
  %2 = dot_general(%1, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[batch,8]
  %3 = tanh(%2) : f32[batch,8]
  %4 = dot_general(%3, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[batch,8]
  output y = %4
}
`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var sizes []string
	for _, k := range res.Artifact.Plan.Kernels {
		if !strings.Contains(k.Name, "persistent") {
			continue
		}
		if k.Grid != [3]int{1, 1, 1} || k.Work != nil {
			t.Errorf("%s: grid %v, work %v: want one block", k.Name, k.Grid, k.Work)
		}
		for _, a := range k.Args {
			if a.Kind == artifact.ArgSize {
				sizes = append(sizes, a.Expr)
			}
		}
	}
	if got, want := strings.Join(sizes, " "), "8*batch 8*batch 8*batch"; got != want {
		t.Errorf("size arguments %q, want %q", got, want)
	}
	checkRows(t, g)
}

// The ResNet-style torch export with a dynamic batch (frontend/onnx/suite's TestExportedDynamic
// runs it against PyTorch at 1, 3 and 8): its build with dims has the static build's
// persistent kernels at the bound and runs at 1, the primes to 7 and the bound, in increasing
// order on the memchecked simulator, equal to the reference interpreter with the file's weights.
func TestSymbolicPersistentExport(t *testing.T) {
	path := filepath.Join("..", "frontend", "onnx", "suite", "testdata", "dynamic", "resnet_dyn_opset13.onnx")
	m, err := onnx.ImportFile(path, onnx.Options{MaxShapes: map[string][]int{"x": {8, 3, 32, 32}}})
	if err != nil {
		t.Fatal(err)
	}
	g := m.Graph
	static, err := ops.Instantiate(g, map[string]int64{"batch": 8})
	if err != nil {
		t.Fatal(err)
	}
	want := persistentKernels(t, static)
	if got := persistentKernels(t, g); len(want) == 0 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("persistent kernels with dims:\n%s\nstatic at the bound:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	res, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := executor.Load(simdev.New(simdev.Options{}), res.Artifact)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	weights, err := m.Weights.Map()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetParams(weights); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int64{1, 2, 3, 5, 7, 8} {
		env := map[string]int64{"batch": n}
		st, err := ops.Instantiate(g, env)
		if err != nil {
			t.Fatal(err)
		}
		inputs, _, err := tensor.SeededValues(st, uint64(n))
		if err != nil {
			t.Fatal(err)
		}
		wantOut, err := ref.Run(st, inputs, weights)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Run(inputs)
		if err != nil {
			t.Fatalf("batch %d: %v", n, err)
		}
		compareOutputs(t, env, wantOut, got.Outputs, 64)
	}
}

// A persistent kernel with a stage that cannot run at symbolic sizes is refused naming the
// kernel, the stage, the value and why.
func TestSymbolicPersistentRefused(t *testing.T) {
	g, err := ir.Parse("r.gir", []byte(`graph r {
  dims { batch in [1,8] }
  input %x : f32[batch,8]
  param %w : f32[8,8] {init="uniform"}
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[batch,8]
  %1 = tanh(%0) : f32[batch,8]
  %2 = dot_general(%1, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[batch,8]
  %3 = tanh(%2) : f32[batch,8]
  %4 = dot_general(%w, %3) {lhs_contract=[1], rhs_contract=[1]} : f32[8,batch]
  %5 = tanh(%4) : f32[8,batch]
  output y = %5
}
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = compiler.Compile(g, compiler.Options{})
	want := "graph r has symbolic dims: persistent kernel k0_persistent (dot_general tanh dot_general tanh dot_general tanh), over symbolic buffer y: stage s2_matmul_tanh (dot_general tanh): "
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), ": f32[8,batch] has 8*batch") {
		t.Errorf("Compile = %v, want %q and the value", err, want)
	}
	// A later layer of a stacked state whose rows are not whole 16-byte groups would start
	// between the bound's vector groups: refused with its two row counts.
	g, err = frontend.Build("s", func(b *frontend.Builder) { stackedState(b, 1, 2, 3) })
	if err != nil {
		t.Fatal(err)
	}
	_, err = compiler.Compile(g, compiler.Options{})
	want = "input %h0 : f32[2,batch,3] has 2*batch rows, %0 = slice(%h0) {limit=[2,13,3], start=[1,0,0]} : f32[1,batch,3] has batch"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Compile of layer 1 = %v, want %q", err, want)
	}
}
