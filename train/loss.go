package train

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// The losses, by their torch.nn class names.
const (
	CrossEntropyLoss  = "CrossEntropyLoss"
	NLLLoss           = "NLLLoss"
	MSELoss           = "MSELoss"
	L1Loss            = "L1Loss"
	SmoothL1Loss      = "SmoothL1Loss"
	BCEWithLogitsLoss = "BCEWithLogitsLoss"
)

// Losses lists the losses WithLoss adds.
var Losses = []string{CrossEntropyLoss, NLLLoss, MSELoss, L1Loss, SmoothL1Loss, BCEWithLogitsLoss}

// TargetName is the input WithLoss adds for the targets of a loss that is not a class loss (a
// class loss's is LabelsName).
const TargetName = "target"

// Loss is a loss function with PyTorch's name, arguments and semantics (torch.nn.<Name>). The
// zero value of every argument is PyTorch's default, except where noted.
type Loss struct {
	Name string // one of Losses

	// CrossEntropyLoss and NLLLoss: class weights, one per class (nil: all 1).
	Weight []float64
	// CrossEntropyLoss and NLLLoss: targets equal to *IgnoreIndex add nothing to the loss and
	// nothing to the mean's divisor. nil ignores none: then every label must be a class (PyTorch's
	// default of -100 is rejected as a label instead of ignored).
	IgnoreIndex *int64
	// CrossEntropyLoss: the weight ε of the uniform distribution mixed into the target, in [0, 1].
	LabelSmoothing float64
	// SmoothL1Loss: where the quadratic part ends; PyTorch's default is 1 (a nil Beta).
	Beta *float64
	// BCEWithLogitsLoss: the weight of positive examples, one per element of the last dimension
	// (nil: all 1).
	PosWeight []float64
}

// ParseLoss returns the loss named name (PyTorch's class name, any case).
func ParseLoss(name string) (Loss, error) {
	for _, l := range Losses {
		if strings.EqualFold(name, l) {
			return Loss{Name: l}, nil
		}
	}
	return Loss{}, fmt.Errorf("unknown loss %q (want %s)", name, strings.Join(Losses, ", "))
}

// Class reports whether the loss takes class indices (i64 labels) as targets.
func (l Loss) Class() bool { return l.Name == CrossEntropyLoss || l.Name == NLLLoss }

// Check validates the arguments against the loss.
func (l Loss) Check() error {
	if !slices.Contains(Losses, l.Name) {
		_, err := ParseLoss(l.Name)
		return err
	}
	if !l.Class() && (l.Weight != nil || l.IgnoreIndex != nil) {
		return fmt.Errorf("%s takes no class weights or ignore_index", l.Name)
	}
	if l.Name != CrossEntropyLoss && l.LabelSmoothing != 0 {
		return fmt.Errorf("%s takes no label_smoothing", l.Name)
	}
	if !(l.LabelSmoothing >= 0 && l.LabelSmoothing <= 1) {
		return fmt.Errorf("%s: label_smoothing %v, want a number in [0, 1]", l.Name, l.LabelSmoothing)
	}
	if l.Beta != nil && (l.Name != SmoothL1Loss || !(*l.Beta >= 0) || math.IsInf(*l.Beta, 1)) {
		return fmt.Errorf("%s: beta %v: only SmoothL1Loss has one, a number ≥ 0", l.Name, *l.Beta)
	}
	if l.PosWeight != nil && l.Name != BCEWithLogitsLoss {
		return fmt.Errorf("%s takes no pos_weight", l.Name)
	}
	return nil
}

func (l Loss) String() string {
	var args []string
	if l.Weight != nil {
		args = append(args, fmt.Sprintf("weight=%v", l.Weight))
	}
	if l.IgnoreIndex != nil {
		args = append(args, fmt.Sprintf("ignore_index=%d", *l.IgnoreIndex))
	}
	if l.LabelSmoothing != 0 {
		args = append(args, fmt.Sprintf("label_smoothing=%v", l.LabelSmoothing))
	}
	if l.Beta != nil {
		args = append(args, fmt.Sprintf("beta=%v", *l.Beta))
	}
	if l.PosWeight != nil {
		args = append(args, fmt.Sprintf("pos_weight=%v", l.PosWeight))
	}
	return l.Name + "(" + strings.Join(args, ", ") + ")"
}

// plain reports whether the loss has PyTorch's default arguments only: such a loss is the
// frontend's function of the same name, the graph gcomp train always built.
func (l Loss) plain() bool {
	return l.Weight == nil && l.IgnoreIndex == nil && l.LabelSmoothing == 0 && l.Beta == nil && l.PosWeight == nil
}

// TargetType is the type of the targets of the loss for a prediction of type pred: i64[N] for
// a class loss, pred's type for the others.
func (l Loss) TargetType(pred ir.Type) ir.Type {
	if l.Class() {
		return ir.T(ir.I64, pred.Shape[0])
	}
	return pred
}

// Build returns the loss of pred and target with reduction r: a scalar for mean and sum; for
// none one loss per sample [N] for a class loss, one per element (pred's shape) for the others.
func (l Loss) Build(pred, target *frontend.Tensor, r frontend.Reduction) *frontend.Tensor {
	o := frontend.LossOptions{Reduction: r}
	if l.plain() {
		switch l.Name {
		case CrossEntropyLoss:
			return frontend.CrossEntropyLossWith(pred, target, o)
		case NLLLoss:
			return frontend.NLLLossWith(pred, target, o)
		case MSELoss:
			return frontend.MSELossWith(pred, target, o)
		case BCEWithLogitsLoss:
			return frontend.BCEWithLogitsLossWith(pred, target, o)
		}
	}
	switch l.Name {
	case CrossEntropyLoss:
		return l.classLoss(pred.LogSoftmax(1), target, r)
	case NLLLoss:
		return l.classLoss(pred, target, r)
	case L1Loss:
		return reduceElems(pred.Sub(target).Abs(), r)
	case SmoothL1Loss:
		beta := 1.0
		if l.Beta != nil {
			beta = *l.Beta
		}
		d := pred.Sub(target).Abs()
		if beta == 0 {
			return reduceElems(d, r) // PyTorch: L1Loss
		}
		// 0.5·d²/β below β, d - 0.5·β above: with c = min(d, β), 0.5·c²/β + (d - c).
		c := d.ClampMax(beta)
		return reduceElems(c.Mul(c).MulScalar(0.5/beta).Add(d.Sub(c)), r)
	case BCEWithLogitsLoss:
		// (1 - y)·x + (1 + (p - 1)·y)·(log(1 + e^-|x|) + max(-x, 0)), PyTorch's stable form.
		x, y := pred, target
		soft := x.Abs().Neg().Exp().AddScalar(1).Log().Add(x.Neg().Relu())
		if l.PosWeight != nil {
			k := pred.Dim(pred.Rank() - 1)
			if len(l.PosWeight) != k {
				pred.Builder().Fail("BCEWithLogitsLoss: %d pos_weight values for a last dimension of %d", len(l.PosWeight), k)
			}
			pw := pred.Builder().Tensor(l.PosWeight, pred.DType(), k)
			soft = pw.SubScalar(1).Mul(y).AddScalar(1).Mul(soft)
		}
		return reduceElems(y.RSubScalar(1).Mul(x).Add(soft), r)
	}
	pred.Builder().Fail("unknown loss %s", l.Name)
	return nil
}

// classLoss is NLLLoss (CrossEntropyLoss on log-softmax) with class weights, ignore_index and
// label smoothing, as PyTorch defines them: the per-sample loss is
// w[yᵢ]·(1-ε)·(-logp[i,yᵢ]) + ε/C·Σ_c w[c]·(-logp[i,c]), zero for ignored samples, and the mean
// divides the sum by Σ w[yᵢ] over the samples not ignored (0/0, NaN, when every one is ignored,
// with zero gradients, as in PyTorch). Over a symbolic batch the one-hot compares the labels
// with one row of classes broadcast along the rows, and the per-sample constants take the
// labels' symbolic sizes (symloss.go); a static batch builds the same graph as before.
func (l Loss) classLoss(logp, labels *frontend.Tensor, r frontend.Reduction) *frontend.Tensor {
	b := logp.Builder()
	n, c := logp.Dim(0), logp.Dim(1)
	dt := logp.DType()
	if labels.Rank() != 1 || labels.Dim(0) != n || !labels.DType().IsInt() {
		b.Fail("%s: want integer labels[%d] for scores %s, have %s", l.Name, n, logp.Type(), labels.Type())
	}
	onehot := classIota(b, labels.DType(), logp).Eq(labels.Unsqueeze(1)).Cast(dt)
	nll := logp.Mul(onehot).Sum(1).Neg()
	wy := nll.FullLike(1)
	var w *frontend.Tensor
	if l.Weight != nil {
		if len(l.Weight) != c {
			b.Fail("%s: %d class weights for %d classes", l.Name, len(l.Weight), c)
		}
		w = b.Tensor(l.Weight, dt, 1, c)
		wy = onehot.Mul(w).Sum(1)
	}
	var kept *frontend.Tensor // the samples not ignored
	if l.IgnoreIndex != nil {
		kept = labels.Ne(labels.FullLike(float64(*l.IgnoreIndex)))
		wy = wy.Mul(kept.Cast(dt))
	}
	per := wy.Mul(nll)
	if eps := l.LabelSmoothing; eps != 0 {
		all := logp
		if w != nil {
			all = logp.Mul(w)
		}
		per = per.MulScalar(1 - eps).Add(all.Sum(1).Neg().MulScalar(eps / float64(c)))
	}
	if kept != nil {
		// An ignored sample's loss is 0 selected, not 0·(-logp) multiplied: its gradient is 0
		// even where the mean's is 1/0 (every label ignored: the loss is 0/0, NaN, and the
		// gradients are zero, as PyTorch's).
		per = frontend.Where(kept, per, per.FullLike(0))
	}
	switch r {
	case frontend.ReductionNone:
		return per
	case frontend.ReductionSum:
		return per.Sum()
	}
	return per.Sum().Div(wy.Sum())
}

// reduceElems applies r to per-element losses.
func reduceElems(l *frontend.Tensor, r frontend.Reduction) *frontend.Tensor {
	switch r {
	case frontend.ReductionNone:
		return l
	case frontend.ReductionSum:
		return l.Sum()
	}
	return l.Mean()
}
