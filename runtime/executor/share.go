package executor

import (
	"fmt"

	"github.com/gcomp/gcomp/artifact"
)

// Share loads p's artifact again on dev, which must address the same device memory as p's device
// (another stream of the same CUDA context: a second cuda.Device opened on the same GPU). The new
// program has its own module, arena, scratch, input and output buffers, and p's parameter
// buffers: weights bound once serve every program sharing them, so runs can be in flight on
// several streams at once with one copy of the weights. SetParams on any of them writes the one
// copy (and must not overlap their runs). p must stay open while the programs sharing its
// parameters are in use, and programs with state on the device (Feedback) do not share.
func (p *Program) Share(dev Device) (*Program, error) {
	if len(p.feedback) > 0 {
		return nil, fmt.Errorf("a program with state on the device (Feedback) cannot share its parameters")
	}
	if p.mod == nil {
		return nil, fmt.Errorf("the program is closed")
	}
	return load(dev, p.art, p.bufs[artifact.ArgParam])
}
