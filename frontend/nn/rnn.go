package nn

import (
	"strconv"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// RNNOptions are the optional arguments of NewRNN, NewLSTM and NewGRU; zero values mean
// PyTorch's defaults.
type RNNOptions struct {
	NumLayers    int     // default 1
	Nonlinearity string  // RNN only: "tanh" (default) or "relu"
	BatchFirst   bool    // inputs and outputs are [B, T, F] rather than [T, B, F]
	NoBias       bool    // PyTorch's bias=False
	Dropout      float64 // on the output of every layer but the last, in training mode only (rnn_dropout.go)
}

// CellOptions are the optional arguments of NewRNNCell, NewLSTMCell and NewGRUCell.
type CellOptions struct {
	Nonlinearity string // RNNCell only: "tanh" (default) or "relu"
	NoBias       bool
}

// declareWeights declares one layer's weights, "weight_ih"+suffix etc., all U(±1/√hidden) as
// in PyTorch, for gates gate blocks of size hidden.
func declareWeights(s *frontend.Builder, suffix string, in, hidden, gates int, noBias bool) frontend.RNNWeights {
	init := frontend.DefaultUniform(hidden)
	w := frontend.RNNWeights{
		WeightIH: s.Param("weight_ih"+suffix, ir.T(ir.F32, gates*hidden, in), init),
		WeightHH: s.Param("weight_hh"+suffix, ir.T(ir.F32, gates*hidden, hidden), init),
	}
	if !noBias {
		w.BiasIH = s.Param("bias_ih"+suffix, ir.T(ir.F32, gates*hidden), init)
		w.BiasHH = s.Param("bias_hh"+suffix, ir.T(ir.F32, gates*hidden), init)
	}
	return w
}

// Recurrent holds the sizes and parameters RNN, LSTM and GRU share.
type Recurrent struct {
	InputSize, HiddenSize, NumLayers int
	BatchFirst                       bool
	Dropout                          float64 // between layers, in training mode
	// Layers holds each layer's parameters: "weight_ih_l0", "weight_hh_l0", "bias_ih_l0",
	// "bias_hh_l0", then "..._l1" and so on.
	Layers []frontend.RNNWeights
}

func newRecurrent(b *frontend.Builder, kind, name string, in, hidden, gates int, o RNNOptions) Recurrent {
	checkDropout(b, o.Dropout)
	if kind != "rnn" && o.Nonlinearity != "" {
		b.Fail("%s: nonlinearity is an option of RNN only", kind)
	}
	if in < 1 || hidden < 1 || o.NumLayers < 0 {
		b.Fail("%s: bad sizes: input %d, hidden %d, layers %d", kind, in, hidden, o.NumLayers)
	}
	r := Recurrent{InputSize: in, HiddenSize: hidden, NumLayers: max(o.NumLayers, 1), BatchFirst: o.BatchFirst, Dropout: o.Dropout}
	s := b.Sub(name)
	for l := range r.NumLayers {
		size := in
		if l > 0 {
			size = hidden
		}
		r.Layers = append(r.Layers, declareWeights(s, "_l"+strconv.Itoa(l), size, hidden, gates, o.NoBias))
	}
	return r
}

// RNN is nn.RNN: a multi-layer Elman RNN, unrolled over the fixed sequence length.
type RNN struct {
	Recurrent
	Relu bool // nonlinearity "relu" instead of tanh
}

// NewRNN declares the parameters of nn.RNN(inputSize, hiddenSize, ...) in b's scope under name.
func NewRNN(b *frontend.Builder, name string, inputSize, hiddenSize int, opts ...RNNOptions) *RNN {
	o := one(b, opts)
	relu := nonlinearity(b, o.Nonlinearity)
	return &RNN{Recurrent: newRecurrent(b, "rnn", name, inputSize, hiddenSize, 1, o), Relu: relu}
}

// Forward runs the RNN over x ([B, T, I] with BatchFirst, else [T, B, I]) from the initial
// hidden state h0 [NumLayers, B, H] (nil for zeros). It returns the output at every step and h_n.
func (m *RNN) Forward(x, h0 *frontend.Tensor) (out, hn *frontend.Tensor) {
	if !m.dropping(x, h0) {
		return frontend.RNN(x, h0, m.Layers, m.Relu, m.BatchFirst)
	}
	out, st := m.layerByLayer(x, []*frontend.Tensor{h0}, func(x *frontend.Tensor, l []frontend.RNNWeights, st []*frontend.Tensor) (*frontend.Tensor, []*frontend.Tensor) {
		out, hn := frontend.RNN(x, st[0], l, m.Relu, m.BatchFirst)
		return out, []*frontend.Tensor{hn}
	})
	return out, st[0]
}

// LSTM is nn.LSTM: a multi-layer LSTM with gates i, f, g, o, unrolled over the fixed sequence
// length.
type LSTM struct{ Recurrent }

// NewLSTM declares the parameters of nn.LSTM(inputSize, hiddenSize, ...) in b's scope under
// name: "name.weight_ih_l0" [4H, I] and so on.
func NewLSTM(b *frontend.Builder, name string, inputSize, hiddenSize int, opts ...RNNOptions) *LSTM {
	return &LSTM{newRecurrent(b, "lstm", name, inputSize, hiddenSize, 4, one(b, opts))}
}

// Forward runs the LSTM over x from the initial states h0 and c0 [NumLayers, B, H] (nil for
// zeros). It returns the output at every step, h_n and c_n, as PyTorch's
// out, (h_n, c_n) = lstm(x, (h0, c0)).
func (m *LSTM) Forward(x, h0, c0 *frontend.Tensor) (out, hn, cn *frontend.Tensor) {
	if !m.dropping(x, h0, c0) {
		return frontend.LSTM(x, h0, c0, m.Layers, m.BatchFirst)
	}
	out, st := m.layerByLayer(x, []*frontend.Tensor{h0, c0}, func(x *frontend.Tensor, l []frontend.RNNWeights, st []*frontend.Tensor) (*frontend.Tensor, []*frontend.Tensor) {
		out, hn, cn := frontend.LSTM(x, st[0], st[1], l, m.BatchFirst)
		return out, []*frontend.Tensor{hn, cn}
	})
	return out, st[0], st[1]
}

// GRU is nn.GRU: a multi-layer GRU with gates r, z, n, unrolled over the fixed sequence length.
type GRU struct{ Recurrent }

// NewGRU declares the parameters of nn.GRU(inputSize, hiddenSize, ...) in b's scope under name:
// "name.weight_ih_l0" [3H, I] and so on.
func NewGRU(b *frontend.Builder, name string, inputSize, hiddenSize int, opts ...RNNOptions) *GRU {
	return &GRU{newRecurrent(b, "gru", name, inputSize, hiddenSize, 3, one(b, opts))}
}

// Forward runs the GRU over x from h0 [NumLayers, B, H] (nil for zeros) and returns the output
// at every step and h_n.
func (m *GRU) Forward(x, h0 *frontend.Tensor) (out, hn *frontend.Tensor) {
	if !m.dropping(x, h0) {
		return frontend.GRU(x, h0, m.Layers, m.BatchFirst)
	}
	out, st := m.layerByLayer(x, []*frontend.Tensor{h0}, func(x *frontend.Tensor, l []frontend.RNNWeights, st []*frontend.Tensor) (*frontend.Tensor, []*frontend.Tensor) {
		out, hn := frontend.GRU(x, st[0], l, m.BatchFirst)
		return out, []*frontend.Tensor{hn}
	})
	return out, st[0]
}

// RNNCell is nn.RNNCell: one step of an Elman RNN.
type RNNCell struct {
	InputSize, HiddenSize int
	Relu                  bool
	frontend.RNNWeights   // "weight_ih" [H, I], "weight_hh" [H, H], "bias_ih", "bias_hh" [H]
}

// NewRNNCell declares the parameters of nn.RNNCell(inputSize, hiddenSize) in b's scope.
func NewRNNCell(b *frontend.Builder, name string, inputSize, hiddenSize int, opts ...CellOptions) *RNNCell {
	o := one(b, opts)
	relu := nonlinearity(b, o.Nonlinearity)
	w := declareWeights(b.Sub(name), "", inputSize, hiddenSize, 1, o.NoBias)
	return &RNNCell{InputSize: inputSize, HiddenSize: hiddenSize, Relu: relu, RNNWeights: w}
}

// Forward returns the next hidden state for input x [B, I] and hidden state h [B, H] (nil for
// zeros).
func (m *RNNCell) Forward(x, h *frontend.Tensor) *frontend.Tensor {
	h = zeroState(x, h, m.HiddenSize)
	return frontend.RNNCell(x, h, m.WeightIH, m.WeightHH, m.BiasIH, m.BiasHH, m.Relu)
}

// LSTMCell is nn.LSTMCell: one step of an LSTM.
type LSTMCell struct {
	InputSize, HiddenSize int
	frontend.RNNWeights   // "weight_ih" [4H, I], "weight_hh" [4H, H], "bias_ih", "bias_hh" [4H]
}

// NewLSTMCell declares the parameters of nn.LSTMCell(inputSize, hiddenSize) in b's scope.
func NewLSTMCell(b *frontend.Builder, name string, inputSize, hiddenSize int, opts ...CellOptions) *LSTMCell {
	w := newCell(b, "lstm cell", name, inputSize, hiddenSize, 4, opts)
	return &LSTMCell{InputSize: inputSize, HiddenSize: hiddenSize, RNNWeights: w}
}

// Forward returns the next hidden and cell states (h', c') for input x [B, I] and states h, c
// [B, H] (nil for zeros).
func (m *LSTMCell) Forward(x, h, c *frontend.Tensor) (h2, c2 *frontend.Tensor) {
	h, c = zeroState(x, h, m.HiddenSize), zeroState(x, c, m.HiddenSize)
	return frontend.LSTMCell(x, h, c, m.WeightIH, m.WeightHH, m.BiasIH, m.BiasHH)
}

// GRUCell is nn.GRUCell: one step of a GRU.
type GRUCell struct {
	InputSize, HiddenSize int
	frontend.RNNWeights   // "weight_ih" [3H, I], "weight_hh" [3H, H], "bias_ih", "bias_hh" [3H]
}

// NewGRUCell declares the parameters of nn.GRUCell(inputSize, hiddenSize) in b's scope.
func NewGRUCell(b *frontend.Builder, name string, inputSize, hiddenSize int, opts ...CellOptions) *GRUCell {
	w := newCell(b, "gru cell", name, inputSize, hiddenSize, 3, opts)
	return &GRUCell{InputSize: inputSize, HiddenSize: hiddenSize, RNNWeights: w}
}

// Forward returns the next hidden state for input x [B, I] and hidden state h [B, H] (nil for
// zeros).
func (m *GRUCell) Forward(x, h *frontend.Tensor) *frontend.Tensor {
	h = zeroState(x, h, m.HiddenSize)
	return frontend.GRUCell(x, h, m.WeightIH, m.WeightHH, m.BiasIH, m.BiasHH)
}

// newCell declares the weights of an LSTM or GRU cell, which have no nonlinearity option.
func newCell(b *frontend.Builder, kind, name string, in, hidden, gates int, opts []CellOptions) frontend.RNNWeights {
	o := one(b, opts)
	if o.Nonlinearity != "" {
		b.Fail("%s: nonlinearity is an option of RNNCell only", kind)
	}
	return declareWeights(b.Sub(name), "", in, hidden, gates, o.NoBias)
}

// zeroState returns h, or zeros of x's batch shape and the hidden size when h is nil.
func zeroState(x, h *frontend.Tensor, hidden int) *frontend.Tensor {
	if h != nil {
		return h
	}
	dims := append(x.Shape()[:x.Rank()-1], hidden)
	return x.Builder().Zeros(x.DType(), dims...)
}

func nonlinearity(b *frontend.Builder, s string) bool {
	switch s {
	case "", "tanh":
		return false
	case "relu":
		return true
	}
	b.Fail(`rnn: nonlinearity must be "tanh" or "relu", have %q`, s)
	return false
}
