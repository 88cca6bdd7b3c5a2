// Package mlp is the tutorial's two-layer network, nn.Sequential(nn.Linear(64, 32),
// nn.Linear(32, 10)), on a batch of 16.
package mlp

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
)

// Model builds the graph: input x f32[16,64], output y f32[16,10]. As in PyTorch's state_dict
// of a Sequential, the parameters are 0.weight, 0.bias, 1.weight and 1.bias.
func Model(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, b.Batch(16), 64)
	model := nn.NewSequential(
		nn.NewLinear(b, "0", 64, 32),
		nn.NewLinear(b, "1", 32, 10),
	)
	b.Output("y", model.Forward(x))
}
