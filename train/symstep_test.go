package train

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/codegen/backend"
	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

type symStepCase struct {
	name    string
	model   func(b *frontend.Builder)
	opt     Optimizer
	refused string // the compiler's refusal, if it refuses the step
}

// symSteps are models over a symbolic batch in [1, 8] whose output loss their train step
// differentiates.
var symSteps = []symStepCase{
	{"linear, sum of squares, SGD", func(b *frontend.Builder) {
		x, y := b.Input("x", ir.F32, b.Batch(8), 6), b.Input("t", ir.F32, b.Batch(8), 3)
		w := b.Param("w", ir.T(ir.F32, 3, 6), frontend.Uniform(-1, 1))
		bias := b.Param("b", ir.T(ir.F32, 3), frontend.Uniform(-1, 1))
		d := frontend.Linear(x, w, bias).Sub(y)
		b.Output(DefaultLoss, d.Mul(d).Sum())
	}, &SGD{LR: 0.1}, ""},
	// A parameter whose shape is the activations' at the bound: its gradients stay static, and
	// the compiler refuses the kernel the passes fuse its update into (a fold spread over the
	// parameter's static rows), rather than write the run's rows only.
	{"a parameter shaped like the bound's rows, SGD", func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, b.Batch(8), 3)
		p := b.Param("p", ir.T(ir.F32, 8, 3), frontend.Uniform(-1, 1))
		y := x.Mul(p.Sum(0).Reshape(1, 3)).Add(p.Mean(0).Reshape(1, 3))
		b.Output(DefaultLoss, y.Mul(y).Mean())
	}, &SGD{LR: 0.1}, "output new.p f32[8,3] has static sizes the shape of a folded operand at the bound"},
	{"MLP, mean squared error, Adam", func(b *frontend.Builder) {
		x, y := b.Input("x", ir.F32, b.Batch(8), 6), b.Input("t", ir.F32, b.Batch(8), 3)
		w1 := b.Param("w1", ir.T(ir.F32, 16, 6), frontend.Uniform(-1, 1))
		b1 := b.Param("b1", ir.T(ir.F32, 16), frontend.Uniform(-1, 1))
		w2 := b.Param("w2", ir.T(ir.F32, 3, 16), frontend.Uniform(-1, 1))
		d := frontend.Linear(frontend.Linear(x, w1, b1).Relu(), w2, nil).Sub(y)
		b.Output(DefaultLoss, d.Mul(d).Mean())
	}, NewAdam(), ""},
	{"MLP, log-softmax cross-entropy mean over the batch, SGD with momentum", func(b *frontend.Builder) {
		x, y := b.Input("x", ir.F32, b.Batch(8), 10), b.Input("onehot", ir.F32, b.Batch(8), 4)
		w1 := b.Param("w1", ir.T(ir.F32, 12, 10), frontend.Uniform(-1, 1))
		b1 := b.Param("b1", ir.T(ir.F32, 12), frontend.Uniform(-1, 1))
		w2 := b.Param("w2", ir.T(ir.F32, 4, 12), frontend.Uniform(-1, 1))
		b2 := b.Param("b2", ir.T(ir.F32, 4), frontend.Uniform(-1, 1))
		logits := frontend.Linear(frontend.Linear(x, w1, b1).Tanh(), w2, b2)
		b.Output(DefaultLoss, logits.LogSoftmax(1).Mul(y).Sum(1).Neg().Mean(0))
	}, &SGD{LR: 0.05, Momentum: 0.9}, ""},
	// Attention's forward writes the rows' log-sum-exp and dq, dk and dv recompute the
	// probabilities from it, all at the run's batch (codegen/ptx's symattn.go); the weights'
	// gradients fold the batch's rows.
	{"causal self-attention over [batch, 1, 5, 8], mean squared error, SGD", func(b *frontend.Builder) {
		n := b.Batch(8)
		x, y := b.Input("x", ir.F32, n, 1, 5, 8), b.Input("t", ir.F32, n, 1, 5, 8)
		proj := func(name string) *frontend.Tensor {
			return frontend.Linear(x, b.Param(name, ir.T(ir.F32, 8, 8), frontend.Uniform(-0.5, 0.5)), nil)
		}
		o := frontend.ScaledDotProductAttention(proj("wq"), proj("wk"), proj("wv"), true)
		b.Output(DefaultLoss, frontend.MSELoss(o, y))
	}, &SGD{LR: 0.5}, ""},
	// With heads split from the features, the weights' gradients read dq, dk and dv merged back
	// through views, a fold the GEMM template does not take yet.
	{"causal self-attention (2 heads), mean squared error, SGD", func(b *frontend.Builder) {
		n := b.Batch(8)
		x, y := b.Input("x", ir.F32, n, 5, 8), b.Input("t", ir.F32, n, 5, 8)
		heads := func(name string) *frontend.Tensor {
			w := b.Param(name, ir.T(ir.F32, 8, 8), frontend.Uniform(-0.5, 0.5))
			return frontend.Linear(x, w, nil).Reshape(n, 5, 2, 4).Transpose(1, 2)
		}
		o := frontend.ScaledDotProductAttention(heads("wq"), heads("wk"), heads("wv"), true)
		b.Output(DefaultLoss, frontend.MSELoss(o.Transpose(1, 2).Reshape(n, 5, 8), y))
	}, &SGD{LR: 0.5}, ""},
	// BatchNorm in training mode: the batch's statistics and their gradients fold [N, C, H, W]
	// over [0, 2, 3] at the run's N (codegen/ptx's symfold_scatter.go), the running variance is
	// unbiased over the run's N·H·W.
	{"conv, batch norm (training), relu, mean squared error, SGD with momentum", func(b *frontend.Builder) {
		n := b.Batch(8)
		x, y := b.Input("x", ir.F32, n, 2, 5, 5), b.Input("t", ir.F32, n, 4, 5, 5)
		k := make([]float64, 4*2*3*3)
		for i := range k {
			k[i] = float64(i%7-3) / 8
		}
		w := b.Tensor(k, frontend.F32, 4, 2, 3, 3) // fixed: a conv's weight gradient over the batch is refused (below)
		h := frontend.Conv2d(x, w, nil, frontend.Conv2dOptions{Padding: [2]int{1, 1}})
		h = nn.NewBatchNorm2d(b, "bn", 4).Forward(h).Relu()
		b.Output(DefaultLoss, frontend.MSELoss(h, y))
	}, &SGD{LR: 0.1, Momentum: 0.9}, ""},
	// Max pooling's backward routes dy over the run's batch (its mask of taken outputs typed
	// over the batch, as dy is).
	{"batch norm (training), relu, max pooling, mean squared error, SGD", func(b *frontend.Builder) {
		n := b.Batch(8)
		x, y := b.Input("x", ir.F32, n, 3, 4, 4), b.Input("t", ir.F32, n, 3, 2, 2)
		h := nn.NewBatchNorm2d(b, "bn", 3).Forward(x).Relu()
		b.Output(DefaultLoss, frontend.MSELoss(frontend.MaxPool2d(h, [2]int{2, 2}, frontend.PoolOptions{}), y))
	}, &SGD{LR: 0.1}, ""},
	// Dropout's mask over a symbolic batch: philox_uniform typed over the batch, element i a
	// function of its row-major index alone, so row r drops what the reference drops at the
	// run's batch (the step's rng.key input seeded per batch).
	{"MLP, dropout, mean squared error, SGD", func(b *frontend.Builder) {
		x, y := b.Input("x", ir.F32, b.Batch(8), 6), b.Input("t", ir.F32, b.Batch(8), 3)
		w1 := b.Param("w1", ir.T(ir.F32, 16, 6), frontend.Uniform(-1, 1))
		w2 := b.Param("w2", ir.T(ir.F32, 3, 16), frontend.Uniform(-1, 1))
		h := nn.Dropout{P: 0.25}.Forward(frontend.Linear(x, w1, nil).Relu())
		b.Output(DefaultLoss, frontend.MSELoss(frontend.Linear(h, w2, nil), y))
	}, &SGD{LR: 0.1}, ""},
	{"batch norm (training), dropout over [batch, 3, 4, 4], mean squared error, SGD", func(b *frontend.Builder) {
		n := b.Batch(8)
		x, y := b.Input("x", ir.F32, n, 3, 4, 4), b.Input("t", ir.F32, n, 3, 4, 4)
		h := nn.Dropout{P: 0.5}.Forward(nn.NewBatchNorm2d(b, "bn", 3).Forward(x))
		b.Output(DefaultLoss, frontend.MSELoss(h, y))
	}, &SGD{LR: 0.1}, ""},
	// A conv's weight gradient contracts the batch as its input channels (x viewed as
	// [C, batch, H, W] convolved with dy's [O, batch, OH, OW]): the direct template folds the
	// run's taps (codegen/ptx's symconv.go), here a stage of a persistent kernel.
	{"conv with a trained weight, batch norm (training), SGD", func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, b.Batch(8), 2, 5, 5)
		w := b.Param("w", ir.T(ir.F32, 4, 2, 3, 3), frontend.Uniform(-0.5, 0.5))
		h := nn.NewBatchNorm2d(b, "bn", 4).Forward(frontend.Conv2d(x, w, nil, frontend.Conv2dOptions{Padding: [2]int{1, 1}}))
		b.Output(DefaultLoss, h.Mul(h).Mean())
	}, &SGD{LR: 0.1}, ""},
	// Two trained convolutions, the second strided and grouped (x viewed as [C/G, G·batch, H, W]),
	// each weight gradient a kernel of its own, and dx of the second over the batch.
	{"two trained convs (stride 2, 2 groups), relu, mean squared error, SGD with momentum", func(b *frontend.Builder) {
		n := b.Batch(8)
		x, y := b.Input("x", ir.F32, n, 3, 12, 12), b.Input("t", ir.F32, n, 8, 6, 6)
		w1 := b.Param("w1", ir.T(ir.F32, 8, 3, 3, 3), frontend.Uniform(-0.5, 0.5))
		w2 := b.Param("w2", ir.T(ir.F32, 8, 4, 3, 3), frontend.Uniform(-0.5, 0.5))
		h := frontend.Conv2d(x, w1, nil, frontend.Conv2dOptions{Padding: [2]int{1, 1}}).Relu()
		h = frontend.Conv2d(h, w2, nil, frontend.Conv2dOptions{Padding: [2]int{1, 1}, Stride: [2]int{2, 2}, Groups: 2})
		b.Output(DefaultLoss, frontend.MSELoss(h, y))
	}, &SGD{LR: 0.05, Momentum: 0.9}, ""},
}

// A train step over a symbolic batch builds once and runs on the memchecked simulator at
// batches 1, 5 and 8 (smallest first): its new parameters and state equal, within tolerance,
// the reference interpreter's step at that batch and the static build's of the step at that
// batch. One artifact takes every batch: the last partial batch of an epoch needs no padding.
func TestSymbolicStep(t *testing.T) {
	for _, tc := range symSteps {
		t.Run(tc.name, func(t *testing.T) {
			fwd, err := frontend.Build("m", tc.model, frontend.WithMaxBatch(8), frontend.WithTraining())
			if err != nil {
				t.Fatal(err)
			}
			s, err := StepFromGraph(fwd, tc.opt, Options{})
			if err != nil && tc.refused != "" && strings.Contains(err.Error(), tc.refused) {
				return // refused building the step
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Graph.Dims) != 1 {
				t.Fatalf("the step has dims %v", s.Graph.Dims)
			}
			// A model with attention: its forward forms the attention op over the symbolic batch
			// (passes.FormAttention), whose backward is attention_grad (the compiler's passes have
			// it read the forward's LSE).
			if strings.Contains(tc.name, "attention") && !slices.ContainsFunc(s.Graph.Values, func(v *ir.Value) bool {
				return v.Op == ops.AttentionGradOp
			}) {
				t.Fatalf("the step differentiates attention without attention_grad:\n%s", s.Graph)
			}
			if tc.refused != "" {
				_, err := compiler.Compile(s.Graph, StepCompilerOptions(compiler.Options{}))
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("Compile = %v, want %q", err, tc.refused)
				}
				return
			}
			checkSymbolicStep(t, s, []int64{1, 5, 8}, nil)
		})
	}
}

// checkSymbolicStep builds the step s over a symbolic batch once and runs it on the memchecked
// simulator at each of batches (smallest first), with seeded inputs that set, when not nil,
// overrides: its new parameters and state equal, within tolerance, the reference interpreter's
// step at that batch and the static build's of the step at that batch (NaN where the reference
// has NaN; an AMP step's tolerance its dtype's).
func checkSymbolicStep(t *testing.T, s *StepGraph, batches []int64, set func(n int64, inputs map[string]*tensor.Tensor)) {
	t.Helper()
	envs := make([]map[string]int64, len(batches))
	for i, n := range batches {
		envs[i] = map[string]int64{frontend.BatchDim: n}
	}
	checkSymbolicStepAt(t, s, envs, func(env map[string]int64, inputs map[string]*tensor.Tensor) {
		if set != nil {
			set(env[frontend.BatchDim], inputs)
		}
	})
}

// checkSymbolicStepAt is checkSymbolicStep over any dims, at the sizes of envs in their order
// (the inputs seeded by the sizes in the dims' order).
func checkSymbolicStepAt(t *testing.T, s *StepGraph, envs []map[string]int64, set func(env map[string]int64, inputs map[string]*tensor.Tensor)) {
	t.Helper()
	p := loadSim(t, s.Graph)
	params, state := boundParams(t, s)
	if err := p.SetParams(params); err != nil {
		t.Fatal(err)
	}
	for _, env := range envs {
		seed := uint64(0)
		for _, d := range s.Graph.Dims {
			seed = seed*1000 + uint64(env[d.Name])
		}
		st, err := ops.Instantiate(s.Graph, env)
		if err != nil {
			t.Fatal(err)
		}
		inputs, _, err := tensor.SeededValues(st, seed)
		if err != nil {
			t.Fatal(err)
		}
		for name, v := range state {
			if _, ok := inputs[name]; ok {
				inputs[name] = v
			}
		}
		if set != nil {
			set(env, inputs)
		}
		want, err := ref.Run(st, inputs, params)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Run(inputs)
		if err != nil {
			t.Fatalf("sizes %v: %v", env, err)
		}
		sp := loadSim(t, st)
		if err := sp.SetParams(params); err != nil {
			t.Fatal(err)
		}
		static, err := sp.Run(inputs)
		if err != nil {
			t.Fatalf("static build at sizes %v: %v", env, err)
		}
		for name, w := range want {
			for what, o := range map[string]*tensor.Tensor{"symbolic build": got.Outputs[name], "static build": static.Outputs[name]} {
				if o == nil || !o.Type.Equal(w.Type) {
					t.Fatalf("sizes %v: %s's %s = %v, want %s", env, what, name, o, w.Type)
				}
				dt := w.Type.DType // an AMP step's f32 values computed in its dtype: that dtype's
				if amp, ok := ir.ParseDType(s.AMP); ok && dt == ir.F32 {
					dt = amp
				}
				rel, abs := tolerance.Tolerance(dt, false, 256)
				for i := range w.Len() {
					if g, r := o.At(i), w.At(i); !tolerance.Within(g, r, rel, abs) && !(math.IsNaN(g) && math.IsNaN(r)) {
						t.Fatalf("sizes %v: %s's %s[%d] = %v, the reference's %v", env, what, name, i, g, r)
					}
				}
			}
		}
	}
}

// loadSim compiles the step graph g as a step and loads it on a memchecked simulator.
func loadSim(t *testing.T, g *ir.Graph) *executor.Program {
	t.Helper()
	res, err := compiler.Compile(g, StepCompilerOptions(compiler.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	p, err := executor.Load(simdev.New(simdev.Options{}), res.Artifact)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// The NVVM producer builds the attention steps over a symbolic batch too, every kernel its own
// entry: its attention forward writing the LSE, dq, dk and dv on CUDA cores at symbolic sizes
// (symattn_bwd.go) and, with 2 heads, the weights' gradients folding the rows through views
// (symfold_view.go); each step runs at batches 1, 5 and the bound within tolerance of the
// reference's and bit for bit codegen/ptx's build.
func TestSymbolicStepNVVM(t *testing.T) {
	lib := libnvvm.Require(t)
	nv, err := backend.New("nvvm", lib.Path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range symSteps {
		if !strings.HasPrefix(tc.name, "causal self-attention") {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			fwd, err := frontend.Build("m", tc.model, frontend.WithMaxBatch(8))
			if err != nil {
				t.Fatal(err)
			}
			s, err := StepFromGraph(fwd, tc.opt, Options{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := compiler.Compile(s.Graph, StepCompilerOptions(compiler.Options{Producer: nv}))
			if err != nil {
				t.Fatal(err)
			}
			attn, grads := 0, 0
			for _, k := range res.Artifact.Plan.Kernels {
				if strings.Contains(k.Name, "attention") {
					attn++
					if strings.Contains(k.Name, "grad") {
						grads++
					}
				}
			}
			if attn < 3 || grads == attn {
				t.Fatalf("%d attention kernels, %d of them the backward's; want the forward and the backward's", attn, grads)
			}
			folds := 0 // weight gradients folding the rows through views: one block along z, the batch's value
			for _, k := range res.Artifact.Plan.Kernels {
				if k.Producer == "ptx" {
					t.Errorf("kernel %s: codegen/ptx's entry (%v)", k.Name, k.Notes)
				}
				if k.Work != nil && k.Work.Axis == 2 && slices.ContainsFunc(k.Args, func(a artifact.Arg) bool { return a.Kind == artifact.ArgSize && a.Expr == frontend.BatchDim }) {
					folds++
				}
			}
			if want := map[bool]int{true: 3}[strings.Contains(tc.name, "2 heads")]; folds != want {
				t.Errorf("%d weight gradients through views, want %d", folds, want)
			}
			pres, err := compiler.Compile(s.Graph, StepCompilerOptions(compiler.Options{}))
			if err != nil {
				t.Fatal(err)
			}
			checkStepRuns(t, s, res, []int64{1, 5, 8}, pres) // symstep_conv_test.go
		})
	}
}
