package frontend

import "fmt"

// A model traced WithMaxBatch(n) leaves its batch open until run time: Builder.Batch returns the
// handle of the dim "batch", declared in [1, n] at the first call, so every shape that carries
// the batch carries the dim (docs/dynamic.md). One build of the graph then runs at every batch in
// range, a training step's last partial batch among them. A model that uses the batch as a
// number (a size computed from it, a constant of that many rows) fails where the DSL meets it,
// naming the line, as for any dim.

// WithMaxBatch builds the graph over a symbolic batch in [1, n]. n must be positive; it excludes
// WithBatch.
func WithMaxBatch(n int) Option { return func(s *state) { s.batch.max = n } }

// maxBatch is Batch's answer under WithMaxBatch: the batch dim's handle, declared once.
func (b *Builder) maxBatch() int {
	s := b.st
	if s.batch.dim == 0 {
		s.batch.dim = b.Dim(BatchDim, 1, s.batch.max)
	}
	return s.batch.dim
}

// BatchDim is the name of the dim WithMaxBatch declares.
const BatchDim = "batch"

// checkMaxBatch is Build's check of WithMaxBatch before the model runs.
func (s *state) checkMaxBatch() error {
	switch {
	case s.batch.max == 0:
		return nil
	case s.batch.max < 0:
		return &Error{Msg: fmt.Sprintf("max batch: must be positive, have %d", s.batch.max)}
	case s.batch.want != 0:
		return &Error{Msg: fmt.Sprintf("batch %d and max batch %d both asked for: a batch is either fixed or bounded", s.batch.want, s.batch.max)}
	}
	return nil
}
