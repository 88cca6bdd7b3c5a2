package train

import (
	"github.com/gcomp/gcomp/ir"
)

// SplitStep is a train step cut where data-parallel training averages the gradients over the
// ranks, as two graphs run one after the other:
//
//   - Grad: the forward and backward pass. Inputs: the batch, the random key (state) and, with
//     loss scaling, "amp.scale" (read only: it is the Update's state); parameters: every parameter
//     of the model; outputs: the model's outputs, "grad.<param>" for every trained parameter (of
//     the scaled loss, with loss scaling), "new.<buffer>" for the buffers the forward pass
//     updates (BatchNorm's running statistics) and "new.<random key>".
//   - Update: the optimizer. Inputs: "grad.<param>" and the optimizer's and the loss scaler's
//     state; parameters: the trained ones; outputs: "new.<param>", "new.<state>" and
//     "amp.found_inf".
//
// Run in turn on one device they compute what Full computes (the update is emitted by the same
// code); in between, the gradients can be all-reduced in place.
type SplitStep struct {
	Grad, Update *StepGraph
	// Full is the step as one graph: its parameters and state are the union of the two graphs',
	// and its checkpoints are the split step's (SaveCheckpoint, Resume, InitParams use it).
	Full *StepGraph
}

// SplitStepFromGraph builds the split step of a forward graph (as StepFromGraph builds the step).
func SplitStepFromGraph(fwd *ir.Graph, opt Optimizer, o Options) (*SplitStep, error) {
	return splitStep(fwd, opt, o, len(fwd.Dims) > 0)
}

// SplitStep builds the split train step of the model. Its gradients graph takes GradWeightName
// (ddp_sym.go) over a symbolic batch, and for a class loss whose mean divides by Σ w[yᵢ] over
// the labels not ignored, which differs from rank to rank.
func (m *Model) SplitStep(opt Optimizer, o Options) (*SplitStep, error) {
	return splitStep(m.Train, opt, o, len(m.Train.Dims) > 0 || m.Loss.labelDivisor())
}

// splitStep is SplitStepFromGraph, with the input GradWeightName when weighted.
func splitStep(fwd *ir.Graph, opt Optimizer, o Options, weighted bool) (*SplitStep, error) {
	full, _, err := buildStep(fwd, opt, o, false, false)
	if err != nil {
		return nil, err
	}
	grad, upd, err := buildStep(fwd, opt, o, true, weighted)
	if err != nil {
		return nil, err
	}
	return &SplitStep{Grad: grad, Update: upd, Full: full}, nil
}
