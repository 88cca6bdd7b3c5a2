package frontend

import (
	"errors"
	"strconv"
)

// A model's batch is chosen when it is traced: the model asks b.Batch(64) for it wherever a
// shape carries the batch (an input's first dim, an RNN's initial state), 64 being the file's own
// batch, used when no other is chosen. A loader that traces the model at another batch passes
// WithBatch; a model that never asks cannot be traced at another batch, and Build says so.

// batchState is the batch asked for (WithBatch; 0 means the file's own) and the file's own batch
// with the position of the first call that declared it.
type batchState struct {
	want int
	def  int
	pos  string
	max  int // WithMaxBatch's bound (maxbatch.go), and the batch dim's handle once declared
	dim  int
}

// WithBatch builds the graph at batch n: Builder.Batch returns n instead of the model's own
// number. n must be positive, and the model must call Batch (Build fails otherwise, since the
// graph it builds would not be at batch n).
func WithBatch(n int) Option { return func(s *state) { s.batch.want = n } }

// Batch returns the batch the graph is built at: def, the model file's own batch, unless the
// graph is built WithBatch. Every call of one model must give the same def.
//
//	x := b.Input("x", frontend.F32, b.Batch(64), 784)
func (b *Builder) Batch(def int) int {
	s := b.st
	if def <= 0 {
		s.failf("batch: the default batch must be positive, have %d", def)
	}
	if s.batch.def == 0 {
		s.batch.def, s.batch.pos = def, s.pos()
	} else if def != s.batch.def {
		s.failf("batch: the default batch is %d here but %d at %s", def, s.batch.def, orUnknown(s.batch.pos))
	}
	if s.batch.want > 0 {
		return s.batch.want
	}
	if s.batch.max > 0 {
		return b.maxBatch()
	}
	return def
}

// ErrNoBatch is what a build WithBatch fails with (errors.Is) when the model never calls
// Batch: its batch, if it has one, is fixed.
var ErrNoBatch = errors.New("the model declares no batch")

// checkBatch is Build's check, after the model ran, that a graph built WithBatch asked for its
// batch.
func (s *state) checkBatch() error {
	if want := max(s.batch.want, s.batch.max); want > 0 && s.batch.def == 0 {
		return &Error{Msg: "batch " + strconv.Itoa(want) + " asked for, but the model never declares its batch: " +
			"call b.Batch(N) where a shape carries it, as in b.Input(\"x\", frontend.F32, b.Batch(64), 784)", Err: ErrNoBatch}
	}
	return nil
}

// TracedBatch returns the batch the graph is built at so far: the one asked for WithBatch, else
// the model's own; 0 if the model has not called Batch (its batch, if any, is fixed). Under
// WithMaxBatch it is the bound.
func (b *Builder) TracedBatch() int {
	if b.st.batch.def == 0 {
		return 0
	}
	if b.st.batch.max > 0 {
		return b.st.batch.max
	}
	return b.Batch(b.st.batch.def)
}
