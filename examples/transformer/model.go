// Package transformer is one nn.TransformerEncoderLayer(d_model=64, nhead=4,
// dim_feedforward=128, dropout=0, activation="gelu", batch_first=True): post-norm, layer-norm
// eps 1e-5, over a batch of 2 sequences of 16.
package transformer

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
)

// Model builds the graph: input src f32[2,16,64], output y f32[2,16,64]. The layer is the whole
// model, so its parameters have the layer's own state_dict names: self_attn.in_proj_weight,
// linear1.weight, norm1.weight and so on.
func Model(b *frontend.Builder) {
	src := b.Input("src", frontend.F32, b.Batch(2), 16, 64)
	layer := nn.NewTransformerEncoderLayer(b, "", 64, 4, nn.TransformerEncoderLayerOptions{
		DimFeedforward: 128,
		Dropout:        0,
		Activation:     "gelu",
		LayerNormEps:   1e-5,
		BatchFirst:     true,
	})
	b.Output("y", layer.Forward(src))
}
