package train

import (
	"fmt"
	"slices"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// Names WithCrossEntropy adds to a classifier's graph.
const (
	LogitsName = "logits" // the classifier output WithCrossEntropy reads, f32[N,C]
	LabelsName = "labels" // the i64[N] input it adds
)

// WithCrossEntropy returns a copy of the classifier fwd, whose output logits is [N,C], with an
// input labels i64[N] and an output loss: F.cross_entropy(logits, labels) with reduction r
// (a scalar for mean and sum, the per-sample losses [N] for none). The model's outputs stay.
// It is how a model that only computes class scores becomes trainable (Step needs a loss) and
// how an evaluation gets per-sample losses.
func WithCrossEntropy(fwd *ir.Graph, r frontend.Reduction) (*ir.Graph, error) {
	var logits *ir.Value
	for _, o := range fwd.Outputs {
		switch o.Name {
		case LogitsName:
			logits = o.Value
		case DefaultLoss:
			return nil, fmt.Errorf("graph %s already has an output %s; a classifier outputs only %s and the cross-entropy loss is added to it", fwd.Name, DefaultLoss, LogitsName)
		}
	}
	if logits == nil {
		return nil, fmt.Errorf("graph %s has no output %s (a classifier's class scores [N,C])", fwd.Name, LogitsName)
	}
	if t := logits.Type; t.Shape.Rank() != 2 || !t.DType.IsFloat() {
		return nil, fmt.Errorf("graph %s: output %s is %s, want float class scores [N,C]", fwd.Name, LogitsName, t)
	}
	if fwd.Lookup(LabelsName) != nil {
		return nil, fmt.Errorf("graph %s already declares %s, the input the cross-entropy loss adds", fwd.Name, LabelsName)
	}
	lt, n := logits.Type, logits.Type.Shape[0]
	loss, err := frontend.Build("cross_entropy", func(b *frontend.Builder) {
		l := b.Input(LogitsName, lt.DType, lt.Shape...)
		y := b.Input(LabelsName, ir.I64, n)
		b.Output(DefaultLoss, frontend.CrossEntropyLossWith(l, y, frontend.LossOptions{Reduction: r}))
	})
	if err != nil {
		return nil, err
	}
	g := fwd.Clone()
	labels := g.Input(LabelsName, ir.T(ir.I64, n), nil)
	// Splice the loss graph in: its inputs become the model's logits and the new labels.
	m := map[*ir.Value]*ir.Value{}
	for _, v := range loss.Values {
		switch {
		case v.Op == ir.OpInput && v.Name == LogitsName:
			m[v] = g.Outputs[slices.IndexFunc(g.Outputs, func(o ir.Output) bool { return o.Name == LogitsName })].Value
		case v.Op == ir.OpInput:
			m[v] = labels
		default:
			nv := *v
			nv.Args = make([]*ir.Value, len(v.Args))
			for i, a := range v.Args {
				nv.Args[i] = m[a]
			}
			m[v] = g.Append(&nv)
		}
	}
	g.SetOutput(DefaultLoss, m[loss.Outputs[0].Value])
	if err := ops.Verify(g); err != nil {
		return nil, fmt.Errorf("train: internal error: the classifier with its loss does not verify: %v", err)
	}
	return g, nil
}
