package train

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// RefTrainer runs a step graph on the reference interpreter (the "ref" device), keeping the
// parameters and the optimizer state between steps.
type RefTrainer struct {
	Step   *StepGraph
	Params map[string]*tensor.Tensor // every parameter of the graph, trained or not
	State  map[string]*tensor.Tensor
}

// NewRefTrainer starts training from params (not modified: the trainer keeps its own copies)
// with the optimizer state of InitState.
func NewRefTrainer(s *StepGraph, params map[string]*tensor.Tensor) *RefTrainer {
	ps := make(map[string]*tensor.Tensor, len(params))
	for k, v := range params {
		ps[k] = v.Clone()
	}
	return &RefTrainer{Step: s, Params: ps, State: s.InitState()}
}

// Run executes one step on batch (the model's inputs) and returns every output of the step
// graph; the new parameters and state replace the old ones.
func (t *RefTrainer) Run(batch map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {
	in := make(map[string]*tensor.Tensor, len(batch)+len(t.State))
	for k, v := range batch {
		if _, clash := t.State[k]; clash {
			return nil, fmt.Errorf("train: batch input %s is a state input of the step", k)
		}
		in[k] = v
	}
	for k, v := range t.State {
		in[k] = v
	}
	out, err := ref.Run(t.Step.Graph, in, t.Params)
	if err != nil {
		return nil, err
	}
	for o, name := range t.Step.StateBindings {
		if _, ok := t.Params[name]; ok {
			t.Params[name] = out[o]
		} else {
			t.State[name] = out[o]
		}
	}
	return out, nil
}

// Result is what RunRef returns.
type Result struct {
	Losses  []float64 // the loss of every step (computed before that step's update)
	Skipped []bool    // with loss scaling: steps skipped for inf/NaN gradients
	Params  map[string]*tensor.Tensor
	State   map[string]*tensor.Tensor
}

// RunRef trains for steps steps on the reference interpreter from params, taking the inputs of
// step i from batch(i).
func RunRef(s *StepGraph, params map[string]*tensor.Tensor, steps int, batch func(i int) (map[string]*tensor.Tensor, error)) (*Result, error) {
	t := NewRefTrainer(s, params)
	r := &Result{}
	for i := range steps {
		b, err := batch(i)
		if err != nil {
			return nil, fmt.Errorf("train: batch %d: %v", i, err)
		}
		out, err := t.Run(b)
		if err != nil {
			return nil, fmt.Errorf("train: step %d: %v", i, err)
		}
		r.Losses = append(r.Losses, out[s.Loss].F[0])
		if f, ok := out[FoundInfName]; ok {
			r.Skipped = append(r.Skipped, f.F[0] != 0)
		}
	}
	r.Params, r.State = t.Params, t.State
	return r, nil
}

// InitParams draws every parameter of the step graph from its initializer with seed (as
// `gcomp init-weights` does).
func InitParams(g *ir.Graph, seed uint64) (map[string]*tensor.Tensor, error) {
	ps := map[string]*tensor.Tensor{}
	for _, p := range g.Params() {
		t, err := tensor.Initialize(p, seed)
		if err != nil {
			return nil, err
		}
		ps[p.Name] = t
	}
	return ps, nil
}
