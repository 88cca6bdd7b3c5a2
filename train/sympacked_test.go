package train

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/backend"
	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/compiler"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
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
// groupings. The NVVM producer builds both, borrowing only what codegen/nvvm's fallback.go lists.
func TestSymbolicTransformerEncoderLayerStep(t *testing.T) {
	envs := []map[string]int64{
		{"batch": 1, "seq": 1}, {"batch": 1, "seq": 5}, {"batch": 3, "seq": 2}, {"batch": 2, "seq": 7}, {"batch": 4, "seq": 7},
	}
	for _, tc := range []struct {
		name     string
		attnDrop float64 // the dropout on the attention weights
		masks    []string
		borrows  []string // the templates the NVVM build borrows (fallback.go's notes)
	}{
		{"three dropouts", 0, []string{"f32[batch,seq,8]", "f32[batch,seq,16]", "f32[batch,seq,8]"},
			[]string{"column reduction through views"}},
		{"four dropouts, the attention weights' included", 0.1,
			[]string{"f32[batch,2,seq,seq]", "f32[batch,seq,8]", "f32[batch,seq,16]", "f32[batch,seq,8]"},
			[]string{"column reduction through views", "row reduction over a symbolic row length", "batched product with a symbolic free dim on the right"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := func(b *frontend.Builder) {
				n, s := b.Dim("batch", 1, 4), b.Dim("seq", 1, 7)
				x, y := b.Input("x", ir.F32, n, s, 8), b.Input("t", ir.F32, n, s, 8)
				l := nn.NewTransformerEncoderLayer(b, "enc", 8, 2, nn.TransformerEncoderLayerOptions{DimFeedforward: 16, Dropout: 0.1, BatchFirst: true})
				l.SelfAttn.Dropout = tc.attnDrop
				b.Output(DefaultLoss, frontend.MSELoss(l.Forward(x), y))
			}
			s := dropoutStep(t, model, 0, &SGD{LR: 0.1}, tc.masks)
			if len(s.Graph.Dims) != 2 {
				t.Fatalf("the step has dims %v", s.Graph.Dims)
			}
			t.Run("nvvm", func(t *testing.T) { checkBorrows(t, s, tc.borrows) })
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

// checkBorrows builds step s with the NVVM producer: it compiles, and every kernel taking
// codegen/ptx's entry says it borrows one of the templates named in templates (codegen/nvvm's
// fallback.go), each of them at least once.
func checkBorrows(t *testing.T, s *StepGraph, templates []string) {
	lib := libnvvm.Require(t)
	nv, err := backend.New("nvvm", lib.Path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(s.Graph, StepCompilerOptions(compiler.Options{Producer: nv}))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, k := range res.Artifact.Plan.Kernels {
		if k.Producer != "ptx" {
			continue
		}
		notes := strings.Join(k.Notes, "\n")
		i := slices.IndexFunc(templates, func(tm string) bool { return strings.Contains(notes, "the NVVM producer has no "+tm) })
		if i < 0 {
			t.Errorf("kernel %s: codegen/ptx's entry (%v)", k.Name, k.Notes)
			continue
		}
		seen[templates[i]] = true
	}
	for _, tm := range templates {
		if !seen[tm] {
			t.Errorf("no kernel borrows codegen/ptx's %s", tm)
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
	_, params, err = tensor.SeededValues(bound, 3)
	if err != nil {
		t.Fatal(err)
	}
	state = s.InitState()
	for name, v := range state {
		if _, ok := params[name]; ok {
			params[name] = v
		}
	}
	return params, state
}
