package plan

import (
	"github.com/gcomp/gcomp/codegen/qmma"
	"github.com/gcomp/gcomp/ir"
)

// QuantizedMMA reports whether kernel k is a tensor-core GEMM over a quantized weight (its
// plan's MMA.Quant describes the weight's side).
func QuantizedMMA(k Kernel) bool {
	for _, v := range live(k.Graph) {
		if _, ok := qmma.Fits(v); ok { // a dot_general whose weight qmma takes
			return true
		}
	}
	return false
}

// MMAQuant is the quantized B side of a tensor-core GEMM (codegen/ptx's mma_dequant.go): each
// k step copies KB bytes of each of the tile's rows of q (Sides[1]: Chunk bytes per copy,
// PerRow copies to a row, copy i of a thread DF[i] rows past its first) into rows of RowB
// bytes, and the B fragments are dequantized from them in registers: (u − zero)·scale in f32
// rounded to the 16-bit dtype, or with Halves in f16x2 registers.
type MMAQuant struct {
	DQ       *ir.Value // the dequantize (its args: q, scale[, zero])
	Bits     int       // 4 or 8
	Group    int       // k per group (K: one group per row)
	K        int       // the weight's K, in elements
	KB, RowB int
	Halves   bool
}
