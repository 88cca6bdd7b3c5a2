// Package vit is a small Vision Transformer written the way PyTorch sources commonly write one,
// ported line by line: a patch embedding convolution, a class token and learned position
// embeddings, nn.TransformerEncoder over pre-norm nn.TransformerEncoderLayers with PyTorch's
// default dropout=0.1 (inactive in eval mode, as here; it drops when trained), a final LayerNorm
// and a linear head on the class token. It classifies a batch of 2 RGB images of 32×32 cut into
// 16 patches of 8×8 into 10 classes.
package vit

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
)

// ViT holds the modules under their PyTorch attribute names.
type ViT struct {
	PatchEmbed *nn.Conv2d             // "patch_embed": Conv2d(3, dim, patch, stride=patch)
	ClsToken   *frontend.Tensor       // "cls_token" [1, 1, dim]
	PosEmbed   *frontend.Tensor       // "pos_embed" [1, patches+1, dim]
	PosDrop    nn.Dropout             // "pos_drop": Dropout(0.1)
	Encoder    *nn.TransformerEncoder // "encoder.layers.i.*"
	Norm       *nn.LayerNorm          // "norm"
	Head       *nn.Linear             // "head"
}

// NewViT declares the model for images of size image×image cut into patch×patch patches.
func NewViT(b *frontend.Builder, image, patch, dim, depth, heads, mlpDim, numClasses int) *ViT {
	n := (image / patch) * (image / patch)
	layer := nn.TransformerEncoderLayerOptions{
		DimFeedforward: mlpDim,
		Dropout:        0.1,
		Activation:     "gelu",
		BatchFirst:     true,
		NormFirst:      true,
	}
	return &ViT{
		PatchEmbed: nn.NewConv2d(b, "patch_embed", 3, dim, patch, nn.Conv2dOptions{Stride: patch}),
		ClsToken:   b.Param("cls_token", frontend.T(frontend.F32, 1, 1, dim), frontend.Normal(0, 0.02)),
		PosEmbed:   b.Param("pos_embed", frontend.T(frontend.F32, 1, n+1, dim), frontend.Normal(0, 0.02)),
		PosDrop:    nn.Dropout{P: 0.1},
		Encoder:    nn.NewTransformerEncoder(b, "encoder", dim, heads, depth, nn.TransformerEncoderOptions{Layer: layer}),
		Norm:       nn.NewLayerNorm(b, "norm", dim),
		Head:       nn.NewLinear(b, "head", dim, numClasses),
	}
}

// Forward maps images [B, 3, H, W] to class scores [B, classes].
func (m *ViT) Forward(x *frontend.Tensor) *frontend.Tensor {
	x = m.PatchEmbed.Forward(x)          // [B, dim, H/P, W/P]
	x = x.Flatten(2, -1).Transpose(1, 2) // [B, patches, dim]
	cls := m.ClsToken.Expand(x.Size(0), -1, -1)
	x = frontend.Cat(1, cls, x).Add(m.PosEmbed)
	x = m.PosDrop.Forward(x)
	x = m.Encoder.Forward(x)
	x = m.Norm.Forward(x)
	return m.Head.Forward(x.Index(1, 0)) // the class token
}

// Model builds the ViT: input x f32[2,3,32,32], output logits f32[2,10].
func Model(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, b.Batch(2), 3, 32, 32)
	b.Output("logits", NewViT(b, 32, 8, 64, 2, 4, 128, 10).Forward(x))
}
