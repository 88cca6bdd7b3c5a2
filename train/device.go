package train

import (
	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/tensor"
)

// Load loads art, the compiled step graph, onto dev with params and the optimizer state: both
// stay on the device, and after every run the step's updated values replace them
// (executor.Program.Feedback), so a run takes only the batch's inputs.
func (s *StepGraph) Load(dev executor.Device, art *artifact.Artifact, params, state map[string]*tensor.Tensor) (*executor.Program, error) {
	prog, err := executor.Load(dev, art)
	if err != nil {
		return nil, err
	}
	err = prog.SetParams(params)
	if err == nil {
		err = prog.Feedback(s.StateBindings)
	}
	if err == nil {
		err = prog.SetState(state)
	}
	if err != nil {
		prog.Close()
		return nil, err
	}
	return prog, nil
}
