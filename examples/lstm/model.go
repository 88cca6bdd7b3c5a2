// Package lstm is the tutorial's LSTM: nn.LSTM(16, 32, num_layers=2, batch_first=True) over a
// batch of 4 sequences of 10 steps, unrolled.
package lstm

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
)

// The sizes.
const (
	Batch      = 4
	SeqLen     = 10
	InputSize  = 16
	HiddenSize = 32
	NumLayers  = 2
)

// Model builds the graph: inputs x f32[4,10,16], h0 and c0 f32[2,4,32]; outputs out
// f32[4,10,32], h_n and c_n f32[2,4,32]. The parameters are lstm.weight_ih_l0 and so on, as in
// the state_dict of the tutorial's module, whose LSTM is called lstm.
func Model(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, b.Batch(Batch), SeqLen, InputSize)
	h0 := b.Input("h0", frontend.F32, NumLayers, b.Batch(Batch), HiddenSize)
	c0 := b.Input("c0", frontend.F32, NumLayers, b.Batch(Batch), HiddenSize)
	lstm := nn.NewLSTM(b, "lstm", InputSize, HiddenSize, nn.RNNOptions{NumLayers: NumLayers, BatchFirst: true})
	out, hn, cn := lstm.Forward(x, h0, c0)
	b.Output("out", out)
	b.Output("h_n", hn)
	b.Output("c_n", cn)
}
