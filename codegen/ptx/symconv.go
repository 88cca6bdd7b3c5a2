package ptx

import (
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
)

// A convolution's weight gradient over a symbolic batch (the compiler's symconv.go): dW =
// conv2d(x viewed [C/G, G·batch, H, W], dy viewed [O, batch, OH, OW]) contracts the batch as its
// input channels. Its operands are views, so the direct template computes it (as it does in the
// static build), one thread per element of the static result; each element's loop over its K
// taps, batch-major (channel, then the OH·OW kernel positions), stops at K at the run's sizes,
// the size parameter (the run's rows times OH·OW). The taps it takes are the static kernel's at
// the run's batch, in its order, so the two agree bit for bit; the grid is the bound's (the
// result is static: the work's axis is z, one block), and so is every index: the operands' rows
// lead their buffers, where the first rows at the bound are the run's.

// convFolds reports whether dot, the contraction of symbolic kernel k, is such a fold.
func convFolds(k Kernel, dot *ir.Value) bool { return plan.ConvFolds(k, dot) }

// convTaps is a conv2d's K: the weight's input channels per group times its kernel positions.
func convTaps(dot *ir.Value) int {
	w := dot.Args[1].Type.Shape
	return w[1] * w[2] * w[3]
}

// symConvFold declares a folding conv's K parameter and sets it as the end of gn's tap loops.
func symConvFold(k Kernel, gn *gen, b *builder, args *[]Arg, dot *ir.Value) (*SymWork, error) {
	n, w, err := symFold(k, b, args, convTaps(dot))
	gn.foldK = n
	return w, err
}

// tapsEnd is the end of a direct contraction's loop over its K products: K, or at the run's
// sizes for a folding conv.
func (gn *gen) tapsEnd(k int) string {
	if gn.foldK != "" {
		return gn.foldK
	}
	return imm(k)
}

// foldStageSize is the size hook of persistent kernel stage st (stageSize's size) when its
// contraction is a folding conv: the stage's elements are static, and the size parameter is its
// taps at the run's sizes, the end of gn's tap loops. Another stage keeps size.
func foldStageSize(st Kernel, gn *gen, size func(units int) (string, error)) func(units int) (string, error) {
	gn.foldK = ""
	for _, v := range live(st.Graph) {
		if v.Op == "conv2d" && convFolds(st, v) {
			return func(units int) (string, error) {
				n, err := size(convTaps(v))
				gn.foldK = n
				return imm(units), err
			}
		}
	}
	return size
}
