package nn

import "github.com/gcomp/gcomp/frontend"

// The dropout option of RNN, LSTM and GRU drops the output of every layer but the last, in
// training mode only, as PyTorch's nn.LSTM(..., dropout=p): in eval mode (what gcomp builds for
// inference) the stacked layers run as one (frontend.RNN and its kin), so a checkpoint trained
// with dropout loads and runs unchanged.

// dropping reports whether the layers must run one at a time with dropout between them: in
// training mode, with dropout, more than one layer, and initial states of one row per layer
// (other states go to the stacked path, whose error names them).
func (r *Recurrent) dropping(x *frontend.Tensor, states ...*frontend.Tensor) bool {
	if !x.Builder().Training() || r.Dropout == 0 || r.NumLayers < 2 {
		return false
	}
	for _, s := range states {
		if s != nil && (s.Rank() < 1 || s.Dim(0) != r.NumLayers) {
			return false
		}
	}
	return true
}

// layerByLayer runs layer l of the net through run, from row l of each initial state (nil for
// zeros), feeding each layer's output through dropout to the next, and returns the last output
// and the final states of all layers stacked as PyTorch's h_n (and c_n).
func (r *Recurrent) layerByLayer(x *frontend.Tensor, states []*frontend.Tensor,
	run func(x *frontend.Tensor, layer []frontend.RNNWeights, states []*frontend.Tensor) (*frontend.Tensor, []*frontend.Tensor)) (*frontend.Tensor, []*frontend.Tensor) {
	finals := make([][]*frontend.Tensor, len(states))
	for l := range r.NumLayers {
		if l > 0 {
			x = Dropout{P: r.Dropout}.Forward(x)
		}
		row := make([]*frontend.Tensor, len(states))
		for i, s := range states {
			if s != nil {
				row[i] = s.Narrow(0, l, 1)
			}
		}
		var out []*frontend.Tensor
		x, out = run(x, r.Layers[l:l+1], row)
		for i, s := range out {
			finals[i] = append(finals[i], s)
		}
	}
	stacked := make([]*frontend.Tensor, len(states))
	for i, f := range finals {
		stacked[i] = frontend.Cat(0, f...)
	}
	return x, stacked
}
