package plan

import "github.com/gcomp/gcomp/ir/sym"

// ReshapeKept returns how many leading (pre) and trailing (suf) dims a reshape from sizes in to
// sizes out keeps, equal at every run's sizes: a coordinate there is its operand's, and only the
// dims between are linearized over out and delinearized over in. Merging attention's heads back
// ([2, seq, 2, 4] read as [2, seq, 8]) keeps [2, seq] and splits 8 into [2, 4] by immediates,
// where linearizing and delinearizing every dim divides by seq again per element
// (codegen/ptx's and codegen/nvvm's symfold_reduce_view.go).
func ReshapeKept(out, in []sym.Expr) (pre, suf int) {
	n := min(len(out), len(in))
	for pre < n && out[pre].Equal(in[pre]) {
		pre++
	}
	for pre+suf < n && out[len(out)-1-suf].Equal(in[len(in)-1-suf]) {
		suf++
	}
	return pre, suf
}
