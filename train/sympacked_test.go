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
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// nn.TransformerEncoderLayer trained over variable-length sequences: both batch and seq are
// symbolic, so the gradient of its packed, biased in-projection sums (the bias) and concatenates
// (the packed weight's, as pads added) the heads' gradients read through the view that merges
// them, [batch, h, seq, d] transposed to [batch, seq, h, d], which moves the rows
// (docs/dynamic.md, "Folds through views"). Dropout 0.1 on its three branches draws its masks
// over the rows batch·seq; on its attention weights too (the fourth), attention is unfused: the
// scores [batch, 2, seq, seq] have a symbolic free dim on the right and their softmax reduces
// the symbolic seq. One build runs at (batch, seq) pairs that are 1, primes and the bounds,
// smallest first, each within tolerance of the reference interpreter's step and of the static
// build's at those sizes. With three dropouts the two builds agree bit for bit; with four they
// differ in the last bits: the static build runs the scores' products and what follows them in
// persistent kernels (5 against the symbolic build's 1), which a product with a symbolic free
// dim on the right is not (passes/persist_symfree.go), so the bias gradients fold other kernels'
// groupings. The NVVM producer builds both with its own templates, within tolerance of codegen/ptx's build.
func TestSymbolicTransformerEncoderLayerStep(t *testing.T) {
	envs := []map[string]int64{
		{"batch": 1, "seq": 1}, {"batch": 1, "seq": 5}, {"batch": 3, "seq": 2}, {"batch": 2, "seq": 7}, {"batch": 4, "seq": 7},
	}
	for _, tc := range []struct {
		name     string
		attnDrop float64 // the dropout on the attention weights
		amp      string  // the step's autocast dtype
		masks    []string
	}{
		{"three dropouts", 0, "", []string{"f32[batch,seq,8]", "f32[batch,seq,16]", "f32[batch,seq,8]"}},
		{"four dropouts, the attention weights' included", 0.1, "",
			[]string{"f32[batch,2,seq,seq]", "f32[batch,seq,8]", "f32[batch,seq,16]", "f32[batch,seq,8]"}},
		// Under autocast the heads are split and merged in bf16: autocast casts the packed
		// projection before the views that move its rows and casts attention's results back
		// after them (passes/autocast_symviews.go).
		{"three dropouts, bf16 autocast", 0, "bf16", []string{"f32[batch,seq,8]", "f32[batch,seq,16]", "f32[batch,seq,8]"}},
		{"four dropouts, bf16 autocast", 0.1, "bf16",
			[]string{"f32[batch,2,seq,seq]", "f32[batch,seq,8]", "f32[batch,seq,16]", "f32[batch,seq,8]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := func(b *frontend.Builder) {
				n, s := b.Dim("batch", 1, 4), b.Dim("seq", 1, 7)
				x, y := b.Input("x", ir.F32, n, s, 8), b.Input("t", ir.F32, n, s, 8)
				l := nn.NewTransformerEncoderLayer(b, "enc", 8, 2, nn.TransformerEncoderLayerOptions{DimFeedforward: 16, Dropout: 0.1, BatchFirst: true})
				l.SelfAttn.Dropout = tc.attnDrop
				b.Output(DefaultLoss, frontend.MSELoss(l.Forward(x), y))
			}
			o := Options{}
			if tc.amp != "" {
				o = Options{AMP: tc.amp, LossScale: &LossScale{Disabled: true}}
			}
			s := dropoutStepWith(t, model, 0, &SGD{LR: 0.1}, o, tc.masks)
			if len(s.Graph.Dims) != 2 {
				t.Fatalf("the step has dims %v", s.Graph.Dims)
			}
			if res, err := passes.Run(s.Graph, passes.Options{ParamsChangeEveryRun: true}); err != nil {
				t.Fatal(err)
			} else { // docs/perf.md's numbers (go test ./train -run TestSymbolicTransformerEncoderLayerStep -v)
				st := res.Stats
				t.Logf("AMP %q: %d kernels, %d DRAM bytes, arena %d bytes, %.1f µs modeled at the bound", tc.amp, st.Kernels, st.DRAMBytes, st.ArenaBytes, st.ModeledTimeUS)
			}
			t.Run("nvvm", func(t *testing.T) {
				// Every kernel nvvm's own: the unfused attention's batched products on tensor
				// cores over a symbolic seq too (codegen/nvvm's symcontract_mma.go).
				checkNVVMStep(t, s, "", []map[string]int64{{"batch": 1, "seq": 1}, {"batch": 3, "seq": 5}, {"batch": 4, "seq": 7}})
			})
			var runs []stepRun
			checkSymbolicStepAt(t, s, envs, func(env map[string]int64, inputs map[string]*tensor.Tensor) {
				runs = append(runs, stepRun{env, inputs})
			})
			if tc.attnDrop == 0 {
				checkStaticBits(t, s, runs)
			}
		})
	}
}

// checkStaticBits runs step s's symbolic build and its static build at each run's sizes on the
// run's inputs, with the bound's seeded parameters as checkSymbolicStepAt sets them, and wants
// their outputs equal bit for bit.
func checkStaticBits(t *testing.T, s *StepGraph, runs []stepRun) {
	t.Helper()
	params, _ := boundParams(t, s)
	p := loadSim(t, s.Graph)
	if err := p.SetParams(params); err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		env, inputs := r.env, r.inputs
		st, err := ops.Instantiate(s.Graph, env)
		if err != nil {
			t.Fatal(err)
		}
		sp := loadSim(t, st)
		if err := sp.SetParams(params); err != nil {
			t.Fatal(err)
		}
		got, err := p.Run(inputs)
		if err != nil {
			t.Fatalf("sizes %v: %v", env, err)
		}
		want, err := sp.Run(inputs)
		if err != nil {
			t.Fatalf("static build at sizes %v: %v", env, err)
		}
		for name, w := range want.Outputs {
			o := got.Outputs[name]
			for i := range w.Len() {
				if math.Float64bits(o.At(i)) != math.Float64bits(w.At(i)) {
					t.Fatalf("sizes %v: %s[%d] = %v, the static build's %v", env, name, i, o.At(i), w.At(i))
				}
			}
		}
	}
}

// stepRun is one run's sizes and inputs.
type stepRun struct {
	env    map[string]int64
	inputs map[string]*tensor.Tensor
}

// checkNVVMStep builds step s with the NVVM producer: every entry is its own (the bias
// gradients through the views merging the heads are codegen/nvvm's symfold_reduce_view.go) but
// for those codegen/nvvm's fallback.go names borrows, at least one of them if borrows is set; at
// least one a column reduction taking seq's value beside its count, and the build runs at envs
// within tolerance of codegen/ptx's build on the same inputs.
func checkNVVMStep(t *testing.T, s *StepGraph, borrows string, envs []map[string]int64) {
	lib := libnvvm.Require(t)
	nv, err := backend.New("nvvm", lib.Path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(s.Graph, StepCompilerOptions(compiler.Options{Producer: nv}))
	if err != nil {
		t.Fatal(err)
	}
	views, borrowed := 0, 0
	for _, k := range res.Artifact.Plan.Kernels {
		if k.Producer == "ptx" {
			if borrows == "" || !strings.Contains(strings.Join(k.Notes, "\n"), "the NVVM producer has no "+borrows) {
				t.Errorf("kernel %s: codegen/ptx's entry (%v)", k.Name, k.Notes)
			}
			borrowed++
		}
		takesSeq := slices.ContainsFunc(k.Args, func(a artifact.Arg) bool { return a.Kind == artifact.ArgSize && a.Expr == "seq" })
		if takesSeq && strings.Contains(k.Ops, "reduce_sum") && !strings.Contains(k.Ops, "dot_general") && k.Work != nil && k.Work.Axis == 2 {
			views++
		}
	}
	if views == 0 {
		t.Error("no column reduction reads views at the run's sizes; the in-projection's bias gradient does")
	}
	if borrows != "" && borrowed == 0 {
		t.Errorf("no kernel borrows codegen/ptx's %s", borrows)
	}
	p, err := executor.Load(simdev.New(simdev.Options{}), res.Artifact)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	pp := loadSim(t, s.Graph)
	params, _ := boundParams(t, s)
	for _, x := range []*executor.Program{p, pp} {
		if err := x.SetParams(params); err != nil {
			t.Fatal(err)
		}
	}
	for _, env := range envs {
		st, err := ops.Instantiate(s.Graph, env)
		if err != nil {
			t.Fatal(err)
		}
		inputs, _, err := tensor.SeededValues(st, uint64(env["batch"]*1000+env["seq"]))
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Run(inputs)
		if err != nil {
			t.Fatalf("sizes %v: %v", env, err)
		}
		want, err := pp.Run(inputs)
		if err != nil {
			t.Fatalf("sizes %v: codegen/ptx's build: %v", env, err)
		}
		for name, w := range want.Outputs {
			rel, abs := tolerance.Tolerance(w.Type.DType, false, 256)
			o := got.Outputs[name]
			for i := range w.Len() {
				if g, r := o.At(i), w.At(i); !tolerance.Within(g, r, rel, abs) && !(math.IsNaN(g) && math.IsNaN(r)) {
					t.Fatalf("sizes %v: %s[%d] = %v, codegen/ptx's build %v", env, name, i, g, r)
				}
			}
		}
	}
}

// boundParams returns step s's parameters as the symbolic runs take them: seeded at the bound,
// the optimizer's state as it starts (Adam's squares at zero, not at random values), and that
// state.
func boundParams(t *testing.T, s *StepGraph) (params, state map[string]*tensor.Tensor) {
	t.Helper()
	atBound := map[string]int64{}
	for _, d := range s.Graph.Dims {
		atBound[d.Name] = int64(d.Hi)
	}
	bound, err := ops.Instantiate(s.Graph, atBound)
	if err != nil {
		t.Fatal(err)
	}
	_, params = seededNonZero(t, bound, 3)
	state = s.InitState()
	for name, v := range state {
		if _, ok := params[name]; ok {
			params[name] = v
		}
	}
	return params, state
}
