package ptx

import (
	"slices"

	"github.com/gcomp/gcomp/ir"
)

// The direct template at symbolic sizes: a contraction the tiles do not take (an operand
// computed inside the kernel, such as the constant ones vector of an adaptive average pooling)
// runs one thread per result element over the run's result elements, the size parameter
// bounding the grid-stride loop. The result's rows lead (Kernel.Rows), and every operand either
// leads with them too or is static, so the bound's index arithmetic reads and writes the run's
// first rows exactly. Not taken when the rows are contracted (the result is static: symfold.go
// folds them) or when views move the symbolic dims (Kernel.Sizes: symstride.go), but for a
// conv's weight gradient, whose taps it stops at the run's (symconv.go).

// symDirectTakes reports whether symbolic kernel k may take the direct template for dot.
func symDirectTakes(k Kernel, dot *ir.Value) bool {
	return convFolds(k, dot) || k.Symbolic && k.Sizes == nil && k.Rows > 0 && (dot.Op == "conv2d" || !slices.Contains(dot.Attrs.Ints("lhs_contract"), 0))
}

// symDirect declares a symbolic direct kernel's size parameter, its result elements at the
// run's sizes, and returns it with the loop's work; "" and nothing for a static kernel. A
// folding conv's parameter is its taps instead (symconv.go): its elements stay the bound's.
func symDirect(k Kernel, gn *gen, b *builder, args *[]Arg, dot *ir.Value) (string, *SymWork, error) {
	if !k.Symbolic {
		return "", nil, nil
	}
	if convFolds(k, dot) { // a conv's weight gradient: its elements are static, its taps not
		w, err := symConvFold(k, gn, b, args, dot)
		return "", w, err
	}
	n, scale, err := symSize(k, b, args, dot.Type.Shape.NumElements(), "element count")
	if err != nil {
		return "", nil, err
	}
	return n, &SymWork{Vector: 1, Block: loopBlock, MaxBlocks: maxLoopBlocks, Scale: scale}, nil
}
