package frontend

// This file holds the losses of torch.nn.functional, with PyTorch's semantics. Each has a short
// form with the default mean reduction and a ...With form taking LossOptions.

// Reduction says how a loss combines the per-element losses: PyTorch's reduction argument.
type Reduction int

const (
	ReductionMean Reduction = iota // the mean (the default); for class losses, over the batch
	ReductionSum                   // the sum
	ReductionNone                  // no reduction: one loss per element (per sample for class losses)
)

func (r Reduction) String() string {
	switch r {
	case ReductionMean:
		return "mean"
	case ReductionSum:
		return "sum"
	case ReductionNone:
		return "none"
	}
	return "reduction(?)"
}

// LossOptions are the optional arguments of the losses; the zero value is PyTorch's default.
type LossOptions struct {
	Reduction Reduction
}

// reduce applies the reduction to per-element losses l, where mean divides by n.
func (o LossOptions) reduce(what string, l *Tensor, n int) *Tensor {
	switch o.Reduction {
	case ReductionMean:
		if l.v.Type.Sym != nil {
			return l.symbolicLossMean(n) // symmean.go
		}
		return l.Sum().DivScalar(float64(n))
	case ReductionSum:
		return l.Sum()
	case ReductionNone:
		return l
	}
	l.s.failf("%s: unknown reduction %d (want ReductionMean, ReductionSum or ReductionNone)", what, int(o.Reduction))
	return nil
}

// MSELoss is F.mse_loss with mean reduction: the mean of (pred - target)², a scalar.
func MSELoss(pred, target *Tensor) *Tensor { return MSELossWith(pred, target, LossOptions{}) }

// MSELossWith is F.mse_loss with a reduction: (pred - target)² averaged, summed, or elementwise.
func MSELossWith(pred, target *Tensor, o LossOptions) *Tensor {
	s := pred.state()
	s.own(target, "mse_loss")
	if !pred.Type().Equal(target.v.Type) {
		s.failf("mse_loss: shapes differ: %s, %s", pred.describe("input"), target.describe("target"))
	}
	if !pred.DType().IsFloat() {
		s.failf("mse_loss: needs float tensors, %s", pred.describe("input"))
	}
	d := pred.Sub(target)
	return o.reduce("mse_loss", d.Mul(d), pred.v.Type.Shape.NumElements())
}

// CrossEntropyLoss is F.cross_entropy with mean reduction for logits[N, C] and integer class
// labels[N]: the mean over the batch of -log_softmax(logits)[label], a scalar.
func CrossEntropyLoss(logits, labels *Tensor) *Tensor {
	return CrossEntropyLossWith(logits, labels, LossOptions{})
}

// CrossEntropyLossWith is F.cross_entropy with a reduction: NLLLoss of LogSoftmax(logits, 1).
func CrossEntropyLossWith(logits, labels *Tensor, o LossOptions) *Tensor {
	checkClassLoss("cross_entropy", logits, labels)
	return nll("cross_entropy", logits.LogSoftmax(1), labels, o)
}

// NLLLoss is F.nll_loss with mean reduction for log-probabilities[N, C] and integer class
// labels[N]: the mean over the batch of -logp[label], a scalar.
func NLLLoss(logp, labels *Tensor) *Tensor { return NLLLossWith(logp, labels, LossOptions{}) }

// NLLLossWith is F.nll_loss with a reduction.
func NLLLossWith(logp, labels *Tensor, o LossOptions) *Tensor {
	checkClassLoss("nll_loss", logp, labels)
	return nll("nll_loss", logp, labels, o)
}

func checkClassLoss(what string, x, labels *Tensor) {
	s := x.state()
	s.own(labels, what)
	if x.Rank() != 2 || labels.Rank() != 1 || labels.Dim(0) != x.Dim(0) || !labels.DType().IsInt() || !x.DType().IsFloat() {
		s.failf("%s: want logits[N, C] and integer labels[N]: %s, %s", what, x.describe("input"), labels.describe("target"))
	}
}

// nll picks -logp[i, labels[i]] with a one-hot mask (labels compared with an iota), so the
// gradient is the mask itself: no scatter is needed.
func nll(what string, logp, labels *Tensor, o LossOptions) *Tensor {
	n, c := logp.Dim(0), logp.Dim(1)
	b := &Builder{st: logp.s}
	rows := n
	if logp.v.Type.Sym != nil {
		rows = 1 // eq broadcasts the classes along the symbolic rows
	}
	classes := b.Iota(labels.DType(), 1, rows, c)
	picked := logp.Mul(classes.Eq(labels.Unsqueeze(1)).Cast(logp.DType()))
	if o.Reduction == ReductionNone {
		return picked.Sum(1).Neg()
	}
	return o.reduce(what, picked, n).Neg()
}

// BCEWithLogitsLoss is F.binary_cross_entropy_with_logits with mean reduction: for logits x and
// targets y in [0, 1] of one shape, the mean of -(y·log σ(x) + (1-y)·log(1-σ(x))).
func BCEWithLogitsLoss(logits, target *Tensor) *Tensor {
	return BCEWithLogitsLossWith(logits, target, LossOptions{})
}

// BCEWithLogitsLossWith is F.binary_cross_entropy_with_logits with a reduction. It is computed
// stably as max(x, 0) - x·y + log(1 + e^-|x|), which never overflows.
func BCEWithLogitsLossWith(logits, target *Tensor, o LossOptions) *Tensor {
	s := logits.state()
	s.own(target, "binary_cross_entropy_with_logits")
	if !logits.Type().Equal(target.v.Type) || !logits.DType().IsFloat() {
		s.failf("binary_cross_entropy_with_logits: want float logits and targets of one shape: %s, %s",
			logits.describe("input"), target.describe("target"))
	}
	l := logits.Relu().Sub(logits.Mul(target)).Add(logits.Abs().Neg().Exp().AddScalar(1).Log())
	return o.reduce("binary_cross_entropy_with_logits", l, logits.v.Type.Shape.NumElements())
}
