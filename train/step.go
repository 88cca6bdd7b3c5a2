package train

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/passes/autodiff"
	"github.com/gcomp/gcomp/tensor"
)

// Names in a train-step graph (see StepGraph).
const (
	NewPrefix    = "new."               // output "new.X" is the next step's value of X
	OptPrefix    = "opt."               // optimizer state inputs: "opt.<param>.<slot>", "opt.step"
	StepName     = "opt.step"           // f32[] optimizer step count, 0 before the first step
	ScaleName    = "amp.scale"          // f32[] dynamic loss scale
	TrackerName  = "amp.growth_tracker" // i32[] clean steps since the scale last changed
	FoundInfName = "amp.found_inf"      // f32[] output: 1 if this step's gradients were not finite (the step was skipped)
	DefaultLoss  = "loss"
	GradPrefix   = "grad." // output "grad.<param>" of a split step's first graph (SplitStep)
)

// Options configure Step.
type Options struct {
	// Loss is the model output to minimize, a float scalar (default "loss").
	Loss string
	// Params lists the parameters to train (default: every float parameter, in declaration order).
	// The others stay parameters of the step graph but are not updated.
	Params []string
	// AMP is "" (f32 throughout), "bf16" or "f16": matmuls and convolutions (forward and
	// backward) read their operands rounded to that dtype and accumulate in f32; everything
	// else, the master weights and the optimizer stay f32.
	AMP string
	// LossScale is the dynamic loss scaler. nil means GradScaler's defaults when AMP is "f16"
	// and no scaling otherwise; set Disabled to turn it off for f16.
	LossScale *LossScale
	// Seed seeds the random numbers of a graph built in training mode (dropout masks): its key
	// input frontend.RandomKeyName becomes state that starts at (Seed mod 2³¹)·2³² and grows by
	// one every step, so each (seed, step) draws fresh numbers (`gcomp train --seed`).
	Seed uint64
	// Schedule varies the learning rate with the step count (nil: the optimizer's constant rate).
	Schedule *Schedule
	// UnfusedAttention differentiates scaled dot-product attention as written (its backward
	// reads the materialized probabilities). By default the step's forward forms attention ops
	// (passes.FormAttention) before differentiation, so the forward runs the attention kernel and
	// the backward recomputes the softmax (attention_grad); with AMP autocast runs both in bf16
	// or f16 as it runs torch's scaled_dot_product_attention (the softmax inside in f32).
	UnfusedAttention bool
}

// LossScale is torch.cuda.amp.GradScaler's dynamic loss scaling, computed inside the step graph.
type LossScale struct {
	Init           float64 // initial scale (65536)
	Growth         float64 // factor after GrowthInterval clean steps in a row (2)
	Backoff        float64 // factor after a step with inf or NaN gradients (0.5)
	GrowthInterval int     // (2000)
	Disabled       bool
}

// DefaultLossScale returns GradScaler's defaults.
func DefaultLossScale() *LossScale {
	return &LossScale{Init: 65536, Growth: 2, Backoff: 0.5, GrowthInterval: 2000}
}

// StateVar is one state input of a step graph and its value before the first step.
type StateVar struct {
	Name string
	Type ir.Type
	Init float64 // every element
}

// StepGraph is one training step as one graph:
//
//   - inputs: the batch (the model's inputs), then the state (optimizer slots
//     "opt.<param>.<slot>", the step count "opt.step", the loss scaler's "amp.scale" and
//     "amp.growth_tracker");
//   - parameters: the model's parameters, under their state_dict names;
//   - outputs: the model's outputs (among them the loss), then "new.<param>" for every trained
//     parameter and "new.<state>" for every state input, and "amp.found_inf" with loss scaling.
//
// StateBindings maps each "new." output to the input or parameter it replaces at the next step:
// an executor feeds outputs back through it, and may give the output the input's buffer (donation),
// since nothing reads the old value after the update.
type StepGraph struct {
	Graph         *ir.Graph
	Loss          string
	Batch         []string // the model's inputs, fed anew at every step
	Params        []string // trained parameters
	State         []StateVar
	StateBindings map[string]string // output name → input or parameter name
	Optimizer     Optimizer
	AMP           string
	LossScale     *LossScale // nil without loss scaling
	Schedule      *Schedule  // nil: a constant learning rate
}

// InitState returns the state inputs' values before the first step.
func (s *StepGraph) InitState() map[string]*tensor.Tensor {
	st := make(map[string]*tensor.Tensor, len(s.State))
	for _, v := range s.State {
		t := tensor.New(v.Type)
		for i := range t.F {
			t.F[i] = v.Init
		}
		for i := range t.I {
			t.I[i] = int64(v.Init)
		}
		st[v.Name] = t
	}
	return st
}

// Step builds the training step of model, which declares the batch as inputs, the parameters,
// and the loss as an output (see Options.Loss).
func Step(name string, model func(*frontend.Builder), opt Optimizer, o Options) (*StepGraph, error) {
	g, err := frontend.Build(name, model)
	if err != nil {
		return nil, err
	}
	return StepFromGraph(g, opt, o)
}

// StepFromGraph builds the training step of a forward graph. g is not changed.
func StepFromGraph(fwd *ir.Graph, opt Optimizer, o Options) (*StepGraph, error) {
	s, _, err := buildStep(fwd, opt, o, false, false)
	return s, err
}

// buildStep builds the step of fwd as one graph, or, with split, as two (SplitStepFromGraph):
// the gradients, then the update. The update's part is the same code in both forms, so the two
// compute the same numbers. With weighted, the split's gradients graph takes the seed factor
// GradWeightName (ddp_sym.go).
func buildStep(fwd *ir.Graph, opt Optimizer, o Options, split, weighted bool) (*StepGraph, *StepGraph, error) {
	if err := opt.Check(); err != nil {
		return nil, nil, err
	}
	if o.Loss == "" {
		o.Loss = DefaultLoss
	}
	amp, err := passes.ParseAMP(o.AMP)
	if err != nil {
		return nil, nil, fmt.Errorf("train: %v", err)
	}
	ls := o.LossScale
	if ls == nil && o.AMP == "f16" {
		ls = DefaultLossScale()
	}
	if ls != nil && ls.Disabled {
		ls = nil
	}
	if ls != nil && !(ls.Init > 0 && ls.Growth >= 1 && ls.Backoff > 0 && ls.Backoff < 1 && ls.GrowthInterval >= 1) {
		return nil, nil, fmt.Errorf("train: invalid loss scaling %+v", *ls)
	}
	g := fwd.Clone()
	if !o.UnfusedAttention {
		g = passes.FormAttention(g)
	}
	g.Name = fwd.Name + "_train_step"
	var loss *ir.Value
	for _, out := range g.Outputs {
		if out.Name == o.Loss {
			loss = out.Value
		}
		if strings.HasPrefix(out.Name, NewPrefix) || strings.HasPrefix(out.Name, GradPrefix) || out.Name == FoundInfName {
			return nil, nil, fmt.Errorf("train: graph %s has an output named %s; the step graph reserves new.*, grad.* and %s", fwd.Name, out.Name, FoundInfName)
		}
	}
	if loss == nil {
		return nil, nil, fmt.Errorf("train: graph %s has no output %q (the loss to minimize)", fwd.Name, o.Loss)
	}
	if loss.Type.Shape.Rank() != 0 || !loss.Type.DType.IsFloat() {
		return nil, nil, fmt.Errorf("train: the loss %s must be a float scalar, have %s", o.Loss, loss.Type)
	}
	// Buffers the forward pass updates (BatchNorm's running statistics in training mode): their
	// outputs become the parameters' next values, and the optimizer leaves them alone.
	buffers := map[string]*ir.Value{}
	kept := slices.Clone(g.Outputs)[:0]
	for _, out := range g.Outputs {
		if name, ok := strings.CutPrefix(out.Name, frontend.BufferPrefix); ok {
			buffers[name] = out.Value
			continue
		}
		kept = append(kept, out)
	}
	g.Outputs = kept
	params, err := trainable(g, o.Params)
	if err != nil {
		return nil, nil, err
	}
	params = slices.DeleteFunc(params, func(p *ir.Value) bool { return buffers[p.Name] != nil })
	if o.Schedule != nil {
		if err := o.Schedule.Check(); err != nil {
			return nil, nil, fmt.Errorf("train: %v", err)
		}
		opt = o.Schedule.optimizer(opt)
	}
	s := &StepGraph{Graph: g, Loss: o.Loss, StateBindings: map[string]string{}, Optimizer: opt, AMP: o.AMP, LossScale: ls, Schedule: o.Schedule}
	// u is the graph and step the update goes into: s itself, or the second graph of a split.
	u, us := g, s
	if split {
		u = ir.NewGraph(fwd.Name + "_update")
		us = &StepGraph{Graph: u, Loss: o.Loss, StateBindings: map[string]string{}, Optimizer: opt, AMP: o.AMP, LossScale: ls, Schedule: o.Schedule}
	}
	var clash string
	state := func(name string, t ir.Type, init float64) *ir.Value {
		if g.Lookup(name) != nil && clash == "" {
			clash = name
		}
		us.State = append(us.State, StateVar{name, t, init})
		return u.Input(name, t, nil)
	}
	var rngKey *ir.Value
	for _, v := range g.Inputs() {
		if v.Name == frontend.RandomKeyName && v.Type.Equal(ir.T(ir.I64)) {
			rngKey = v
			s.State = append(s.State, StateVar{v.Name, v.Type, float64(o.Seed%(1<<31)) * (1 << 32)})
			continue
		}
		s.Batch = append(s.Batch, v.Name)
	}
	for _, p := range params {
		s.Params = append(s.Params, p.Name)
	}
	us.Params = s.Params
	// The update reads the gradients, and its own copy of the parameters, from the first graph.
	var uGrads []*ir.Value
	uParams := params
	if split {
		uParams = make([]*ir.Value, len(params))
		for i, p := range params {
			uGrads = append(uGrads, u.Input(GradPrefix+p.Name, p.Type, nil))
			uParams[i] = u.Param(p.Name, p.Type, p.Attrs)
		}
	}
	slots := make([][]*ir.Value, len(params))
	for i, p := range params {
		for _, slot := range opt.Slots() {
			slots[i] = append(slots[i], state(OptPrefix+p.Name+"."+slot, p.Type, 0))
		}
	}
	var step, scale, gscale, tracker *ir.Value
	if opt.Counts() || o.Schedule != nil {
		step = state(StepName, ir.T(ir.F32), 0)
	}
	if ls != nil {
		scale = state(ScaleName, ir.T(ir.F32), ls.Init)
		tracker = state(TrackerName, ir.T(ir.I32), 0)
		gscale = scale
		if split {
			gscale = g.Input(ScaleName, scale.Type, nil) // read, not updated, by the gradients' graph
		}
	}
	var gweight *ir.Value
	if split && weighted { // ddp_sym.go: a rank's share of a global batch's mean
		if g.Lookup(GradWeightName) != nil && clash == "" {
			clash = GradWeightName
		}
		gweight = g.Input(GradWeightName, ir.T(ir.F32), nil)
	}
	if clash != "" {
		return nil, nil, fmt.Errorf("train: graph %s already declares %s, a name the step's state uses", fwd.Name, clash)
	}
	err = autodiff.Emit(g, func(e *autodiff.Emitter) {
		var seed *ir.Value
		if gscale != nil {
			seed = e.Cast(gscale, loss.Type.DType) // the gradient of scale·loss
		}
		if gweight != nil {
			w := e.Cast(gweight, loss.Type.DType)
			if seed != nil {
				w = e.Mul(seed, w)
			}
			seed = w
		}
		grads, err := autodiff.Append(g, loss, seed, params)
		if err != nil {
			e.Fail("%v", err)
		}
		if amp != ir.Invalid {
			back := passes.Autocast(g, amp)
			for i, gr := range grads {
				if b := back[gr]; b != nil {
					grads[i] = b
				}
			}
		}
		if split {
			for i, p := range params {
				g.SetOutput(GradPrefix+p.Name, grads[i])
			}
		}
		var found *ir.Value
		if !split {
			found = emitUpdate(e, us, opt, o.Schedule, uParams, grads, slots, step, scale)
		}
		for _, name := range slices.Sorted(maps.Keys(buffers)) {
			s.output(buffers[name], name)
		}
		if rngKey != nil {
			// Every step draws new numbers, skipped steps too (as PyTorch's generator advances).
			s.output(e.AddScalar(rngKey, 1), rngKey.Name)
		}
		if !split {
			emitScale(e, us, ls, found, scale, tracker)
		}
	})
	if err == nil && split {
		err = autodiff.Emit(u, func(e *autodiff.Emitter) {
			found := emitUpdate(e, us, opt, o.Schedule, uParams, uGrads, slots, step, scale)
			emitScale(e, us, ls, found, scale, tracker)
		})
	}
	if err != nil {
		return nil, nil, fmt.Errorf("train: %v", err)
	}
	for _, graph := range []*ir.Graph{g, u} {
		if err := ops.Verify(graph); err != nil {
			return nil, nil, fmt.Errorf("train: internal error: the step graph %s does not verify: %v", graph.Name, err)
		}
	}
	if !split {
		return s, nil, nil
	}
	return s, us, nil
}

// emitUpdate appends to s's graph the optimizer's update of params from grads (unscaled first,
// and the step skipped when they are not finite, with loss scaling; at sched's rate when it is
// not nil) and the step count's. It returns whether the gradients were not finite (nil without
// loss scaling).
func emitUpdate(e *autodiff.Emitter, s *StepGraph, opt Optimizer, sched *Schedule, params, grads []*ir.Value, slots [][]*ir.Value, step, scale *ir.Value) *ir.Value {
	var found *ir.Value
	if scale != nil {
		grads, found = unscale(e, grads, scale)
	}
	var newStep, lr *ir.Value
	if step != nil {
		newStep = e.AddScalar(step, 1)
	}
	var momentum *ir.Value
	if sched != nil {
		lr, momentum = sched.emit(e, opt, newStep)
	}
	for i, p := range params {
		np, ns := opt.Update(e, Update{Param: p, Grad: grads[i], Slots: slots[i], Step: newStep, LR: lr, Momentum: momentum})
		if found != nil {
			np = keepIf(e, found, p, np)
			for j := range ns {
				ns[j] = keepIf(e, found, slots[i][j], ns[j])
			}
		}
		s.output(np, p.Name)
		for j, slot := range ns {
			s.output(slot, slots[i][j].Name)
		}
	}
	if step != nil {
		if found != nil {
			newStep = keepIf(e, found, step, newStep)
		}
		s.output(newStep, StepName)
	}
	return found
}

// emitScale appends the loss scaler's update after a step whose gradients were found not finite
// or not, and the found_inf output.
func emitScale(e *autodiff.Emitter, s *StepGraph, ls *LossScale, found, scale, tracker *ir.Value) {
	if scale != nil {
		newScale, newTracker := updateScale(e, ls, found, scale, tracker)
		s.output(newScale, ScaleName)
		s.output(newTracker, TrackerName)
		s.Graph.SetOutput(FoundInfName, e.Cast(found, ir.F32))
	}
}

// output adds "new.<name>" bound to name.
func (s *StepGraph) output(v *ir.Value, name string) {
	s.Graph.SetOutput(NewPrefix+name, v)
	s.StateBindings[NewPrefix+name] = name
}

// trainable returns the named parameters, or every float parameter.
func trainable(g *ir.Graph, names []string) ([]*ir.Value, error) {
	if names == nil {
		var ps []*ir.Value
		for _, p := range g.Params() {
			if p.Type.DType.IsFloat() {
				ps = append(ps, p)
			}
		}
		if len(ps) == 0 {
			return nil, fmt.Errorf("train: graph %s has no float parameters to train", g.Name)
		}
		return ps, nil
	}
	ps := make([]*ir.Value, len(names))
	for i, n := range names {
		v := g.Lookup(n)
		if v == nil || v.Op != ir.OpParam {
			return nil, fmt.Errorf("train: graph %s has no parameter %q", g.Name, n)
		}
		if !v.Type.DType.IsFloat() {
			return nil, fmt.Errorf("train: parameter %s is %s, not a float tensor", n, v.Type)
		}
		ps[i] = v
	}
	return ps, nil
}

// keepIf is found ? old : updated, elementwise (found is a bool scalar).
func keepIf(e *autodiff.Emitter, found, old, updated *ir.Value) *ir.Value {
	return e.Select(e.BroadcastScalarTo(found, old.Type), old, updated)
}
