package train

import (
	"fmt"
	"slices"
	"strings"

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
	return WithLoss(fwd, Loss{Name: CrossEntropyLoss}, r)
}

// Prediction returns the output of fwd that loss l reads: logits when fwd has it, else, for a
// loss that is not a class loss, fwd's only output.
func Prediction(fwd *ir.Graph, l Loss) (ir.Output, error) {
	for _, o := range fwd.Outputs {
		if o.Name == LogitsName {
			return o, nil
		}
	}
	if !l.Class() && len(fwd.Outputs) == 1 {
		return fwd.Outputs[0], nil
	}
	if l.Class() {
		return ir.Output{}, fmt.Errorf("graph %s has no output %s (a classifier's class scores [N,C])", fwd.Name, LogitsName)
	}
	return ir.Output{}, fmt.Errorf("graph %s has %d outputs and none is %s: which one does %s read?", fwd.Name, len(fwd.Outputs), LogitsName, l.Name)
}

// WithLoss returns a copy of fwd with an input for the targets (LabelsName i64[N] for a class
// loss, TargetName of the prediction's type for the others) and an output loss: l of the
// prediction (see Prediction) and the targets, with reduction r. The model's outputs stay.
func WithLoss(fwd *ir.Graph, l Loss, r frontend.Reduction) (*ir.Graph, error) {
	if err := l.Check(); err != nil {
		return nil, err
	}
	for _, o := range fwd.Outputs {
		if o.Name == DefaultLoss {
			return nil, fmt.Errorf("graph %s already has an output %s; a model outputs only its prediction and the loss is added to it", fwd.Name, DefaultLoss)
		}
	}
	pred, err := Prediction(fwd, l)
	if err != nil {
		return nil, err
	}
	pt := pred.Value.Type
	if !pt.DType.IsFloat() || pt.Shape.Rank() == 0 || l.Class() && pt.Shape.Rank() != 2 {
		want := "a float prediction [N,...]"
		if l.Class() {
			want = "float class scores [N,C]"
		}
		return nil, fmt.Errorf("graph %s: output %s is %s, want %s", fwd.Name, pred.Name, pt, want)
	}
	targetName := TargetName
	if l.Class() {
		targetName = LabelsName
	}
	if fwd.Lookup(targetName) != nil {
		return nil, fmt.Errorf("graph %s already declares %s, the input the loss adds", fwd.Name, targetName)
	}
	tt := l.TargetType(pt)
	opts, sizes, err := lossBatch(fwd, pt) // symloss.go
	if err != nil {
		return nil, err
	}
	loss, err := frontend.Build(strings.ToLower(l.Name), func(b *frontend.Builder) {
		p := b.Input(pred.Name, pt.DType, sizes(b, pt)...)
		y := b.Input(targetName, tt.DType, sizes(b, tt)...)
		b.Output(DefaultLoss, l.Build(p, y, r))
	}, opts...)
	if err != nil {
		return nil, err
	}
	g := fwd.Clone()
	target := g.Input(targetName, loss.Lookup(targetName).Type, nil)
	// Splice the loss graph in: its inputs become the model's prediction and the new targets.
	m := map[*ir.Value]*ir.Value{}
	for _, v := range loss.Values {
		switch {
		case v.Op == ir.OpInput && v.Name == pred.Name:
			m[v] = g.Outputs[slices.IndexFunc(g.Outputs, func(o ir.Output) bool { return o.Name == pred.Name })].Value
		case v.Op == ir.OpInput:
			m[v] = target
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
		return nil, fmt.Errorf("train: internal error: the model with its loss does not verify: %v", err)
	}
	return g, nil
}
