package lm

import (
	"github.com/gcomp/gcomp/checkpoint"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// quantizedWeight turns a quantized linear layer of a checkpoint (GPTQ, AWQ) into the program's
// weight. For now it dequantizes at load, to the f32 [out, in] weight the programs' matmuls read:
// the weights are quantized on disk, not yet on the device. This is the one seam a fused
// dequantize-in-GEMV op replaces (keeping the packed integers and scales as the parameters).
func quantizedWeight(w *checkpoint.Weight) (*tensor.Tensor, error) {
	l, err := w.Layer()
	if err != nil {
		return nil, err
	}
	t := tensor.Empty(ir.T(ir.F32, l.N, l.K))
	for i, v := range l.Dequantize() {
		t.F[i] = float64(v)
	}
	return t, nil
}
