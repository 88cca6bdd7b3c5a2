package ptx

import "fmt"

// The update template at symbolic sizes: a KV cache [batch, heads, max_seq, head_dim] whose batch
// is symbolic holds the run's rows first, contiguously, exactly where they are at the bound, and
// each of them takes only its own update rows and position. So the bound's index arithmetic is
// right for the run's rows, and the kernel runs it on the first of them only: the element count
// (the update's in place, the result's otherwise) is its size parameter, bounding the grid-stride
// loop, and the grid is computed from it at launch (SymWork). Rows past the run are not touched;
// in place (Kernel.InPlace) the result stays the operand's memory.

// updateEnd is the update template's hook: for a static kernel, its element count units as an
// immediate and no work; for a symbolic one (Kernel.Rows: the bound's rows), the register of its
// size parameter and the SymWork setting the grid from it.
func updateEnd(k Kernel, b *builder, args *[]Arg, units int) (string, *SymWork, error) {
	if !k.Symbolic {
		return imm(units), nil, nil
	}
	if k.Rows <= 0 {
		return "", nil, fmt.Errorf("an update_slice at symbolic sizes needs its row count (the cache's symbolic batch)")
	}
	n, scale, err := symSize(k, b, args, units, "element count")
	if err != nil {
		return "", nil, err
	}
	return n, &SymWork{Vector: 1, Block: loopBlock, MaxBlocks: maxLoopBlocks, Scale: scale}, nil
}
