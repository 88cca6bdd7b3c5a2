package train

import (
	"fmt"
	"strings"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// Model is a model prepared for Fit: the forward graph with a loss added, once as the train step
// sees it and once for the evaluation.
type Model struct {
	Train *ir.Graph // the model in training mode with the loss, mean reduction
	Eval  *ir.Graph // the model in eval mode with the per-sample (per-element) losses
	Loss  Loss
	// Input is the model's one input, the batch's inputs; Output the prediction the loss reads;
	// Target the input of the targets WithLoss added.
	Input, Output, Target string
	Batch                 int // the input's first dimension

	inType, predType, targetType ir.Type
}

// NewModel prepares fwd, the model in eval mode, and fwdTrain, the same model built in training
// mode (dropout drops, BatchNorm uses batch statistics; it may add the random key input), for
// training with loss l. The model has one input [B,...] (images f32[B,1,H,W] or f32[B,H*W], rows
// [B,K]) and outputs its prediction [B,...] (logits [B,C] for a class loss).
func NewModel(fwd, fwdTrain *ir.Graph, l Loss) (*Model, error) {
	for _, v := range fwdTrain.Inputs() {
		if u := fwd.Lookup(v.Name); v.Name != frontend.RandomKeyName && (u == nil || !u.Type.Equal(v.Type)) {
			return nil, fmt.Errorf("in training mode the model declares input %s %s, which it does not in eval mode", v.Name, v.Type)
		}
	}
	in := fwd.Inputs()
	if len(in) != 1 || in[0].Type.Shape.Rank() == 0 {
		return nil, fmt.Errorf("want one input of images or rows, f32[B,1,H,W], f32[B,H*W] or [B,...]; the model has %s", describeValues(in))
	}
	x := in[0]
	m := &Model{Loss: l, Input: x.Name, Batch: x.Type.Shape[0], Target: TargetName}
	if l.Class() {
		m.Target = LabelsName
	}
	var err error
	if m.Train, err = WithLoss(fwdTrain, l, frontend.ReductionMean); err != nil {
		return nil, err
	}
	if m.Eval, err = WithLoss(fwd, l, frontend.ReductionNone); err != nil {
		return nil, err
	}
	pred, _ := Prediction(fwd, l)
	m.Output = pred.Name
	m.inType, m.predType, m.targetType = x.Type, pred.Value.Type, l.TargetType(pred.Value.Type)
	if pred.Value.Type.Shape[0] != m.Batch {
		return nil, fmt.Errorf("output %s is %s, want one row of predictions per row of the batch (%d)", pred.Name, pred.Value.Type, m.Batch)
	}
	return m, nil
}

// Step builds the train step of the model (StepFromGraph on Train).
func (m *Model) Step(opt Optimizer, o Options) (*StepGraph, error) {
	return StepFromGraph(m.Train, opt, o)
}

func describeValues(vs []*ir.Value) string {
	if len(vs) == 0 {
		return "no inputs"
	}
	var s []string
	for _, v := range vs {
		s = append(s, v.Name+" "+v.Type.String())
	}
	return strings.Join(s, ", ")
}
