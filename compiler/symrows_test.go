package compiler_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/paramcheck"
	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// rowModels are models whose symbolic dims lead every shape: each kernel over them computes its
// rows independently, so one build runs at any size in range.
var rowModels = []struct {
	name  string
	build func(b *frontend.Builder)
}{
	{"bias, relu and a static transpose", func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, b.Dim("batch", 1, 19), 3, 4)
		bias := b.Param("b", ir.T(ir.F32, 4, 3), frontend.Uniform(-1, 1))
		b.Output("y", x.Transpose(1, 2).Add(bias).Relu())
	}},
	{"first layer of a stacked state, elementwise", func(b *frontend.Builder) {
		batch := b.Dim("batch", 1, 19)
		x := b.Input("x", ir.F32, batch, 24)
		h0 := b.Input("h0", ir.F32, 3, batch, 24)
		b.Output("y", h0.Index(0, 0).Mul(x).Tanh())
	}},
	{"later layers of a stacked state, elementwise", func(b *frontend.Builder) {
		batch := b.Dim("batch", 1, 19)
		x := b.Input("x", ir.F32, batch, 24)
		h0 := b.Input("h0", ir.F32, 3, batch, 24)
		b.Output("y", h0.Index(0, 1).Mul(x).Add(h0.Index(0, 2)).Tanh())
		b.Output("z", h0.Narrow(0, 1, 2).Neg()) // two layers at once: 2·batch rows from batch on
	}},
	{"layers stacked into an output (h_n), f16", func(b *frontend.Builder) {
		batch := b.Dim("batch", 0, 19)
		x := b.Input("x", ir.F16, batch, 8)
		h0 := b.Input("h0", ir.F16, 2, batch, 8)
		b.Output("h_n", frontend.Stack(0, h0.Index(0, 1).Mul(x).Tanh(), h0.Index(0, 0).Add(x), x.Neg()))
	}},
	{"layer norm and softmax", func(b *frontend.Builder) {
		batch, seq := b.Dim("batch", 1, 4), b.Dim("seq", 2, 11)
		x := b.Input("x", ir.F32, batch, seq, 24)
		w := b.Param("w", ir.T(ir.F32, 24), frontend.Uniform(0.5, 1.5))
		bias := b.Param("b", ir.T(ir.F32, 24), frontend.Uniform(-1, 1))
		y := frontend.LayerNorm(x, []int{24}, w, bias, 1e-5)
		b.Output("ln", y)
		b.Output("sm", y.Softmax(-1))
		b.Output("rowsum", x.Sum(2))
	}},
	{"MLP (FFMA GEMM)", func(b *frontend.Builder) { mlp(b, ir.F32, 1, 150, 20) }},
	{"MLP (tensor-core GEMM)", func(b *frontend.Builder) { mlp(b, ir.F16, 3, 133, 20) }},
	{"MLP (GEMV, f32)", func(b *frontend.Builder) { mlp(b, ir.F32, 1, 8, 256) }},
	{"MLP (GEMV, f16)", func(b *frontend.Builder) { mlp(b, ir.F16, 2, 7, 256) }},
	{"MLP with empty batches (GEMM)", func(b *frontend.Builder) { mlp(b, ir.F32, 0, 9, 20) }},
	{"MLP with empty batches (GEMV)", func(b *frontend.Builder) { mlp(b, ir.F32, 0, 5, 256) }},
	{"softmax with empty batches", func(b *frontend.Builder) {
		b.Output("y", b.Input("x", ir.F32, b.Dim("batch", 0, 6), 33).Softmax(-1))
	}},
	{"batched matmuls over a symbolic batch", func(b *frontend.Builder) {
		batch := b.Dim("batch", 0, 7)
		for _, dt := range []ir.DType{ir.F32, ir.F16} {
			x, y := b.Input("x"+dt.String(), dt, batch, 6, 8), b.Input("y"+dt.String(), dt, batch, 8, 20)
			b.Output("xy"+dt.String(), x.Matmul(y).Relu())
		}
	}},
	{"batched matmuls over a symbolic batch and static heads read through views", func(b *frontend.Builder) {
		// Heads split from the rows' features, as nn.MultiheadAttention's scores over a symbolic
		// batch of static sequences: batch dims [batch, 2], rows the batch.
		batch := b.Dim("batch", 0, 7)
		for _, dt := range []ir.DType{ir.F32, ir.F16, ir.BF16} {
			heads := func(name string) *frontend.Tensor {
				return b.Input(name+dt.String(), dt, batch, 5, 8).View(-1, 5, 2, 4).Transpose(1, 2)
			}
			q, k := heads("q"), heads("k")
			b.Output("s"+dt.String(), q.Matmul(k.Transpose(2, 3)).Neg())
		}
	}},
	{"conv2d over a symbolic batch", func(b *frontend.Builder) { conv(b, ir.F32, 1) }},
	{"grouped f16 conv2d (tensor cores)", func(b *frontend.Builder) { conv(b, ir.F16, 2) }},
	{"adaptive average pooling (direct template: a constant operand)", func(b *frontend.Builder) { avgPool(b, ir.F32) }},
	{"f16 adaptive average pooling (direct template)", func(b *frontend.Builder) { avgPool(b, ir.F16) }},
	{"KV cache write over a symbolic batch (update template, in place)", func(b *frontend.Builder) {
		batch := b.Dim("batch", 1, 5)
		cache := b.Input("cache", ir.F32, batch, 2, 9, 4)
		x := b.Input("x", ir.F32, batch, 1, 8)
		pos := b.Input("pos", ir.I64, batch)
		b.Output("new_cache", cache.UpdateSlice(2, x.Reshape(-1, 1, 2, 4).Transpose(1, 2), pos))
	}},
}

// avgPool is a global average pooling (a product with a constant ones vector, which only the
// direct template takes) and relu over a symbolic batch from 0.
func avgPool(b *frontend.Builder, dt ir.DType) {
	img := b.Input("img", dt, b.Dim("n", 0, 7), 6, 16, 16)
	b.Output("mean", frontend.AdaptiveAvgPool2d(img, [2]int{1, 1}).Relu())
}

// conv is a conv2d of 4·groups output channels with bias and relu over a symbolic batch.
func conv(b *frontend.Builder, dt ir.DType, groups int) {
	img := b.Input("img", dt, b.Dim("n", 1, 5), 3*groups, 7, 7)
	w := b.Param("w", ir.T(dt, 4*groups, 3, 3, 3), frontend.Uniform(-1, 1))
	cb := b.Param("cb", ir.T(dt, 4*groups), frontend.Uniform(-1, 1))
	opt := frontend.Conv2dOptions{Padding: [2]int{1, 1}, Stride: [2]int{2, 1}, Groups: groups}
	b.Output("y", frontend.Conv2d(img, w, cb, opt).Relu())
}

// mlp is two linear layers with a bias and relu over a symbolic batch in [lo, hi], d features
// in, d+4 hidden (the GEMV template takes weights of at least gemv.MinWeight elements, and at
// most gemv.MaxM rows).
func mlp(b *frontend.Builder, dt ir.DType, lo, hi, d int) {
	x := b.Input("x", dt, b.Dim("batch", lo, hi), d)
	w1 := b.Param("w1", ir.T(dt, d+4, d), frontend.Uniform(-1, 1))
	b1 := b.Param("b1", ir.T(dt, d+4), frontend.Uniform(-1, 1))
	w2 := b.Param("w2", ir.T(dt, 5*d, d+4), frontend.Uniform(-1, 1))
	b.Output("y", frontend.Linear(frontend.Linear(x, w1, b1).Relu(), w2, nil))
}

func TestSymbolicRowKernels(t *testing.T) {
	for _, tc := range rowModels {
		t.Run(tc.name, func(t *testing.T) {
			g, err := frontend.Build("m", tc.build)
			if err != nil {
				t.Fatal(err)
			}
			checkRows(t, g)
		})
	}
}

// checkRows builds g once and runs it on the memchecked simulator at each dim's bounds, 1 and
// primes in range: equal to the reference interpreter at those sizes. The simulator's memcheck
// reports reads of memory no run wrote, so a kernel reading rows beyond the run's fails the
// first run at smaller sizes.
func checkRows(t *testing.T, g *ir.Graph) { checkRowsWith(t, g, compiler.Options{}, nil) }

// checkRowsWith is checkRows building with opt; also, if not nil, sees each run's sizes, inputs,
// parameters and outputs.
func checkRowsWith(t *testing.T, g *ir.Graph, opt compiler.Options, also func(env map[string]int64, inputs, params, outputs map[string]*tensor.Tensor)) {
	t.Helper()
	// Sizes in increasing order: at each run, the buffers' rows beyond it have never been
	// written, so memcheck reports any read of them.
	var envs []map[string]int64
	for i := range 5 {
		env := map[string]int64{}
		for _, d := range g.Dims {
			s := sizesToRun(d)
			slices.Sort(s)
			s = slices.Compact(s)
			env[d.Name] = int64(s[min(i, len(s)-1)])
		}
		envs = append(envs, env)
	}
	checkRowsAt(t, g, opt, envs, 64, also)
}

// checkRowsAt is checkRowsWith at the sizes of envs, in their order, within ulps of the
// reference.
func checkRowsAt(t *testing.T, g *ir.Graph, opt compiler.Options, envs []map[string]int64, ulps int, also func(env map[string]int64, inputs, params, outputs map[string]*tensor.Tensor)) {
	t.Helper()
	res, err := compiler.Compile(g, opt)
	if err != nil {
		t.Fatal(err)
	}
	plan := res.Artifact.Plan
	if plan.Version != 4 {
		t.Fatalf("plan version %d", plan.Version)
	}
	symbolic := 0
	for _, k := range plan.Kernels {
		if slices.ContainsFunc(k.Args, func(a artifact.Arg) bool { return a.Kind == artifact.ArgSize }) {
			symbolic++
		}
	}
	if symbolic == 0 {
		t.Fatal("no kernel is symbolic")
	}
	p, err := executor.Load(simdev.New(simdev.Options{}), res.Artifact)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	atBound := map[string]int64{}
	for _, d := range g.Dims {
		atBound[d.Name] = int64(d.Hi)
	}
	bg, err := ops.Instantiate(g, atBound)
	if err != nil {
		t.Fatal(err)
	}
	_, params, err := tensor.SeededValues(bg, 7)
	if err != nil {
		t.Fatal(err)
	}
	paramcheck.NonZero(t, params)
	if err := p.SetParams(params); err != nil {
		t.Fatal(err)
	}
	bound := map[string][3]int{}
	for _, k := range plan.Kernels {
		bound[k.Name] = k.Grid
	}
	for _, env := range envs {
		st, err := ops.Instantiate(g, env)
		if err != nil {
			t.Fatal(err)
		}
		inputs, _, err := tensor.SeededValues(st, uint64(len(envs)))
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Run(st, inputs, params)
		if err != nil {
			t.Fatalf("sizes %v: reference: %v", env, err)
		}
		got, err := p.Run(inputs)
		if err != nil {
			t.Fatalf("sizes %v: %v", env, err)
		}
		compareOutputs(t, env, want, got.Outputs, ulps)
		if also != nil {
			also(env, inputs, params, got.Outputs)
		}
		for _, k := range got.Kernels {
			for a := range 3 {
				if k.Grid[a] < 1 || k.Grid[a] > bound[k.Name][a] {
					t.Errorf("sizes %v: kernel %s grid %v, at the bound %v", env, k.Name, k.Grid, bound[k.Name])
				}
			}
		}
	}
}

// A kernel whose rows are not independent, or whose symbolic dims do not lead its shapes, is
// refused naming the kernel, the value and why (a concat along the rows runs as a copy, fused
// with elementwise ops, of a literal tensor, or beside a reduction as a kernel of its own:
// symconcat_test.go, symconcat_fused_test.go, symconcat_reduce_test.go).
func TestSymbolicRowsRefused(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"transpose moving the symbolic dim", "  %0 = transpose(%x) {perm=[1,0]} : f32[2,batch]\n  %1 = neg(%0) : f32[2,batch]\n  output y = %1\n",
			"input %x : f32[batch,2] has batch rows, %0 = transpose(%x) {perm=[1,0]} : f32[2,batch] has 2*batch"},
		{"reshape changing the rows", "  %0 = reshape(%x) {shape=[32]} : f32[2*batch]\n  %1 = neg(%0) : f32[2*batch]\n  %2 = add(%1, %1) : f32[2*batch]\n  %3 = reshape(%2) {shape=[16,2]} : f32[batch,2]\n  %4 = mul(%3, %x) : f32[batch,2]\n  output y = %4\n",
			"has batch rows, %0 = reshape(%x) {shape=[32]} : f32[2*batch] has 2*batch"},
		{"bind-time sum over a broadcast's rows", "  param %b : f32[2] {init=\"ones\"}\n  %0 = broadcast_in_dim(%b) {shape=[16,2], dims=[1]} : f32[batch,2]\n  %1 = reduce_sum(%0) {axes=[0]} : f32[2]\n  %2 = broadcast_in_dim(%1) {shape=[16,2], dims=[1]} : f32[batch,2]\n  %3 = add(%x, %2) : f32[batch,2]\n  output y = %3\n",
			"over static buffers: %1 = reduce_sum(%0) {axes=[0]} : f32[2] reduces over a symbolic dim"},
		{"matmul contracting the rows after a static dim", "  %0 = dot_general(%x, %x) {lhs_contract=[1,0], rhs_contract=[1,0]} : f32[]\n  output y = %0\n",
			"%0 = dot_general(%x, %x) {lhs_contract=[1,0], rhs_contract=[1,0]} : f32[] contracts a symbolic dim"},
		{"batched product whose batch dims start after the rows", "  input %h : f32[batch,2,3]\n" +
			"  %0 = dot_general(%h, %h) {lhs_batch=[1,0], lhs_contract=[2], rhs_batch=[1,0], rhs_contract=[2]} : f32[2,batch]\n  output y = %0\n",
			"input %h : f32[batch,2,3] has batch rows, %0 = dot_general(%h, %h) {lhs_batch=[1,0], lhs_contract=[2], rhs_batch=[1,0], rhs_contract=[2]} : f32[2,batch] has 2*batch"},
		{"outer product of symbolic rows", "  %0 = dot_general(%x, %x) {lhs_contract=[1], rhs_contract=[1]} : f32[batch,batch]\n  output y = %0\n",
			"has batch rows, %0 = dot_general(%x, %x) {lhs_contract=[1], rhs_contract=[1]} : f32[batch,batch] has batch*batch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkRefused(t, "graph s {\n  dims { batch in [1,16] }\n  input %x : f32[batch,2]\n"+tc.body+"}\n", tc.want)
		})
	}
}

// A kernel that reads or writes a layer of a stacked buffer past the first is refused when its
// template does not offset buffers (a contraction outside a persistent kernel), or when the
// layer's offset would not keep the bound's vector groups aligned (rows of 12 bytes).
func TestSymbolicLayersRefused(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"product of a later layer", "  input %h : f32[2,batch,8]\n  param %w : f32[8,8] {init=\"uniform\"}\n" +
			"  %0 = slice(%h) {start=[1,0,0], limit=[2,16,8]} : f32[1,batch,8]\n" +
			"  %1 = dot_general(%0, %w) {lhs_contract=[2], rhs_contract=[0]} : f32[1,batch,8]\n  output y = %1\n",
			"%0 = slice(%h) {limit=[2,16,8], start=[1,0,0]} : f32[1,batch,8] reads or writes a layer of a stacked buffer at an offset of the run's rows"},
		{"12-byte rows", "  input %h : f32[2,batch,3]\n  %0 = slice(%h) {start=[1,0,0], limit=[2,16,3]} : f32[1,batch,3]\n  %1 = neg(%0) : f32[1,batch,3]\n  output y = %1\n",
			"input %h : f32[2,batch,3] has 2*batch rows, %0 = slice(%h) {limit=[2,16,3], start=[1,0,0]} : f32[1,batch,3] has batch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkRefused(t, "graph s {\n  dims { batch in [1,16] }\n"+tc.body+"}\n", tc.want)
		})
	}
}

// compareOutputs checks each output against the reference's within the dtype's tolerance scaled
// by ulps (tolerance.Tolerance), NaN matching NaN.
func compareOutputs[E any](t *testing.T, env E, want, got map[string]*tensor.Tensor, ulps int) {
	t.Helper()
	for name, w := range want {
		o := got[name]
		if o == nil || !o.Type.Equal(w.Type) {
			t.Fatalf("sizes %v: output %s = %v, want %s", env, name, o, w.Type)
		}
		rel, abs := tolerance.Tolerance(w.Type.DType, false, ulps)
		for i := range w.Len() {
			if a, b := o.At(i), w.At(i); !(math.IsNaN(a) && math.IsNaN(b)) && !tolerance.Within(a, b, rel, abs) {
				t.Fatalf("sizes %v: output %s[%d] = %v, the reference's is %v", env, name, i, a, b)
			}
		}
	}
}

// Random chains over rows: elementwise ops, a static bias broadcast along the rows, and row
// reductions broadcast back along the row (softmax's shape). One build each runs at every size.
func TestSymbolicRandomRows(t *testing.T) {
	unary := []string{"neg", "abs", "exp", "tanh", "relu"}
	binary := []string{"add", "sub", "mul", "max"}
	rng := rand.New(rand.NewPCG(27, 2))
	for seed := range 6 {
		var sb strings.Builder
		lo, hi, d := 1+rng.IntN(3), 5+rng.IntN(40), 1+rng.IntN(40)
		typ, row := fmt.Sprintf("f32[n,%d]", d), "f32[n]"
		fmt.Fprintf(&sb, "graph r%d {\n  dims { n in [%d,%d] }\n  input %%a : %s\n  param %%b : f32[%d] {high=1.0, init=\"uniform\", low=-1.0}\n", seed, lo, hi, typ, d)
		fmt.Fprintf(&sb, "  %%bb = broadcast_in_dim(%%b) {shape=[%d,%d], dims=[1]} : %s\n", hi, d, typ)
		vals := []string{"%a", "%bb"}
		for i := range 3 + rng.IntN(6) {
			x, y := vals[rng.IntN(len(vals))], vals[rng.IntN(len(vals))]
			switch rng.IntN(4) {
			case 0:
				fmt.Fprintf(&sb, "  %%%d = %s(%s) : %s\n", i, unary[rng.IntN(len(unary))], x, typ)
			case 1, 2:
				fmt.Fprintf(&sb, "  %%%d = %s(%s, %s) : %s\n", i, binary[rng.IntN(len(binary))], x, y, typ)
			default:
				red := []string{"reduce_max", "reduce_sum"}[rng.IntN(2)]
				fmt.Fprintf(&sb, "  %%r%d = %s(%s) {axes=[1]} : %s\n", i, red, x, row)
				fmt.Fprintf(&sb, "  %%s%d = broadcast_in_dim(%%r%d) {shape=[%d,%d], dims=[0]} : %s\n", i, i, hi, d, typ)
				fmt.Fprintf(&sb, "  %%%d = sub(%s, %%s%d) : %s\n", i, x, i, typ)
			}
			vals = append(vals, fmt.Sprintf("%%%d", i))
		}
		fmt.Fprintf(&sb, "  output y = %s\n}\n", vals[len(vals)-1])
		checkGenerated(t, fmt.Sprint(seed), sb.String(), checkRows)
	}
}

// checkGenerated runs check on the generated graph src as subtest name.
func checkGenerated(t *testing.T, name, src string, check func(*testing.T, *ir.Graph)) {
	t.Run(name, func(t *testing.T) {
		g, err := ir.Parse("r.gir", []byte(src))
		if err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		check(t, g)
	})
}
