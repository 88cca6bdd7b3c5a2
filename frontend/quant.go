package frontend

import "github.com/gcomp/gcomp/ir"

// Quant describes weight-only quantization for Dequantize: Bits (4 or 8) per value, Group
// consecutive values along Axis sharing a scale and zero point (Group = the axis's size is
// per-channel). docs/ops.md's dequantize row gives the layout.
type Quant struct {
	Bits, Group, Axis int
	// Permuted stores a linear layer's input channels in another order (GPTQ's act-order, sorted
	// by group so that groups are contiguous runs): WithQuantizedParams then also declares
	// NAME_perm (i32 [K]), the stored column j being input channel perm[j], and Linear gathers
	// its input by perm before the product (actorder.go).
	Permuted bool
}

// Dequantize is the dequantize op: w = (q − zero)·scale in scale's dtype, q being i8/u8 values
// (Bits 8) or u8 bytes of two 4-bit values, low nibble first (Bits 4). zero may be nil: 0 for
// 8 bits, 8 for 4 (symmetric). A linear layer's weight is q[N, K/per] with Axis 1, so
// Linear(x, Dequantize(q, s, z, qt), b) is a product the GEMV template reads packed.
func Dequantize(q, scale, zero *Tensor, qt Quant) *Tensor {
	s := q.state()
	args := []*Tensor{q, scale}
	if zero != nil {
		args = append(args, zero)
	}
	return s.op("dequantize", ir.Attrs{"bits": qt.Bits, "group": qt.Group, "axis": qt.Axis}, args...)
}
