package nvvm

import (
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
)

// A convolution's weight gradient over a symbolic batch, as codegen/ptx's symconv.go: dW =
// conv2d(x viewed [C/G, G·batch, H, W], dy viewed [O, batch, OH, OW]) contracts the batch as its
// input channels, so the direct template computes it, one thread per element of the static
// result, each element's loop over its taps (batch-major: channel, then the kernel positions)
// stopping at K at the run's sizes, the size parameter (plan.ConvFolds). The taps are the static
// kernel's at the run's batch, in its order; the grid and every index are the bound's (the
// operands' rows lead their buffers). A persistent kernel's stage computing one does the same,
// its size parameter the taps (sympersist.go).

// symConvFold returns the parameters and work of such a fold (the taps' parameter, the work
// of a fold: one block along z) with ok; nothing for another contraction.
func symConvFold(k plan.Kernel, dot *irg.Value) ([]plan.Arg, *plan.SymWork, bool, error) {
	if !plan.ConvFolds(k, dot) {
		return nil, nil, false, nil
	}
	args, work, err := symFoldArgs(k, convTaps(dot))
	return args, work, true, err
}

// convTaps is a conv2d's K: the weight's input channels per group times its kernel positions.
func convTaps(dot *irg.Value) int {
	w := dot.Args[1].Type.Shape
	return w[1] * w[2] * w[3]
}

// tapsEnd is the end of a direct contraction's loop over its K products: K, or at the run's
// sizes for a folding conv (kg.foldK).
func (kg *kgen) tapsEnd(k int) value.Value {
	if kg.foldK != nil {
		return kg.foldK
	}
	return ci(k)
}
