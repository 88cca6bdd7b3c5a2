package train

import (
	"math"

	"github.com/gcomp/gcomp/tensor"
)

// Metrics are what an epoch measured on a dataset. The loss is always there; the others are
// NaN where they do not fit the loss: Accuracy for classification (CrossEntropyLoss, NLLLoss:
// the largest score, the first on a tie, is the label's; BCEWithLogitsLoss: a positive logit
// predicts a target ≥ 0.5), MSE and MAE for regression (MSELoss, L1Loss, SmoothL1Loss).
type Metrics struct {
	Loss     float64 // the mean loss
	Accuracy float64
	MSE, MAE float64
	Rows     int // the rows measured
}

// meter accumulates Metrics from batches.
type meter struct {
	l                    Loss
	correct, counted     int
	sumSq, sumAbs, elems float64
}

// add measures the first n rows of a batch's prediction against its targets.
func (m *meter) add(pred, target *tensor.Tensor, n int) {
	switch m.l.Name {
	case CrossEntropyLoss, NLLLoss:
		c := pred.Type.Shape[1]
		for i := range n {
			if m.l.IgnoreIndex != nil && target.I[i] == *m.l.IgnoreIndex {
				continue
			}
			row := pred.F[i*c : (i+1)*c]
			best := 0
			for j, v := range row {
				if v > row[best] {
					best = j
				}
			}
			if int64(best) == target.I[i] {
				m.correct++
			}
			m.counted++
		}
	case BCEWithLogitsLoss:
		per := pred.Len() / pred.Type.Shape[0]
		for i := range n * per {
			if (pred.F[i] > 0) == (target.F[i] >= 0.5) {
				m.correct++
			}
			m.counted++
		}
	default:
		per := pred.Len() / pred.Type.Shape[0]
		for i := range n * per {
			d := pred.F[i] - target.F[i]
			m.sumSq += d * d
			m.sumAbs += math.Abs(d)
			m.elems++
		}
	}
}

// metrics fills the measured fields of r.
func (m *meter) metrics(r *Metrics) {
	r.Accuracy, r.MSE, r.MAE = math.NaN(), math.NaN(), math.NaN()
	switch m.l.Name {
	case CrossEntropyLoss, NLLLoss, BCEWithLogitsLoss:
		r.Accuracy = float64(m.correct) / float64(m.counted)
	default:
		r.MSE, r.MAE = m.sumSq/m.elems, m.sumAbs/m.elems
	}
}
