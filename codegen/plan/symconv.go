package plan

import "github.com/gcomp/gcomp/ir"

// ConvFolds reports whether dot, the contraction of kernel k, is a convolution's weight
// gradient over a symbolic batch (the compiler's symconv.go): a conv2d in a symbolic kernel
// whose weight operand has sizes, its input channels symbolic (the batch it contracts), and
// whose result has none. codegen/ptx's direct template stops its taps at K at the run's sizes
// (its symconv.go).
func ConvFolds(k Kernel, dot *ir.Value) bool {
	if !k.Symbolic || dot.Op != "conv2d" || k.Sizes == nil || k.Sizes[dot] != nil {
		return false
	}
	w := k.Sizes[dot.Args[1]]
	if len(w) != 4 {
		return false
	}
	_, static := w[1].IsConst()
	return !static
}

// FoldsConv reports whether kernel k, or a stage of it, computes such a weight gradient.
func FoldsConv(k Kernel) bool {
	for _, st := range append([]Kernel{k}, k.Stages...) {
		for _, v := range st.Graph.Values {
			if v.Op == "conv2d" && ConvFolds(st, v) {
				return true
			}
		}
	}
	return false
}
