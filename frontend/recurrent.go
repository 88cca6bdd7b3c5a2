package frontend

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// RNNWeights are one layer's parameters of an RNN, LSTM or GRU, named as in PyTorch:
// WeightIH [G·H, I], WeightHH [G·H, H], BiasIH and BiasHH [G·H] (nil without bias), where G is 1
// for an RNN, 4 for an LSTM (gates i, f, g, o) and 3 for a GRU (gates r, z, n).
type RNNWeights struct {
	WeightIH, WeightHH, BiasIH, BiasHH *Tensor
}

// RNN runs a multi-layer Elman RNN (torch's nn.RNN forward) unrolled over the sequence: x is
// [B, T, I] with batchFirst, else [T, B, I], or [T, I] unbatched; h0 is [L, B, H] ([L, H]
// unbatched), or nil for zeros. It returns the last layer's output at every step ([B, T, H] or
// [T, B, H]) and the final hidden state of every layer, h_n [L, B, H]. The nonlinearity is tanh,
// or relu when relu is set.
func RNN(x, h0 *Tensor, layers []RNNWeights, relu, batchFirst bool) (out, hn *Tensor) {
	out, hn, _ = unroll("rnn", x, h0, nil, layers, batchFirst, func(gi, h, _ *Tensor, w RNNWeights) (*Tensor, *Tensor) {
		g := gi.Add(Linear(h, w.WeightHH, w.BiasHH))
		if relu {
			return g.Relu(), nil
		}
		return g.Tanh(), nil
	})
	return out, hn
}

// LSTM runs a multi-layer LSTM (nn.LSTM's forward) unrolled over the sequence, with the shapes
// of RNN; c0 is like h0. It returns the output, h_n and c_n.
func LSTM(x, h0, c0 *Tensor, layers []RNNWeights, batchFirst bool) (out, hn, cn *Tensor) {
	return unroll("lstm", x, h0, c0, layers, batchFirst, func(gi, h, c *Tensor, w RNNWeights) (*Tensor, *Tensor) {
		return lstmStep(gi, h, c, w.WeightHH, w.BiasHH)
	})
}

// GRU runs a multi-layer GRU (nn.GRU's forward) unrolled over the sequence, with the shapes of
// RNN. It returns the output and h_n.
func GRU(x, h0 *Tensor, layers []RNNWeights, batchFirst bool) (out, hn *Tensor) {
	out, hn, _ = unroll("gru", x, h0, nil, layers, batchFirst, func(gi, h, _ *Tensor, w RNNWeights) (*Tensor, *Tensor) {
		return gruStep(gi, h, w.WeightHH, w.BiasHH), nil
	})
	return out, hn
}

// unroll runs the layers of a recurrent network. For each layer it projects the whole input
// sequence at once (one matrix product for all steps), then runs step over the time steps with
// the layer's state; the outputs of one layer are the next layer's input.
func unroll(what string, x, h0, c0 *Tensor, layers []RNNWeights, batchFirst bool,
	step func(gi, h, c *Tensor, w RNNWeights) (*Tensor, *Tensor)) (out, hn, cn *Tensor) {
	s := x.state()
	if len(layers) == 0 {
		s.failf("%s: no layers", what)
	}
	hidden := layers[0].WeightHH.Dim(1)
	unbatched := x.Rank() == 2
	if x.Rank() != 2 && x.Rank() != 3 || x.Dim(-1) != layers[0].WeightIH.Dim(1) {
		order := "[T, B, I]"
		if batchFirst {
			order = "[B, T, I]"
		}
		s.failf("%s: want an input %s or [T, I] with I = %d, %s", what, order, layers[0].WeightIH.Dim(1), x.describe("input"))
	}
	tdim := 0
	if batchFirst && !unbatched {
		tdim = 1
	}
	if unbatched {
		x = x.Unsqueeze(1)
	}
	batch, steps := x.Dim(1-tdim), x.Dim(tdim)
	// The states' batch is the input's, symbolic or not.
	want := ir.T(x.DType(), len(layers), batch, hidden)
	if s.symbolic() {
		var err error
		if want, err = ir.SymType(x.DType(), s.g.Ranges(), sym.Const(int64(len(layers))), x.v.Type.Axis(1-tdim), sym.Const(int64(hidden))); err != nil {
			s.failf("%s: %v", what, err)
		}
	}
	state := func(t *Tensor, name string) *Tensor {
		if t == nil {
			return s.constant(0, want)
		}
		s.own(t, what)
		if unbatched {
			t = t.Unsqueeze(1)
		}
		if !t.v.Type.Equal(want) {
			s.failf("%s: %s has the wrong shape, want %s", what, named(t, name), want)
		}
		return t
	}
	h0 = state(h0, "h0")
	if what == "lstm" {
		c0 = state(c0, "c0")
	}
	var hs, cs []*Tensor
	in := x
	for l, w := range layers {
		gi := Linear(in, w.WeightIH, w.BiasIH)
		h := h0.Index(0, l)
		var c *Tensor
		if c0 != nil {
			c = c0.Index(0, l)
		}
		outs := make([]*Tensor, steps)
		for t := range steps {
			h, c = step(gi.Index(tdim, t), h, c, w)
			outs[t] = h
		}
		in = Stack(tdim, outs...)
		hs, cs = append(hs, h), append(cs, c)
	}
	out, hn = in, Stack(0, hs...)
	if c0 != nil {
		cn = Stack(0, cs...)
	}
	if unbatched {
		out, hn = out.Squeeze(1), hn.Squeeze(1)
		if cn != nil {
			cn = cn.Squeeze(1)
		}
	}
	return out, hn, cn
}
