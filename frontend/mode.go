package frontend

import "github.com/gcomp/gcomp/ir"

// A model runs in eval mode (PyTorch's model.eval(): dropout passes its input through,
// BatchNorm uses its running statistics) unless it is built WithTraining, as `gcomp train`
// builds it (model.train()). Modules ask b.Training().

// RandomKeyName is the input a training graph's random numbers derive from: an i64 scalar that
// the training step advances after every step (train.StepFromGraph makes it state).
const RandomKeyName = "rng.key"

// mode is what a graph is built for, and the random streams handed out so far.
type mode struct {
	training bool
	streams  int
	key      *Tensor
}

// WithTraining builds the graph in training mode.
func WithTraining() Option { return func(s *state) { s.mode.training = true } }

// Training reports whether the graph is built in training mode.
func (b *Builder) Training() bool { return b.st.mode.training }

// RandomKey returns the training graph's random key, the i64 scalar input RandomKeyName,
// declaring it on first use.
func (b *Builder) RandomKey() *Tensor {
	if b.st.mode.key == nil {
		root := &Builder{st: b.st}
		b.st.mode.key = root.Input(RandomKeyName, ir.I64)
	}
	return b.st.mode.key
}

// NextStream returns a stream number no earlier call returned, so every random op of a graph
// draws an independent sequence from the same key (the order of the calls, which is the model's
// order of layers, numbers them).
func (b *Builder) NextStream() int {
	n := b.st.mode.streams
	b.st.mode.streams++
	return n
}

// BufferPrefix starts the output that carries a buffer's value after a training step
// ("buffer.bn1.running_mean"): train.StepFromGraph feeds it back into the parameter of that name
// and leaves the parameter out of the optimizer, as PyTorch's registered buffers.
const BufferPrefix = "buffer."

// UpdateBuffer declares that after a training step the parameter p (a buffer: BatchNorm's
// running statistics) holds v, of p's type.
func (b *Builder) UpdateBuffer(p, v *Tensor) {
	s := b.st
	s.own(p, "update buffer")
	if p.v.Op != ir.OpParam || !v.Type().Equal(p.v.Type) {
		s.failf("update buffer: want a parameter and a value of its type: %s, %s", p.describe("buffer"), v.describe("value"))
	}
	(&Builder{st: s}).Output(BufferPrefix+p.v.Name, v)
}
