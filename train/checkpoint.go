package train

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// Metadata keys of a checkpoint (safetensors metadata is string → string).
const (
	MetaOptimizer = "gcomp.optimizer" // sgd, adam or adamw
	MetaAMP       = "gcomp.amp"       // "", bf16 or f16
)

// SaveCheckpoint writes a training checkpoint to path atomically, as one safetensors file: the
// parameters under their names (PyTorch's state_dict keys), the step's state under its input
// names ("opt.<param>.<slot>", "opt.step", "amp.scale", "amp.growth_tracker"), and in the
// metadata "format": "pt", the optimizer, the AMP dtype and meta.
func (s *StepGraph) SaveCheckpoint(path string, params, state map[string]*tensor.Tensor, meta map[string]string) error {
	arrays := map[string]*tensorio.Array{}
	for _, p := range s.Graph.Params() {
		t := params[p.Name]
		if t == nil {
			return fmt.Errorf("train: checkpoint: no value for parameter %s", p.Name)
		}
		arrays[p.Name] = t.Array()
	}
	for _, v := range s.State {
		t := state[v.Name]
		if t == nil {
			return fmt.Errorf("train: checkpoint: no value for state %s", v.Name)
		}
		arrays[v.Name] = t.Array()
	}
	md := map[string]string{"format": "pt", MetaOptimizer: s.Optimizer.Name(), MetaAMP: s.AMP}
	if s.Schedule != nil {
		md[MetaSchedule] = s.Schedule.String()
	}
	for k, v := range meta {
		md[k] = v
	}
	return tensorio.WriteSafetensorsFile(path, arrays, md)
}

// LoadCheckpoint reads a checkpoint SaveCheckpoint wrote for this step: every parameter and
// state value, each of the type the step wants, with the same optimizer and AMP dtype. Anything
// else in the file is an error.
func (s *StepGraph) LoadCheckpoint(path string) (params, state map[string]*tensor.Tensor, meta map[string]string, err error) {
	arrays, meta, err := tensorio.ReadSafetensorsFile(path)
	if err != nil {
		return nil, nil, nil, err
	}
	if o := meta[MetaOptimizer]; o != s.Optimizer.Name() {
		return nil, nil, nil, fmt.Errorf("train: %s: a checkpoint of optimizer %q, this run uses %s", path, o, s.Optimizer.Name())
	}
	if a := meta[MetaAMP]; a != s.AMP {
		return nil, nil, nil, fmt.Errorf("train: %s: a checkpoint of AMP %q, this run uses %q", path, a, s.AMP)
	}
	if have, want := meta[MetaSchedule], s.scheduleName(); have != want {
		return nil, nil, nil, fmt.Errorf("train: %s: a checkpoint of lr schedule %q, this run uses %q", path, have, want)
	}
	get := func(name string, want ir.Type) (*tensor.Tensor, error) {
		a := arrays[name]
		if a == nil {
			return nil, fmt.Errorf("train: %s has no tensor %s (%s): not a checkpoint of this model and optimizer", path, name, want)
		}
		delete(arrays, name)
		t, err := tensor.FromArray(a)
		if err != nil {
			return nil, fmt.Errorf("train: %s: tensor %s: %v", path, name, err)
		}
		if !t.Type.Equal(want) {
			return nil, fmt.Errorf("train: %s: tensor %s is %s, the step wants %s", path, name, t.Type, want)
		}
		return t, nil
	}
	params, state = map[string]*tensor.Tensor{}, map[string]*tensor.Tensor{}
	for _, p := range s.Graph.Params() {
		if params[p.Name], err = get(p.Name, p.Type); err != nil {
			return nil, nil, nil, err
		}
	}
	for _, v := range s.State {
		if state[v.Name], err = get(v.Name, v.Type); err != nil {
			return nil, nil, nil, err
		}
	}
	if len(arrays) > 0 {
		var extra []string
		for name := range arrays {
			extra = append(extra, name)
		}
		sort.Strings(extra)
		return nil, nil, nil, fmt.Errorf("train: %s has tensors this step does not have: %s", path, strings.Join(extra, ", "))
	}
	return params, state, meta, nil
}
