package ptx

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
)

// The fp8 GEMM: a dot_general over fp8 operands (f8e4m3, f8e5m2, either on either side) that
// the passes keep in fp8 on sm_89/sm_90 (passes/fp8.go) runs the tensor-core matmul template
// (mma.go) on mma.sync.aligned.m16n8k32.row.col.f32.{e4m3,e5m2}.{e4m3,e5m2}.f32 (PTX ISA 8.4):
// the operands stay one byte per element from global memory to the fragments, half the bytes of
// the f16 GEMM sm_80 runs on their casts, and the f32 accumulators are rounded to the dot's f16
// result in the epilogue, after which the fused elementwise tail (per-tensor or per-row scales)
// runs as in every GEMM.
//
// The 8-bit fragments are the 16-bit ones in bytes (PTX ISA, "mma.m16n8k32"): lane (g, t) holds
// in A's register j the bytes of row g (+8 for odd j), k 4t…4t+3 (+16 for j ≥ 2), and in B's
// register j those of column g, k 4t…4t+3 (+16 for j = 1). A k step is 64 bytes as for 16-bit
// operands; an operand stored k-contiguous loads its fragments with ldmatrix (an 8×8 matrix of
// b16 is 8 rows of 16 bytes, lane (g, t) receiving bytes 4t…4t+3 of row g: the fp8 fragment),
// one stored [k][free] with four ld.shared.u8 per register (ldmatrix.trans moves 16-bit
// elements; bytes need a gather), packed by prmt, from a tile padded against bank conflicts
// (fp8RowPad).

// fp8RowPad pads an fp8 [k][free] tile after every 8 k rows. A gather's request reads k rows
// 4t (+i) of columns g of the warp's lanes: 8 words, which rows of 16-byte multiples (for
// cp.async) put 0 or 16 banks apart for the 4 values of t, so t and t+2 meet in a bank. 16 bytes
// more per 8 rows put them 0, 16, 4 and 20 banks apart: the 8 words in 8 banks.
const fp8RowPad = 16

// rowAt is the byte offset of k row k (a multiple of 8, or below 8) of a side stored [k][free]
// with eb-byte elements.
func (sd *mmaSide) rowAt(k, eb int) int { return eb*k*sd.rowH + sd.rowPad*(k/8) }

// mmaShape is the tensor-core shape of the dot's operand dtypes.
func (mm *matmul) mmaShape() mmaShape {
	a, b := mm.dot.Args[0].Type.DType, mm.dot.Args[1].Type.DType
	if a.IsFP8() {
		return mmaShape{1, 64, 16, 32, "mma.sync.aligned.m16n8k32.row.col.f32." + fp8Kind(a) + "." + fp8Kind(b) + ".f32"}
	}
	return mmaShapeOf(a)
}

// fp8Kind is the mma type of fp8 dtype d.
func fp8Kind(d ir.DType) string {
	if d == ir.F8E5M2 {
		return "e5m2"
	}
	return "e4m3"
}

// gatherFP8 loads register r with the bytes at base+off and the next three rows of rowH bytes
// (k rows of a [k][free] tile), the first in the low byte.
func (mm *matmul) gatherFP8(r, base string, off, rowH int) {
	b := mm.e.b
	var x [4]string
	for i := range x {
		x[i] = b.reg(rU32)
		b.ins("ld.shared.u8", x[i], fmt.Sprintf("[%s+%d]", base, off+i*rowH))
	}
	lo, hi := b.reg(rU32), b.reg(rU32)
	b.ins("prmt.b32", lo, x[0], x[1], "0x0040") // bytes x0.0, x1.0
	b.ins("prmt.b32", hi, x[2], x[3], "0x0040")
	b.ins("prmt.b32", r, lo, hi, "0x5410") // lo.0, lo.1, hi.0, hi.1
}

// fp8Dot reports whether dot is a dot_general over fp8 operands (the fp8 GEMM).
func fp8Dot(v *ir.Value) bool {
	return v.Op == "dot_general" && len(v.Args) == 2 && v.Args[0].Type.DType.IsFP8() && v.Args[1].Type.DType.IsFP8()
}
