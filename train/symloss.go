package train

import (
	"fmt"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// A model over a symbolic batch (frontend.WithMaxBatch: the dim batch leads its input and its
// prediction) trains with one step artifact at every batch in range, so an epoch's last partial
// batch runs at its own size: no padding, no second build. Its loss graph is built over the same
// dim: the loss's inputs lead with batch, and the mean divides by the run's count.

// lossBatch returns the options and the input sizes WithLoss builds the loss graph of a
// prediction of type pt with, over fwd's dims: none for a static fwd; for one over the dim
// batch, the max batch and pt's sizes with the batch's handle first. Anything else is refused.
func lossBatch(fwd *ir.Graph, pt ir.Type) ([]frontend.Option, func(b *frontend.Builder, t ir.Type) []int, error) {
	static := func(_ *frontend.Builder, t ir.Type) []int { return t.Shape }
	if len(fwd.Dims) == 0 {
		return nil, static, nil
	}
	d := fwd.Dims[0]
	if len(fwd.Dims) != 1 || d.Name != frontend.BatchDim || d.Lo != 1 || pt.Sym == nil || pt.Sym[0].String() != d.Name {
		return nil, nil, fmt.Errorf("graph %s has dims %v and prediction %s: a model trains over one symbolic dim, batch in [1,N], leading its prediction (frontend.WithMaxBatch)", fwd.Name, fwd.Dims, pt)
	}
	for _, e := range pt.Sym[1:] {
		if _, ok := e.IsConst(); !ok {
			return nil, nil, fmt.Errorf("graph %s: prediction %s has a symbolic dim after the batch", fwd.Name, pt)
		}
	}
	sizes := func(b *frontend.Builder, t ir.Type) []int {
		s := []int(t.Shape.Clone())
		s[0] = b.Batch(d.Hi)
		return s
	}
	return []frontend.Option{frontend.WithMaxBatch(d.Hi)}, sizes, nil
}

// StepsPerEpoch is the number of train steps an epoch of n rows takes in batches of batch: the
// whole batches, and with partial (a model over a symbolic batch) a last smaller one.
func StepsPerEpoch(n, batch int, partial bool) int {
	if partial && n%batch != 0 {
		return n/batch + 1
	}
	return n / batch
}

// classIota is the class index of every score of x [N,C], the one-hot's left side: an iota
// [N,C] for a static batch; over a symbolic batch one row [1,C] the comparison broadcasts along
// the run's rows, as frontend's class losses do, since an iota has static sizes.
func classIota(b *frontend.Builder, dt ir.DType, x *frontend.Tensor) *frontend.Tensor {
	rows := x.Dim(0)
	if x.Type().Sym != nil {
		rows = 1
	}
	return b.Iota(dt, 1, rows, x.Dim(1))
}
