package ptx

import "fmt"

// The GEMM templates (FFMA and mma.sync, dot_general and conv2d) at symbolic sizes: the kernel's
// rows are the product's M side (a dot's left free dims, a conv2d's images), so M at the run's
// sizes is a parameter that bounds the grid's y (tiles of mmBM rows) and every edge check of M;
// the code is otherwise the bound's. The left operand is read directly (no view), so its first
// M rows at the run's sizes are those at the bound.

// symbolic declares a symbolic kernel's M parameter and returns how its grid follows; nothing for
// a static kernel.
func (mm *matmul) symbolic(k Kernel, b *builder, args *[]Arg, useMMA bool) (*SymWork, error) {
	if !k.Symbolic {
		return nil, nil
	}
	switch {
	case len(mm.batchShape) > 0 && mm.conv == nil:
		return nil, fmt.Errorf("a batched GEMM does not run at symbolic sizes yet")
	case mm.lhs.view != nil:
		return nil, fmt.Errorf("a GEMM whose left operand is read through a view does not run at symbolic sizes yet")
	case mm.conv != nil && mm.conv.pool != nil:
		return nil, fmt.Errorf("a conv2d with a fused pooling does not run at symbolic sizes yet")
	}
	m, w, err := symRows(k, b, args, mm.M, mmBM, 1, ceilDiv(mm.M, mmBM))
	mm.symM = m
	return w, err
}

// freeBelow is the bound a free coordinate x is compared with (x < bound) to lie below
// size − d: on the M side (m) of a symbolic kernel, M's parameter less d; else the immediate.
func (mm *matmul) freeBelow(m bool, size, d int) string {
	if !m || mm.symM == "" {
		return imm(size - d)
	}
	return mm.a.sub(mm.symM, imm(d))
}
