package train

import (
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/golden"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
	"golang.org/x/tools/txtar"
)

func tinyLinear(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, 4, 3)
	y := b.Input("y", frontend.F32, 4, 2)
	w := b.Param("w", ir.T(ir.F32, 2, 3), frontend.Uniform(-1, 1))
	bias := b.Param("b", ir.T(ir.F32, 2), frontend.Zeros())
	pred := frontend.Linear(x, w, bias)
	b.Output("pred", pred)
	b.Output("loss", frontend.MSELoss(pred, y))
}

// TestStepGraphGolden records the step graphs' conventions: inputs, outputs and state bindings,
// and the whole graph for SGD with momentum.
func TestStepGraphGolden(t *testing.T) {
	tests := []struct {
		name string
		opt  Optimizer
		o    Options
	}{
		{"sgd_momentum", &SGD{LR: 0.1, Momentum: 0.9}, Options{}},
		{"adam_f16", NewAdam(), Options{AMP: "f16"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Step("tiny", tinyLinear, tt.opt, tt.o)
			if err != nil {
				t.Fatal(err)
			}
			var sb strings.Builder
			sb.WriteString("batch: " + strings.Join(s.Batch, " ") + "\n")
			sb.WriteString("params: " + strings.Join(s.Params, " ") + "\nstate:\n")
			for _, v := range s.State {
				sb.WriteString("  " + v.Name + " " + v.Type.String() + " init " + ir.FormatFloat(v.Init) + "\n")
			}
			sb.WriteString("bindings:\n")
			var outs []string
			for o := range s.StateBindings {
				outs = append(outs, o)
			}
			sort.Strings(outs)
			for _, o := range outs {
				sb.WriteString("  " + o + " -> " + s.StateBindings[o] + "\n")
			}
			files := []txtar.File{{Name: "conventions", Data: []byte(sb.String())}}
			if tt.name == "sgd_momentum" {
				files = append(files, txtar.File{Name: "step.gir", Data: []byte(s.Graph.String())})
			}
			golden.CheckTxtar(t, filepath.Join("testdata", tt.name+".txtar"), "A train step of a linear layer with MSE loss.\n", files)
		})
	}
}

func tinyData() map[string]*tensor.Tensor {
	return map[string]*tensor.Tensor{
		"x": hashUniform(ir.T(ir.F32, 4, 3), 11, 1),
		"y": hashUniform(ir.T(ir.F32, 4, 2), 12, 1),
	}
}

// tinyStep runs one step of tinyLinear from the weights of seed 0; it returns the step, the
// initial weights, the trainer after the step and the step's outputs.
func tinyStep(t *testing.T, opt Optimizer, o Options) (*StepGraph, map[string]*tensor.Tensor, *RefTrainer, map[string]*tensor.Tensor) {
	t.Helper()
	s, err := Step("tiny", tinyLinear, opt, o)
	if err != nil {
		t.Fatal(err)
	}
	params, err := InitParams(s.Graph, 0)
	if err != nil {
		t.Fatal(err)
	}
	tr := NewRefTrainer(s, params)
	out, err := tr.Run(tinyData())
	if err != nil {
		t.Fatal(err)
	}
	return s, params, tr, out
}

func TestFrozenParamsAndOutputs(t *testing.T) {
	_, params, tr, out := tinyStep(t, NewSGD(0.1), Options{Params: []string{"w"}})
	if _, ok := out["pred"]; !ok {
		t.Errorf("the model's other outputs are missing: have %v", keys(out))
	}
	if _, ok := out["new.b"]; ok {
		t.Errorf("the frozen parameter b has an update")
	}
	if !slices.Equal(tr.Params["b"].F, params["b"].F) {
		t.Errorf("b changed")
	}
	if slices.Equal(tr.Params["w"].F, params["w"].F) {
		t.Errorf("w did not change")
	}
}

func keys(m map[string]*tensor.Tensor) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	sort.Strings(k)
	return k
}

func TestStepErrors(t *testing.T) {
	tests := []struct {
		opt  Optimizer
		o    Options
		want string
	}{
		{NewSGD(0.1), Options{Loss: "nope"}, `has no output "nope"`},
		{NewSGD(0.1), Options{Loss: "pred"}, "must be a float scalar"},
		{NewSGD(0.1), Options{AMP: "f8"}, `unknown AMP dtype "f8"`},
		{NewSGD(0.1), Options{Params: []string{"x"}}, `has no parameter "x"`},
		{NewSGD(-1), Options{}, "sgd: invalid learning rate -1"},
		{&SGD{LR: 0.1, Nesterov: true}, Options{}, "nesterov momentum requires a momentum"},
		{&Adam{LR: 0.1, Beta1: 1, Beta2: 0.9}, Options{}, "adam: invalid betas (1, 0.9)"},
		{NewSGD(0.1), Options{AMP: "f16", LossScale: &LossScale{Init: 1, Growth: 2, Backoff: 2, GrowthInterval: 1}}, "invalid loss scaling"},
	}
	for _, tt := range tests {
		_, err := Step("tiny", tinyLinear, tt.opt, tt.o)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %+v: error %v, want %q", tt.opt.Name(), tt.o, err, tt.want)
		}
	}
	clash := func(b *frontend.Builder) {
		tinyLinear(b)
		b.Input("opt.step", frontend.F32)
	}
	if _, err := Step("clash", clash, NewAdam(), Options{}); err == nil || !strings.Contains(err.Error(), "already declares opt.step") {
		t.Errorf("state name clash: %v", err)
	}
	reserved := func(b *frontend.Builder) {
		tinyLinear(b)
		b.Output("new.w", b.Lookup("w"))
	}
	if _, err := Step("reserved", reserved, NewAdam(), Options{}); err == nil || !strings.Contains(err.Error(), "has an output named new.w") {
		t.Errorf("reserved output name: %v", err)
	}
}

func TestParseOptimizer(t *testing.T) {
	tests := []struct {
		name string
		lr   float64
		want string // Name(), or the error
	}{
		{"sgd", 0.1, "sgd"}, {"adam", 0, "adam"}, {"adamw", 3e-4, "adamw"},
		{"sgd", 0, "sgd needs a learning rate"}, {"rmsprop", 1, `unknown optimizer "rmsprop"`},
	}
	for _, tt := range tests {
		o, err := ParseOptimizer(tt.name, tt.lr)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			got = o.Name()
		}
		if !strings.Contains(got, tt.want) {
			t.Errorf("ParseOptimizer(%s, %v) = %s, want %s", tt.name, tt.lr, got, tt.want)
		}
	}
	if o, _ := ParseOptimizer("adamw", 0); o.(*Adam).WeightDecay != 0.01 || o.(*Adam).LR != 1e-3 {
		t.Errorf("adamw defaults: %+v", o)
	}
}
